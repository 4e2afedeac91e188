// W1: sum(exp(sin(x)) * x + square(tanh(x))), gradient w.r.t. the array x.
// tad, the scalar loop and the xsimd loop of benchmark/baselines.hpp, in double (W1_*) and
// float (W1f_*). Ratios: benchmark/ratios.py; results: doc/log/benchmarks.md.
#include "baselines.hpp"
#include "harness.hpp"
#include "workloads.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace bench::work;  // the workload (benchmark/workloads.hpp)


/// tad's value and gradient must equal both baselines' before anything is timed.
template <class T>
void w1_check(const char* workload, std::size_t n) {
  bench::check_once(std::string(workload) + "/" + std::to_string(n), [&] {
    const auto xs = w1_data<T>(n);
    std::vector<T> gt(n), gs(n), gv(n);
    auto [x, e] = w1_expression(xs);
    const T vt = tad::grad_into(e, tad::wrt(x, std::span<T>(gt)));
    const T vs = bench::w1_scalar(xs.data(), gs.data(), n);
    const T vv = bench::w1_xsimd(xs.data(), gv.data(), n);
    const std::string w = workload;
    constexpr double tv = bench::tolerance<T>::value, tg = bench::tolerance<T>::elementwise;
    bench::expect_close(w + " value: tad vs scalar", vt, vs, tv);
    bench::expect_close(w + " value: tad vs xsimd", vt, vv, tv);
    bench::expect_close<T>(w + " gradient: tad vs scalar", gt, gs, tg);
    bench::expect_close<T>(w + " gradient: tad vs xsimd", gt, gv, tg);
  });
}

template <class T>
void w1_tad(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w1_check<T>(workload, n);
  const auto xs = w1_data<T>(n);
  std::vector<T> g(n);
  auto [x, e] = w1_expression(xs);  // built once; the variable views xs
  for (auto _ : state) {
    T v = tad::grad_into(e, tad::wrt(x, std::span<T>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <class T, T (*F)(const T*, T*, std::size_t)>
void w1_baseline(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w1_check<T>(workload, n);
  const auto xs = w1_data<T>(n);
  std::vector<T> g(n);
  for (auto _ : state) {
    T v = F(xs.data(), g.data(), n);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void W1_tad(benchmark::State& s) { w1_tad<double>(s, "W1"); }
void W1_xsimd(benchmark::State& s) { w1_baseline<double, bench::w1_xsimd<double>>(s, "W1"); }
void W1_scalar(benchmark::State& s) { w1_baseline<double, bench::w1_scalar<double>>(s, "W1"); }
void W1f_tad(benchmark::State& s) { w1_tad<float>(s, "W1f"); }
void W1f_xsimd(benchmark::State& s) { w1_baseline<float, bench::w1_xsimd<float>>(s, "W1f"); }
void W1f_scalar(benchmark::State& s) { w1_baseline<float, bench::w1_scalar<float>>(s, "W1f"); }

}  // namespace

BENCHMARK(W1_tad)->Apply(bench::sizes);
BENCHMARK(W1_xsimd)->Apply(bench::sizes);
BENCHMARK(W1_scalar)->Apply(bench::sizes);
BENCHMARK(W1f_tad)->Apply(bench::sizes);
BENCHMARK(W1f_xsimd)->Apply(bench::sizes);
BENCHMARK(W1f_scalar)->Apply(bench::sizes);

BENCHMARK_MAIN();
