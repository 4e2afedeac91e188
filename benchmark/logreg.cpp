// LR: logistic regression over an N x D feature matrix (issue 15, doc/log/plan-shapes.md 2.3),
// value and gradient of
//
//   L(w) = mean(softplus(z) - y * z),  z = sum(X * w, axis<1>)  (z = X w)
//   dL/dw = X^T (sigmoid(z) - y) / N
//
// X a constant N x D matrix (D = 32, N the size argument), y a constant N-vector of 0/1 labels,
// w the D weights; double. tad runs one loop over X's rows: per block of SIMD-width rows, the W
// dot products (forward sweeps), the loss and dz for the block in one batch, then the W rows'
// gradient terms (backward sweeps) while the rows are in L1.
// Baselines (benchmark/baselines.hpp's conventions), all computing value and gradient
// analytically:
//   scalar  one pass, one row at a time: dot, one exp for softplus and sigmoid, axpy;
//   xsimd   one pass in row blocks, as tad: W dots (two accumulators each), the block's loss and
//           dz in one batch (one exp: softplus = log1p(e) + max(z, 0), sigmoid from e), W axpys;
//   gemv    two passes in xsimd, as a BLAS user writes it: z = X w into a buffer, the loss and
//           dz over z in batches, then g = X^T dz (X read twice).
// Ratios: benchmark/processes.py (LR); results: doc/log/benchmarks.md ("LR").
#include "logreg.hpp"

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

// The data and tad's side are shared with bench.torch (benchmark/logreg.hpp).
using bench::lr::features, bench::lr::lr_expression, bench::lr::lr_problem;

// ---- baselines ------------------------------------------------------------------------------

double lr_scalar(const lr_problem& pr, double* g) {
  const std::size_t d = pr.ws.size();
  const double* x = pr.xs.data();
  const double* w = pr.ws.data();
  const double inv = 1.0 / static_cast<double>(pr.rows);
  for (std::size_t j = 0; j < d; ++j) g[j] = 0;
  double loss = 0;
  for (std::size_t r = 0; r < pr.rows; ++r, x += d) {
    double z = 0;
    for (std::size_t j = 0; j < d; ++j) z += x[j] * w[j];
    const double e = std::exp(-std::abs(z));
    loss += std::log1p(e) + std::max(z, 0.0) - pr.ys[r] * z;
    const double dz = ((z >= 0 ? 1.0 : e) / (1.0 + e) - pr.ys[r]) * inv;
    for (std::size_t j = 0; j < d; ++j) g[j] += dz * x[j];
  }
  return loss * inv;
}

using B = xsimd::batch<double>;
constexpr std::size_t W = B::size;

/// Row r's dot product with w: two batch accumulators, a batch, then scalars.
inline double dot_row(const double* x, const double* w, std::size_t d) {
  B a0(0.0), a1(0.0);
  std::size_t j = 0;
  for (; j + 2 * W <= d; j += 2 * W) {
    a0 = xsimd::fma(B::load_unaligned(x + j), B::load_unaligned(w + j), a0);
    a1 = xsimd::fma(B::load_unaligned(x + j + W), B::load_unaligned(w + j + W), a1);
  }
  for (; j + W <= d; j += W) a0 = xsimd::fma(B::load_unaligned(x + j), B::load_unaligned(w + j), a0);
  double t = 0;
  for (; j < d; ++j) t += x[j] * w[j];
  return xsimd::hadd(a0 + a1) + t;
}

/// g += dz * row.
inline void axpy_row(double dz, const double* x, double* g, std::size_t d) {
  const B v(dz);
  std::size_t j = 0;
  for (; j + W <= d; j += W) xsimd::fma(v, B::load_unaligned(x + j), B::load_unaligned(g + j)).store_unaligned(g + j);
  for (; j < d; ++j) g[j] += dz * x[j];
}

/// The loss terms and dz of a batch of logits z with labels y: one exp.
inline B loss_and_dz(const B& z, const B& y, const B& inv, B& dz) {
  const B e = xsimd::exp(-xsimd::abs(z));
  const B sig = xsimd::select(z >= B(0.0), B(1.0), e) / (B(1.0) + e);
  dz = (sig - y) * inv;
  return xsimd::log1p(e) + xsimd::max(z, B(0.0)) - y * z;
}

