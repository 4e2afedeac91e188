// BC: vectors broadcast across a matrix's rows (issue 15, item 2), a per-feature affine fit:
//
//   L(s, o) = 0.5 * mean(square(X * s + o - Y))
//
// X, Y constant N x D matrices (D = 100 features, N = the size argument / D rows), s and o
// vectors of length D broadcast across the rows; the gradient w.r.t. s and o. In double (BC_*)
// and float (BCf_*). Analytically, with r_ij = x_ij s_j + o_j - y_ij and K = N D:
//   L        = 0.5 / K * sum r_ij^2
//   dL/ds_j  = 1 / K * sum_i r_ij x_ij
//   dL/do_j  = 1 / K * sum_i r_ij
// Baselines (the conventions of benchmark/baselines.hpp): a scalar loop and an xsimd loop,
// each one pass over the rows that adds row i's terms to the column sums (kept in the gradient
// buffers, which fit in L1), then one pass over the D columns that scales them by 1 / K. tad
// runs one fused row nest (every row: its SIMD loop over the columns). D = 100 is not a
// multiple of the SIMD width in float (AVX2: 8): every row has a scalar tail, as in the
// baselines. Ratios: benchmark/processes.py (BC, BCf); results: doc/benchmarks.md ("BC").
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t features = 100;

template <class T>
struct bc_problem {
  std::size_t rows;
  std::vector<T> xs, ys, ss, os;
  /// x uniform in [-1, 1], y = 0.8 x - 0.2 + N(0, 0.1) per feature, s in [0.5, 1.5], o in
  /// [-0.5, 0.5]: every residual and gradient is O(1).
  explicit bc_problem(std::size_t n)
      : rows(std::max<std::size_t>(n / features, 1)), xs(bench::uniform<T>(rows * features, -1.0, 1.0, 21)),
        ys(bench::normal<T>(rows * features, 0.0, 0.1, 22)), ss(bench::uniform<T>(features, 0.5, 1.5, 23)),
        os(bench::uniform<T>(features, -0.5, 0.5, 24)) {
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] += static_cast<T>(0.8 * static_cast<double>(xs[i]) - 0.2);
  }
};

// ---- baselines ------------------------------------------------------------------------------

/// Plain scalar loops; float accumulates the value in double (as W1's scalar float baseline).
template <class T>
T bc_scalar(const bc_problem<T>& pr, T* gs, T* go) {
  using A = std::conditional_t<sizeof(T) == 4, double, T>;
  const std::size_t d = pr.ss.size();  // features, at run time (a constant made g++ warn about the empty tail loop)
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* s = pr.ss.data();
  const T* o = pr.os.data();
  for (std::size_t j = 0; j < d; ++j) gs[j] = go[j] = T(0);
  A sr = 0;
  for (std::size_t i = 0; i < pr.rows; ++i, x += d, y += d) {
    for (std::size_t j = 0; j < d; ++j) {
      const T r = x[j] * s[j] + o[j] - y[j];
      sr += r * r;
      gs[j] += r * x[j];
      go[j] += r;
    }
  }
  const T inv = static_cast<T>(1.0 / static_cast<double>(pr.rows * d));
  for (std::size_t j = 0; j < d; ++j) gs[j] *= inv, go[j] *= inv;
  return static_cast<T>(0.5 * static_cast<double>(sr) / static_cast<double>(pr.rows * d));
}

/// xsimd: per row, unroll 2 over the columns with 2 accumulators for the value, a batch
/// tail, a scalar tail; the column sums live in gs and go (L1) across rows.
template <class T>
T bc_xsimd(const bc_problem<T>& pr, T* gs, T* go) {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  const std::size_t d = pr.ss.size();  // features, at run time (a constant made g++ warn about the empty tail loop)
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* s = pr.ss.data();
  const T* o = pr.os.data();
  for (std::size_t j = 0; j < d; ++j) gs[j] = go[j] = T(0);
  B sr0(T(0)), sr1(T(0));
  T st = 0;
  auto elem = [&](const T* xr, const T* yr, std::size_t k, B& sr) {
    const B xv = B::load_unaligned(xr + k);
    const B r = xsimd::fma(xv, B::load_unaligned(s + k), B::load_unaligned(o + k)) - B::load_unaligned(yr + k);
    sr = xsimd::fma(r, r, sr);
    xsimd::fma(r, xv, B::load_unaligned(gs + k)).store_unaligned(gs + k);
    (B::load_unaligned(go + k) + r).store_unaligned(go + k);
  };
  for (std::size_t i = 0; i < pr.rows; ++i, x += d, y += d) {
    std::size_t j = 0;
    for (; j + 2 * W <= d; j += 2 * W) {
      elem(x, y, j, sr0);
      elem(x, y, j + W, sr1);
    }
    for (; j + W <= d; j += W) elem(x, y, j, sr0);
    for (; j < d; ++j) {
      const T r = x[j] * s[j] + o[j] - y[j];
      st += r * r;
      gs[j] += r * x[j];
      go[j] += r;
    }
  }
  const T inv = static_cast<T>(1.0 / static_cast<double>(pr.rows * d));
  const B vinv(inv);
  std::size_t j = 0;
  for (; j + W <= d; j += W) {
    (B::load_unaligned(gs + j) * vinv).store_unaligned(gs + j);
    (B::load_unaligned(go + j) * vinv).store_unaligned(go + j);
  }
  for (; j < d; ++j) gs[j] *= inv, go[j] *= inv;
  return T(0.5) * (xsimd::hadd(sr0 + sr1) + st) * inv;
}

