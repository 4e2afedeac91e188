// W4: clipped-gradient regression sum(square(clip_gradient(w * x + b, -0.1, 0.1) - y)),
// gradient w.r.t. the scalars w and b; x and y are constant arrays. tad against a scalar loop
// and an xsimd loop written here (the conventions of benchmark/baselines.hpp), in double (W4_*)
// and float (W4f_*). Ratios: benchmark/ratios.py; results: doc/benchmarks.md.
//
// The adjoint reaching the clip is r_i = 2 (w x_i + b - y_i); it is clipped to [-0.1, 0.1]
// (NaN stays NaN, as tad's clip_gradient), then dw = sum clip(r_i) x_i, db = sum clip(r_i).
// The value is the unclipped sum((w x_i + b - y_i)^2): clip_gradient passes its value through.
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr double clip_lo = -0.1, clip_hi = 0.1;

template <class T>
struct w4_grads {
  T w;
  T b;
};

// ---- baselines ------------------------------------------------------------------------------

/// r clipped to [lo, hi], NaN staying NaN (std::min/max return their first argument when it
/// is NaN): the scalar form of `select(r < lo, lo, select(r > hi, hi, r))`.
template <class T>
inline T clip(T r, T lo, T hi) {
  return std::max(std::min(r, hi), lo);
}

/// W4, plain scalar loop. Float accumulates in double (as W1's scalar float baseline). The
/// clip bounds are run-time arguments, as they are in tad's expression: with the constants
/// -0.1, 0.1 compiled in, g++ 12 turns the clip into data-dependent branches (it knows
/// lo < hi, or specializes the conversion of a constant bound to double), mispredicted for
/// about half of the elements here.
template <class T>
T w4_scalar(const T* x, const T* y, T w, T b, T lo, T hi, w4_grads<T>& g, std::size_t n) {
  using A = std::conditional_t<sizeof(T) == 4, double, T>;
  A v = 0, dw = 0, db = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T d = w * x[i] + b - y[i];
    v += d * d;
    const T c = clip(d + d, lo, hi);
    dw += c * x[i];
    db += c;
  }
  g.w = static_cast<T>(dw);
  g.b = static_cast<T>(db);
  return static_cast<T>(v);
}

/// W4, xsimd: one fused loop, unroll 2 with 2 accumulators per sum, scalar tail.
template <class T>
T w4_xsimd(const T* x, const T* y, T w, T b, T lo, T hi, w4_grads<T>& g, std::size_t n) {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  const B vw(w), vb(b), vlo(lo), vhi(hi);
  B v0(T(0)), v1(T(0)), dw0(T(0)), dw1(T(0)), db0(T(0)), db1(T(0));
  auto elem = [&](std::size_t k, B& v, B& dw, B& db) {
    const B xv = B::load_unaligned(x + k);
    const B d = xsimd::fma(vw, xv, vb) - B::load_unaligned(y + k);
    v = xsimd::fma(d, d, v);
    const B r = d + d;
    const B c = xsimd::select(r < vlo, vlo, xsimd::select(r > vhi, vhi, r));
    dw = xsimd::fma(c, xv, dw);
    db = db + c;
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem(i, v0, dw0, db0);
    elem(i + W, v1, dw1, db1);
  }
  for (; i + W <= n; i += W) elem(i, v0, dw0, db0);
  T v = xsimd::hadd(v0 + v1), dw = xsimd::hadd(dw0 + dw1), db = xsimd::hadd(db0 + db1);
  for (; i < n; ++i) {
    const T d = w * x[i] + b - y[i];
    v += d * d;
    const T r = d + d;
    const T c = clip(r, lo, hi);
    dw += c * x[i];
    db += c;
  }
  g.w = dw;
  g.b = db;
  return v;
}

// ---- data and tad ---------------------------------------------------------------------------

/// x uniform in [-1, 1]; y = 0.75 x + 0.12 + N(0, 0.05). At w = 0.8, b = 0.1 the adjoints
/// r_i = 2 (w x_i + b - y_i) lie in about [-0.4, 0.4]: roughly half of them are clipped.
template <class T>
struct w4_problem {
  std::vector<T> xs, ys;
  T w = T(0.8), b = T(0.1);
  T lo = static_cast<T>(clip_lo), hi = static_cast<T>(clip_hi);  // the baselines' bounds
  explicit w4_problem(std::size_t n) : xs(bench::uniform<T>(n, -1.0, 1.0, 4)), ys(bench::normal<T>(n, 0.0, 0.05, 5)) {
    for (std::size_t i = 0; i < n; ++i) ys[i] += static_cast<T>(0.75 * static_cast<double>(xs[i]) + 0.12);
  }
};

