// SMX: row-wise softmax as a matrix expression (issue 15), value and gradient of
//
//   L(X) = sum(G * softmax(X, axis<1>)),  dL/dX_rj = s_rj (G_rj - sum_j G_rj s_rj)
//
// X a 1,024 x N matrix variable (N the size argument: 100 and 1,000), values uniform in
// [-10, 10], G a constant matrix in [0, 1], double. tad runs one pass over the rows: per row the
// logsumexp's two forward sweeps (max, sum(exp(x - m))), the row's code exp(x - lse) with its
// gradient G * s, then the logsumexp's backward sweep with the row's adjoint -sum(G * s): three
// exponentials per element, no per-element value kept between the sweeps. Baselines, each
// computing value and gradient analytically:
//   scalar          max; e = exp(x - m) stored in g while summing; a = sum(G * e); then
//                   g = e / Z * (G - a / Z): one exp per element;
//   xsimd           the same in xsimd ("store");
//   xsimdrecompute  tad's algorithm by hand, one batch at a time: max; Z; a = sum(G * s) with
//                   s = exp(x - lse); then g = s * (G - a) with s computed again: three exps
//                   per element, as tad.
// Ratios: benchmark/processes.py (SMX); results: doc/log/benchmarks.md ("SMX").
#include "baselines.hpp"
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t rows = 1024;
using B = xsimd::batch<double>;
constexpr std::size_t W = B::size;

std::vector<double> smx_data(std::size_t cols) { return bench::uniform<double>(rows * cols, -10.0, 10.0, 43); }
std::vector<double> smx_weights(std::size_t cols) { return bench::uniform<double>(rows * cols, 0.0, 1.0, 44); }

using row_fn = double (*)(const double*, const double*, double*, std::size_t);

/// Scalar, one exponential per element.
double smx_scalar(const double* x, const double* G, double* g, std::size_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double z = 0, a = 0;
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = std::exp(x[i] - m);
    z += g[i];
    a += G[i] * g[i];
  }
  const double inv = 1.0 / z, v = a * inv;
  for (std::size_t i = 0; i < n; ++i) g[i] = g[i] * inv * (G[i] - v);
  return v;
}

/// xsimd, one exponential per element (stored in g between the sweeps).
double smx_xsimd_store(const double* x, const double* G, double* g, std::size_t n) {
  const double m = bench::detail::w3_max(x, n);
  const B vm(m);
  B z0(0.0), a0(0.0);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const B e = xsimd::exp(B::load_unaligned(x + i) - vm);
    e.store_unaligned(g + i);
    z0 = z0 + e;
    a0 = xsimd::fma(B::load_unaligned(G + i), e, a0);
  }
  double z = xsimd::hadd(z0), a = xsimd::hadd(a0);
  for (; i < n; ++i) {
    g[i] = std::exp(x[i] - m);
    z += g[i];
    a += G[i] * g[i];
  }
  const double inv = 1.0 / z, v = a * inv;
  const B vinv(inv), vv(v);
  i = 0;
  for (; i + W <= n; i += W)
    (B::load_unaligned(g + i) * vinv * (B::load_unaligned(G + i) - vv)).store_unaligned(g + i);
  for (; i < n; ++i) g[i] = g[i] * inv * (G[i] - v);
  return v;
}

/// xsimd without per-element storage: max; Z; a = sum(G * exp(x - lse)); g = s * (G - a).
double smx_xsimd_recompute(const double* x, const double* G, double* g, std::size_t n) {
  const double m = bench::detail::w3_max(x, n);
  B z0(0.0);
  std::size_t i = 0;
  for (; i + W <= n; i += W) z0 = z0 + xsimd::exp(B::load_unaligned(x + i) - B(m));
  double z = xsimd::hadd(z0);
  for (; i < n; ++i) z += std::exp(x[i] - m);
  const double lse = m + std::log(z);
  const B vl(lse);
  B a0(0.0);
  for (i = 0; i + W <= n; i += W) a0 = xsimd::fma(B::load_unaligned(G + i), xsimd::exp(B::load_unaligned(x + i) - vl), a0);
  double a = xsimd::hadd(a0);
  for (; i < n; ++i) a += G[i] * std::exp(x[i] - lse);
  const B va(a);
  for (i = 0; i + W <= n; i += W)
    (xsimd::exp(B::load_unaligned(x + i) - vl) * (B::load_unaligned(G + i) - va)).store_unaligned(g + i);
  for (; i < n; ++i) g[i] = std::exp(x[i] - lse) * (G[i] - a);
  return a;
}

double per_row(row_fn f, const double* x, const double* G, double* g, std::size_t cols) {
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) total += f(x + r * cols, G + r * cols, g + r * cols, cols);
  return total;
}

auto smx_expression(const std::vector<double>& xs, const std::vector<double>& gs, std::size_t cols) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::constant(gs.data(), rows, cols) * tad::softmax(X, tad::axis<1>));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}

/// tad's value and gradient must equal every baseline's before anything is timed.
void smx_check(std::size_t cols) {
  bench::check_once("SMX/" + std::to_string(cols), [&] {
    const auto xs = smx_data(cols);
    const auto gs = smx_weights(cols);
    auto [X, L] = smx_expression(xs, gs, cols);
    std::vector<double> gt(rows * cols);
    const double vt = tad::grad_into(L, tad::wrt(X, std::span<double>(gt)));
    constexpr double tol = bench::tolerance<double>::value;
    for (auto [name, f] : {std::pair<const char*, row_fn>{"scalar", smx_scalar},
                           {"xsimd (store)", smx_xsimd_store},
                           {"xsimd (recompute)", smx_xsimd_recompute}}) {
      std::vector<double> gb(rows * cols);
      const double vb = per_row(f, xs.data(), gs.data(), gb.data(), cols);
      const std::string w = std::string("SMX (tad vs ") + name + ") ";
      bench::expect_close(w + "value", vt, vb, tol);
      bench::expect_close<double>(w + "gradient", gt, gb, tol);  // entries of at most 1: absolute
    }
  });
}

void SMX_tad(benchmark::State& state) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  smx_check(cols);
  const auto xs = smx_data(cols);
  const auto gs = smx_weights(cols);
  auto [X, L] = smx_expression(xs, gs, cols);  // built once
  std::vector<double> g(rows * cols);
  for (auto _ : state) {
    double v = tad::grad_into(L, tad::wrt(X, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

void smx_baseline(benchmark::State& state, row_fn f) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  smx_check(cols);
  const auto xs = smx_data(cols);
  const auto gs = smx_weights(cols);
  std::vector<double> g(rows * cols);
  for (auto _ : state) {
    double v = per_row(f, xs.data(), gs.data(), g.data(), cols);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

void SMX_xsimd(benchmark::State& s) { smx_baseline(s, smx_xsimd_store); }
void SMX_xsimdrecompute(benchmark::State& s) { smx_baseline(s, smx_xsimd_recompute); }
void SMX_scalar(benchmark::State& s) { smx_baseline(s, smx_scalar); }

void smx_sizes(benchmark::internal::Benchmark* b) { b->Arg(100)->Arg(1000); }

}  // namespace

BENCHMARK(SMX_tad)->Apply(smx_sizes);
BENCHMARK(SMX_xsimd)->Apply(smx_sizes);
BENCHMARK(SMX_xsimdrecompute)->Apply(smx_sizes);
BENCHMARK(SMX_scalar)->Apply(smx_sizes);

BENCHMARK_MAIN();