double lr_xsimd(const lr_problem& pr, double* g) {
  const std::size_t d = pr.ws.size();
  const double* x = pr.xs.data();
  const double* w = pr.ws.data();
  const double* y = pr.ys.data();
  const double invs = 1.0 / static_cast<double>(pr.rows);
  const B inv(invs);
  for (std::size_t j = 0; j < d; ++j) g[j] = 0;
  B loss(0.0);
  alignas(64) double zs[W];
  alignas(64) double dzs[W];
  std::size_t r = 0;
  for (; r + W <= pr.rows; r += W) {
    for (std::size_t k = 0; k < W; ++k) zs[k] = dot_row(x + (r + k) * d, w, d);
    B dz;
    loss += loss_and_dz(B::load_aligned(zs), B::load_unaligned(y + r), inv, dz);
    dz.store_aligned(dzs);
    for (std::size_t k = 0; k < W; ++k) axpy_row(dzs[k], x + (r + k) * d, g, d);
  }
  double tail = 0;
  for (; r < pr.rows; ++r) {
    const double z = dot_row(x + r * d, w, d);
    const double e = std::exp(-std::abs(z));
    tail += std::log1p(e) + std::max(z, 0.0) - y[r] * z;
    axpy_row(((z >= 0 ? 1.0 : e) / (1.0 + e) - y[r]) * invs, x + r * d, g, d);
  }
  return (xsimd::hadd(loss) + tail) * invs;
}

/// Two passes: z = X w, then the loss and dz over z, then g = X^T dz. zbuf holds N doubles.
double lr_gemv(const lr_problem& pr, double* g, double* zbuf) {
  const std::size_t d = pr.ws.size(), n = pr.rows;
  const double* x = pr.xs.data();
  const double* w = pr.ws.data();
  const double* y = pr.ys.data();
  const double invs = 1.0 / static_cast<double>(n);
  const B inv(invs);
  for (std::size_t r = 0; r < n; ++r) zbuf[r] = dot_row(x + r * d, w, d);
  B loss(0.0);
  std::size_t r = 0;
  for (; r + W <= n; r += W) {
    B dz;
    loss += loss_and_dz(B::load_unaligned(zbuf + r), B::load_unaligned(y + r), inv, dz);
    dz.store_unaligned(zbuf + r);
  }
  double tail = 0;
  for (; r < n; ++r) {
    const double z = zbuf[r];
    const double e = std::exp(-std::abs(z));
    tail += std::log1p(e) + std::max(z, 0.0) - y[r] * z;
    zbuf[r] = ((z >= 0 ? 1.0 : e) / (1.0 + e) - y[r]) * invs;
  }
  for (std::size_t j = 0; j < d; ++j) g[j] = 0;
  for (r = 0; r < n; ++r) axpy_row(zbuf[r], x + r * d, g, d);
  return (xsimd::hadd(loss) + tail) * invs;
}

// ---- tad ------------------------------------------------------------------------------------

/// tad's value and gradient must equal every baseline's before anything is timed.
void lr_check(std::size_t n) {
  bench::check_once("LR/" + std::to_string(n), [&] {
    const lr_problem pr(n);
    auto [w, L] = lr_expression(pr);
    std::vector<double> g(features), zbuf(n);
    const double v = tad::grad_into(L, tad::wrt(w, std::span<double>(g)));
    for (const char* name : {"scalar", "xsimd", "gemv"}) {
      std::vector<double> bg(features);
      const std::string s = name;
      const double bv = s == "scalar" ? lr_scalar(pr, bg.data()) : s == "xsimd" ? lr_xsimd(pr, bg.data())
                                                                               : lr_gemv(pr, bg.data(), zbuf.data());
      const std::string m = "LR (tad vs " + s + ") ";
      bench::expect_close(m + "value", v, bv, 1e-9);
      bench::expect_close<double>(m + "d/dw", g, bg, 1e-9);
    }
  });
}

void LR_tad(benchmark::State& state) {
  lr_check(static_cast<std::size_t>(state.range(0)));
  bench::lr::tad_loop(state);
}

template <class F>
void lr_baseline(benchmark::State& state, F f) {
  const auto n = static_cast<std::size_t>(state.range(0));
  lr_check(n);
  const lr_problem pr(n);
  std::vector<double> g(features), zbuf(n);
  for (auto _ : state) {
    double v = f(pr, g.data(), zbuf.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n * features));
}

void LR_xsimd(benchmark::State& s) {
  lr_baseline(s, [](const lr_problem& pr, double* g, double*) { return lr_xsimd(pr, g); });
}
void LR_scalar(benchmark::State& s) {
  lr_baseline(s, [](const lr_problem& pr, double* g, double*) { return lr_scalar(pr, g); });
}
void LR_gemv(benchmark::State& s) { lr_baseline(s, lr_gemv); }

void lr_sizes(benchmark::internal::Benchmark* b) { b->Arg(1000)->Arg(100000)->Arg(1000000); }

}  // namespace

BENCHMARK(LR_tad)->Apply(lr_sizes);
BENCHMARK(LR_xsimd)->Apply(lr_sizes);
BENCHMARK(LR_gemv)->Apply(lr_sizes);
BENCHMARK(LR_scalar)->Apply(lr_sizes);

BENCHMARK_MAIN();