/// The expression over p's data; w and b are bound by reference. Returns (w, b, e).
template <class T>
auto w4_expression(const w4_problem<T>& p) {
  auto w = tad::var<"w">(p.w);
  auto b = tad::var<"b">(p.b);
  auto x = tad::constant(p.xs);
  auto y = tad::constant(p.ys);
  auto e = tad::sum(tad::square(tad::clip_gradient(w * x + b, clip_lo, clip_hi) - y));
  return std::tuple{w, b, e};
}

template <class T>
using w4_fn = T (*)(const T*, const T*, T, T, T, T, w4_grads<T>&, std::size_t);

template <class T>
void w4_check(const char* workload, std::size_t n) {
  bench::check_once(std::string(workload) + "/" + std::to_string(n), [&] {
    const w4_problem<T> p(n);
    auto [w, b, e] = w4_expression(p);
    T gw = 0, gb = 0;
    const T v = tad::grad_into(e, tad::wrt(w, gw), tad::wrt(b, gb));
    // The gradients are sums over the elements, like the value. Double: 1e-9. Float: 1e-3 for
    // the value (bench::tolerance), 1e-2 for the gradients: each of the 16 float accumulators
    // of tad and of the xsimd loop adds 6 * 10^5 terms at N = 10^7, most of them the same
    // clip bound, into a partial sum whose rounding step is 10^-3 of them, and the error
    // builds up in one direction (1.1e-3 against the double sum of the scalar loop).
    constexpr double tol = bench::tolerance<T>::value, tolg = sizeof(T) == 8 ? tol : 1e-2;
    for (auto [name, f] : {std::pair<const char*, w4_fn<T>>{"scalar", w4_scalar<T>}, {"xsimd", w4_xsimd<T>}}) {
      w4_grads<T> g{};
      const T bv = f(p.xs.data(), p.ys.data(), p.w, p.b, p.lo, p.hi, g, n);
      const std::string s = std::string(workload) + " (tad vs " + name + ") ";
      bench::expect_close(s + "value", v, bv, tol);
      bench::expect_close(s + "d/dw", gw, g.w, tolg);
      bench::expect_close(s + "d/db", gb, g.b, tolg);
    }
  });
}

template <class T>
void w4_tad(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w4_check<T>(workload, n);
  const w4_problem<T> p(n);
  auto [w, b, e] = w4_expression(p);  // built once; the leaves view p
  T gw = 0, gb = 0;
  for (auto _ : state) {
    T v = tad::grad_into(e, tad::wrt(w, gw), tad::wrt(b, gb));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gw);
    benchmark::DoNotOptimize(gb);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <class T, w4_fn<T> F>
void w4_baseline(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w4_check<T>(workload, n);
  const w4_problem<T> p(n);
  w4_grads<T> g{};
  for (auto _ : state) {
    T v = F(p.xs.data(), p.ys.data(), p.w, p.b, p.lo, p.hi, g, n);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void W4_tad(benchmark::State& s) { w4_tad<double>(s, "W4"); }
void W4_xsimd(benchmark::State& s) { w4_baseline<double, w4_xsimd<double>>(s, "W4"); }
void W4_scalar(benchmark::State& s) { w4_baseline<double, w4_scalar<double>>(s, "W4"); }
void W4f_tad(benchmark::State& s) { w4_tad<float>(s, "W4f"); }
void W4f_xsimd(benchmark::State& s) { w4_baseline<float, w4_xsimd<float>>(s, "W4f"); }
void W4f_scalar(benchmark::State& s) { w4_baseline<float, w4_scalar<float>>(s, "W4f"); }

}  // namespace

BENCHMARK(W4_tad)->Apply(bench::sizes);
BENCHMARK(W4_xsimd)->Apply(bench::sizes);
BENCHMARK(W4_scalar)->Apply(bench::sizes);
BENCHMARK(W4f_tad)->Apply(bench::sizes);
BENCHMARK(W4f_xsimd)->Apply(bench::sizes);
BENCHMARK(W4f_scalar)->Apply(bench::sizes);

BENCHMARK_MAIN();
