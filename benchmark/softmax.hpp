#pragma once
/// The SMX workload (benchmark/softmax.cpp: row-wise softmax, a 1,024 x N matrix), shared by
/// bench.softmax and bench.icount (benchmark/icount/icount.cpp): the data, tad's expression and
/// the hand-written baselines, so both binaries time and count the same code on the same data.
#include "baselines.hpp"
#include "harness.hpp"

#include <tad/tad.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace bench::smx {

inline constexpr std::size_t rows = 1024;
using B = xsimd::batch<double>;
inline constexpr std::size_t W = B::size;

/// X's values, uniform in [-10, 10], and G's, uniform in [0, 1] (rows x cols, row-major).
inline std::vector<double> smx_data(std::size_t cols) {
  return bench::uniform<double>(rows * cols, -10.0, 10.0, 43);
}
inline std::vector<double> smx_weights(std::size_t cols) {
  return bench::uniform<double>(rows * cols, 0.0, 1.0, 44);
}

using row_fn = double (*)(const double*, const double*, double*, std::size_t);

/// Scalar, one exponential per element.
inline double smx_scalar(const double* x, const double* G, double* g, std::size_t n) {
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
inline double smx_xsimd_store(const double* x, const double* G, double* g, std::size_t n) {
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
inline double smx_xsimd_recompute(const double* x, const double* G, double* g, std::size_t n) {
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

inline double per_row(row_fn f, const double* x, const double* G, double* g, std::size_t cols) {
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) total += f(x + r * cols, G + r * cols, g + r * cols, cols);
  return total;
}

inline auto smx_expression(const std::vector<double>& xs, const std::vector<double>& gs, std::size_t cols) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::constant(gs.data(), rows, cols) * tad::softmax(X, tad::axis<1>));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}

}  // namespace bench::smx
