// BC: vectors broadcast across a matrix's rows (issue 15, item 2), a per-feature affine fit:
//
//   L(s, o) = 0.5 * mean(square(X * s + o - Y))
//
// BCC: the same with a per-row offset, a column (`as_column(o)`, o of length N / D):
//
//   L(s, o) = 0.5 * mean(square(X * s + as_column(o) - Y)),  dL/do_i = 1 / K * sum_j r_ij
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
// baselines. BCC's baselines keep row i's sum of r in a register and store dL/do_i after the
// row, as tad's finish_row does. Ratios: benchmark/processes.py (BC, BCf, BCC, BCCf); results:
// doc/log/benchmarks.md ("BC").
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

/// The offset o: a row (one per feature, BC) or a column (one per row, BCC).
enum class offset { row, column };

template <class T, offset O = offset::row>
struct bc_problem {
  static constexpr bool column = O == offset::column;
  std::size_t rows;
  std::vector<T> xs, ys, ss, os;
  /// x uniform in [-1, 1], y = 0.8 x - 0.2 + N(0, 0.1) per feature, s in [0.5, 1.5], o in
  /// [-0.5, 0.5]: every residual and gradient is O(1).
  explicit bc_problem(std::size_t n)
      : rows(std::max<std::size_t>(n / features, 1)), xs(bench::uniform<T>(rows * features, -1.0, 1.0, 21)),
        ys(bench::normal<T>(rows * features, 0.0, 0.1, 22)), ss(bench::uniform<T>(features, 0.5, 1.5, 23)),
        os(bench::uniform<T>(column ? rows : features, -0.5, 0.5, 24)) {
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] += static_cast<T>(0.8 * static_cast<double>(xs[i]) - 0.2);
  }
};

// ---- baselines ------------------------------------------------------------------------------

/// Plain scalar loops; float accumulates the value in double (as W1's scalar float baseline).
template <class T, offset O>
T bc_scalar(const bc_problem<T, O>& pr, T* gs, T* go) {
  using A = std::conditional_t<sizeof(T) == 4, double, T>;
  constexpr bool column = O == offset::column;
  const std::size_t d = pr.ss.size();  // features, at run time (a constant made g++ warn about the empty tail loop)
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* s = pr.ss.data();
  const T* o = pr.os.data();
  const T inv = static_cast<T>(1.0 / static_cast<double>(pr.rows * d));
  for (std::size_t j = 0; j < d; ++j) gs[j] = T(0);
  if constexpr (!column) for (std::size_t j = 0; j < d; ++j) go[j] = T(0);
  A sr = 0;
  for (std::size_t i = 0; i < pr.rows; ++i, x += d, y += d) {
    T ro = 0;  // column: row i's sum of r
    for (std::size_t j = 0; j < d; ++j) {
      const T r = x[j] * s[j] + (column ? o[i] : o[j]) - y[j];
      sr += r * r;
      gs[j] += r * x[j];
      if constexpr (column) ro += r;
      else go[j] += r;
    }
    if constexpr (column) go[i] = ro * inv;
  }
  for (std::size_t j = 0; j < d; ++j) gs[j] *= inv;
  if constexpr (!column) for (std::size_t j = 0; j < d; ++j) go[j] *= inv;
  return static_cast<T>(0.5 * static_cast<double>(sr) / static_cast<double>(pr.rows * d));
}

/// xsimd: per row, unroll 2 over the columns with 2 accumulators for the value, a batch
/// tail, a scalar tail; the column sums live in gs and go (L1) across rows. Column: o[i] is a
/// splat per row, row i's sum of r two batch accumulators and a scalar, stored after the row.
template <class T, offset O>
T bc_xsimd(const bc_problem<T, O>& pr, T* gs, T* go) {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  constexpr bool column = O == offset::column;
  const std::size_t d = pr.ss.size();  // features, at run time (a constant made g++ warn about the empty tail loop)
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* s = pr.ss.data();
  const T* o = pr.os.data();
  const T inv = static_cast<T>(1.0 / static_cast<double>(pr.rows * d));
  for (std::size_t j = 0; j < d; ++j) gs[j] = T(0);
  if constexpr (!column) for (std::size_t j = 0; j < d; ++j) go[j] = T(0);
  B sr0(T(0)), sr1(T(0));
  T st = 0;
  for (std::size_t i = 0; i < pr.rows; ++i, x += d, y += d) {
    const B oi(column ? o[i] : T(0));
    B ro0(T(0)), ro1(T(0));
    T rt = 0;
    auto elem = [&](std::size_t k, B& sr, B& ro) {
      const B xv = B::load_unaligned(x + k);
      const B ov = column ? oi : B::load_unaligned(o + k);
      const B r = xsimd::fma(xv, B::load_unaligned(s + k), ov) - B::load_unaligned(y + k);
      sr = xsimd::fma(r, r, sr);
      xsimd::fma(r, xv, B::load_unaligned(gs + k)).store_unaligned(gs + k);
      if constexpr (column) ro = ro + r;
      else (B::load_unaligned(go + k) + r).store_unaligned(go + k);
    };
    std::size_t j = 0;
    for (; j + 2 * W <= d; j += 2 * W) {
      elem(j, sr0, ro0);
      elem(j + W, sr1, ro1);
    }
    for (; j + W <= d; j += W) elem(j, sr0, ro0);
    for (; j < d; ++j) {
      const T r = x[j] * s[j] + (column ? o[i] : o[j]) - y[j];
      st += r * r;
      gs[j] += r * x[j];
      if constexpr (column) rt += r;
      else go[j] += r;
    }
    if constexpr (column) go[i] = (xsimd::hadd(ro0 + ro1) + rt) * inv;
  }
  const B vinv(inv);
  std::size_t j = 0;
  for (; j + W <= d; j += W) {
    (B::load_unaligned(gs + j) * vinv).store_unaligned(gs + j);
    if constexpr (!column) (B::load_unaligned(go + j) * vinv).store_unaligned(go + j);
  }
  for (; j < d; ++j) {
    gs[j] *= inv;
    if constexpr (!column) go[j] *= inv;
  }
  return T(0.5) * (xsimd::hadd(sr0 + sr1) + st) * inv;
}

