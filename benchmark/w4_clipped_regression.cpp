// W4: clipped-gradient regression sum(square(clip_gradient(w * x + b, -0.1, 0.1) - y)),
// gradient w.r.t. the scalars w and b; x and y are constant arrays. tad against a scalar loop
// and an xsimd loop written here (the conventions of benchmark/baselines.hpp), in double (W4_*)
// and float (W4f_*). Ratios: benchmark/ratios.py; results: doc/log/benchmarks.md.
//
// The adjoint reaching the clip is r_i = 2 (w x_i + b - y_i); it is clipped to [-0.1, 0.1]
// (NaN stays NaN, as tad's clip_gradient), then dw = sum clip(r_i) x_i, db = sum clip(r_i).
// The value is the unclipped sum((w x_i + b - y_i)^2): clip_gradient passes its value through.
#include "harness.hpp"
#include "workloads.hpp"

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

using namespace bench::work;  // the workload (benchmark/workloads.hpp)


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
