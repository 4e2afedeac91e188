#pragma once
/// The LR workload (doc/benchmarks.md "LR"), shared by bench.logreg (against hand-written
/// loops, benchmark/logreg.cpp), the opt-in bench.torch (against libtorch,
/// benchmark/torch/torch.cpp) and bench.icount (benchmark/icount/icount.cpp): the data, tad's
/// expression, the hand-written baselines, the check of tad against them and tad's timed loop,
/// so the binaries time and count the same code on the same data.
#include "harness.hpp"

#include <tad/tad.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace bench::lr {

inline constexpr std::size_t features = 32;

struct lr_problem {
  std::size_t rows;
  std::vector<double> xs, ys, ws;
  /// x uniform in [-1, 1], w in [-0.5, 0.5], labels from a noisy linear rule: z is O(1).
  explicit lr_problem(std::size_t n)
      : rows(n), xs(bench::uniform<double>(n * features, -1.0, 1.0, 31)), ys(n),
        ws(bench::uniform<double>(features, -0.5, 0.5, 32)) {
    const std::vector<double> noise = bench::normal<double>(n, 0.0, 0.5, 33);
    for (std::size_t r = 0; r < n; ++r) {
      double z = 0;
      for (std::size_t j = 0; j < features; ++j) z += xs[r * features + j] * (j % 3 == 0 ? 0.4 : -0.2);
      ys[r] = z + noise[r] > 0 ? 1.0 : 0.0;
    }
  }
};

/// The loss over pr's data. Returns (w, L).
inline auto lr_expression(const lr_problem& pr) {
  auto w = tad::var<"w">(pr.ws);
  auto X = tad::constant(pr.xs.data(), pr.rows, features);
  auto y = tad::constant(pr.ys);
  const auto z = tad::let<"z">(tad::sum(X * w, tad::axis<1>));
  auto L = tad::mean(tad::softplus(z) - y * z);
  static_assert(tad::passes_v<decltype(L), decltype(w)> == 1);
  return std::pair{w, L};
}

// ---- baselines ------------------------------------------------------------------------------

inline double lr_scalar(const lr_problem& pr, double* g) {
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
inline constexpr std::size_t W = B::size;

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

inline double lr_xsimd(const lr_problem& pr, double* g) {
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
inline double lr_gemv(const lr_problem& pr, double* g, double* zbuf) {
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

/// tad's value and gradient must equal every baseline's (aborts otherwise): bench.logreg checks
/// before it times, bench.icount before it counts.
inline void check(std::size_t n) {
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
}

// ---- tad's timed loop -----------------------------------------------------------------------

/// The timed loop of LR_tad at N = state.range(0): value and gradient per iteration.
inline void tad_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const lr_problem pr(n);
  std::vector<double> g(features);
  auto [w, L] = lr_expression(pr);
  for (auto _ : state) {
    double v = tad::grad_into(L, tad::wrt(w, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n * features));
}

}  // namespace bench::lr