// ---- tad ------------------------------------------------------------------------------------

/// The expression over pr's data. Returns (s, o, e).
template <class T>
auto bc_expression(const bc_problem<T>& pr) {
  auto s = tad::var<"s">(pr.ss);
  auto o = tad::var<"o">(pr.os);
  auto X = tad::constant(pr.xs.data(), pr.rows, features);
  auto Y = tad::constant(pr.ys.data(), pr.rows, features);
  auto e = 0.5 * tad::mean(tad::square(X * s + o - Y));
  return std::tuple{s, o, e};
}

template <class T>
using bc_fn = T (*)(const bc_problem<T>&, T*, T*);

/// tad's value and both gradients must equal both baselines' before anything is timed. The
/// column sums add N terms each: float's tolerance is the value's.
template <class T>
void bc_check(const char* workload, std::size_t n) {
  bench::check_once(std::string(workload) + "/" + std::to_string(n), [&] {
    const bc_problem<T> pr(n);
    auto [s, o, e] = bc_expression(pr);
    std::vector<T> gs(features), go(features);
    const T v = tad::grad_into(e, tad::wrt(s, std::span<T>(gs)), tad::wrt(o, std::span<T>(go)));
    constexpr double tv = bench::tolerance<T>::value;
    for (auto [name, f] : {std::pair<const char*, bc_fn<T>>{"scalar", bc_scalar<T>}, {"xsimd", bc_xsimd<T>}}) {
      std::vector<T> bs(features), bo(features);
      const T bv = f(pr, bs.data(), bo.data());
      const std::string m = std::string(workload) + " (tad vs " + name + ") ";
      bench::expect_close(m + "value", v, bv, tv);
      bench::expect_close<T>(m + "d/ds", gs, bs, tv);
      bench::expect_close<T>(m + "d/do", go, bo, tv);
    }
  });
}

template <class T>
void bc_tad(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bc_check<T>(workload, n);
  const bc_problem<T> pr(n);
  std::vector<T> gs(features), go(features);
  auto [s, o, e] = bc_expression(pr);  // built once; the leaves view pr
  for (auto _ : state) {
    T v = tad::grad_into(e, tad::wrt(s, std::span<T>(gs)), tad::wrt(o, std::span<T>(go)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gs.data());
    benchmark::DoNotOptimize(go.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pr.rows * features));
}

template <class T, bc_fn<T> F>
void bc_baseline(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bc_check<T>(workload, n);
  const bc_problem<T> pr(n);
  std::vector<T> gs(features), go(features);
  for (auto _ : state) {
    T v = F(pr, gs.data(), go.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gs.data());
    benchmark::DoNotOptimize(go.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pr.rows * features));
}

void BC_tad(benchmark::State& s) { bc_tad<double>(s, "BC"); }
void BC_xsimd(benchmark::State& s) { bc_baseline<double, bc_xsimd<double>>(s, "BC"); }
void BC_scalar(benchmark::State& s) { bc_baseline<double, bc_scalar<double>>(s, "BC"); }
void BCf_tad(benchmark::State& s) { bc_tad<float>(s, "BCf"); }
void BCf_xsimd(benchmark::State& s) { bc_baseline<float, bc_xsimd<float>>(s, "BCf"); }
void BCf_scalar(benchmark::State& s) { bc_baseline<float, bc_scalar<float>>(s, "BCf"); }

}  // namespace

BENCHMARK(BC_tad)->Apply(bench::sizes);
BENCHMARK(BC_xsimd)->Apply(bench::sizes);
BENCHMARK(BC_scalar)->Apply(bench::sizes);
BENCHMARK(BCf_tad)->Apply(bench::sizes);
BENCHMARK(BCf_xsimd)->Apply(bench::sizes);
BENCHMARK(BCf_scalar)->Apply(bench::sizes);

BENCHMARK_MAIN();