// ---- tad ------------------------------------------------------------------------------------

/// The expression over pr's data. Returns (s, o, e).
template <class T, offset O>
auto bc_expression(const bc_problem<T, O>& pr) {
  auto s = tad::var<"s">(pr.ss);
  auto o = tad::var<"o">(pr.os);
  auto X = tad::constant(pr.xs.data(), pr.rows, features);
  auto Y = tad::constant(pr.ys.data(), pr.rows, features);
  if constexpr (O == offset::column) {
    auto e = 0.5 * tad::mean(tad::square(X * s + tad::as_column(o) - Y));
    return std::tuple{s, o, e};
  } else {
    auto e = 0.5 * tad::mean(tad::square(X * s + o - Y));
    return std::tuple{s, o, e};
  }
}

template <class T, offset O>
using bc_fn = T (*)(const bc_problem<T, O>&, T*, T*);

/// tad's value and both gradients must equal both baselines' before anything is timed. The
/// column sums add N terms each: float's tolerance is the value's.
template <class T, offset O>
void bc_check(const char* workload, std::size_t n) {
  bench::check_once(std::string(workload) + "/" + std::to_string(n), [&] {
    const bc_problem<T, O> pr(n);
    auto [s, o, e] = bc_expression(pr);
    std::vector<T> gs(features), go(pr.os.size());
    const T v = tad::grad_into(e, tad::wrt(s, std::span<T>(gs)), tad::wrt(o, std::span<T>(go)));
    constexpr double tv = bench::tolerance<T>::value;
    for (auto [name, f] : {std::pair<const char*, bc_fn<T, O>>{"scalar", bc_scalar<T, O>}, {"xsimd", bc_xsimd<T, O>}}) {
      std::vector<T> bs(features), bo(pr.os.size());
      const T bv = f(pr, bs.data(), bo.data());
      const std::string m = std::string(workload) + " (tad vs " + name + ") ";
      bench::expect_close(m + "value", v, bv, tv);
      bench::expect_close<T>(m + "d/ds", gs, bs, tv);
      bench::expect_close<T>(m + "d/do", go, bo, tv);
    }
  });
}

template <class T, offset O>
void bc_tad(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bc_check<T, O>(workload, n);
  const bc_problem<T, O> pr(n);
  std::vector<T> gs(features), go(pr.os.size());
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

template <class T, offset O, bc_fn<T, O> F>
void bc_baseline(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bc_check<T, O>(workload, n);
  const bc_problem<T, O> pr(n);
  std::vector<T> gs(features), go(pr.os.size());
  for (auto _ : state) {
    T v = F(pr, gs.data(), go.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gs.data());
    benchmark::DoNotOptimize(go.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pr.rows * features));
}

constexpr offset R = offset::row, C = offset::column;
void BC_tad(benchmark::State& s) { bc_tad<double, R>(s, "BC"); }
void BC_xsimd(benchmark::State& s) { bc_baseline<double, R, bc_xsimd<double, R>>(s, "BC"); }
void BC_scalar(benchmark::State& s) { bc_baseline<double, R, bc_scalar<double, R>>(s, "BC"); }
void BCf_tad(benchmark::State& s) { bc_tad<float, R>(s, "BCf"); }
void BCf_xsimd(benchmark::State& s) { bc_baseline<float, R, bc_xsimd<float, R>>(s, "BCf"); }
void BCf_scalar(benchmark::State& s) { bc_baseline<float, R, bc_scalar<float, R>>(s, "BCf"); }
void BCC_tad(benchmark::State& s) { bc_tad<double, C>(s, "BCC"); }
void BCC_xsimd(benchmark::State& s) { bc_baseline<double, C, bc_xsimd<double, C>>(s, "BCC"); }
void BCC_scalar(benchmark::State& s) { bc_baseline<double, C, bc_scalar<double, C>>(s, "BCC"); }
void BCCf_tad(benchmark::State& s) { bc_tad<float, C>(s, "BCCf"); }
void BCCf_xsimd(benchmark::State& s) { bc_baseline<float, C, bc_xsimd<float, C>>(s, "BCCf"); }
void BCCf_scalar(benchmark::State& s) { bc_baseline<float, C, bc_scalar<float, C>>(s, "BCCf"); }

}  // namespace

BENCHMARK(BC_tad)->Apply(bench::sizes);
BENCHMARK(BC_xsimd)->Apply(bench::sizes);
BENCHMARK(BC_scalar)->Apply(bench::sizes);
BENCHMARK(BCf_tad)->Apply(bench::sizes);
BENCHMARK(BCf_xsimd)->Apply(bench::sizes);
BENCHMARK(BCf_scalar)->Apply(bench::sizes);
BENCHMARK(BCC_tad)->Apply(bench::sizes);
BENCHMARK(BCC_xsimd)->Apply(bench::sizes);
BENCHMARK(BCC_scalar)->Apply(bench::sizes);
BENCHMARK(BCCf_tad)->Apply(bench::sizes);
BENCHMARK(BCCf_xsimd)->Apply(bench::sizes);
BENCHMARK(BCCf_scalar)->Apply(bench::sizes);

BENCHMARK_MAIN();
