// W3: logsumexp(x), gradient w.r.t. the array x (the softmax). tad against the scalar loop and
// the fastest xsimd version of benchmark/baselines.hpp (W3_xsimd); the other stable xsimd
// versions run too (W3_xsimdrecompute, W3_xsimdonline) so doc/benchmarks.md can say which is
// fastest and why.
#include "baselines.hpp"
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<double> w3_data(std::size_t n) { return bench::uniform<double>(n, -10.0, 10.0, 3); }

using w3_fn = double (*)(const double*, double*, std::size_t);

void w3_check(std::size_t n) {
  bench::check_once("W3/" + std::to_string(n), [&] {
    const auto xs = w3_data(n);
    auto x = tad::var<"x">(xs);
    auto e = tad::logsumexp(x);
    std::vector<double> gt(n);
    const double vt = tad::grad_into(e, tad::wrt(x, std::span<double>(gt)));
    constexpr double tol = bench::tolerance<double>::value;
    for (auto [name, f] : {std::pair<const char*, w3_fn>{"scalar", bench::w3_scalar<double>},
                           {"xsimd (store)", bench::w3_xsimd_store<double>},
                           {"xsimd (recompute)", bench::w3_xsimd_recompute<double>},
                           {"xsimd (online)", bench::w3_xsimd_online<double>}}) {
      std::vector<double> gb(n);
      const double vb = f(xs.data(), gb.data(), n);
      const std::string w = std::string("W3 (tad vs ") + name + ") ";
      bench::expect_close(w + "value", vt, vb, tol);
      // Softmax entries are tiny (1/n on average): compare them relative to themselves.
      bench::expect_close<double>(w + "gradient", gt, gb, tol, 0);
    }
  });
}

void W3_tad(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w3_check(n);
  const auto xs = w3_data(n);
  auto x = tad::var<"x">(xs);
  auto e = tad::logsumexp(x);  // built once
  std::vector<double> g(n);
  for (auto _ : state) {
    double v = tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <w3_fn F>
void w3_baseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w3_check(n);
  const auto xs = w3_data(n);
  std::vector<double> g(n);
  for (auto _ : state) {
    double v = F(xs.data(), g.data(), n);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void W3_xsimd(benchmark::State& s) { w3_baseline<bench::w3_xsimd_store<double>>(s); }
void W3_scalar(benchmark::State& s) { w3_baseline<bench::w3_scalar<double>>(s); }
void W3_xsimdrecompute(benchmark::State& s) { w3_baseline<bench::w3_xsimd_recompute<double>>(s); }
void W3_xsimdonline(benchmark::State& s) { w3_baseline<bench::w3_xsimd_online<double>>(s); }

}  // namespace

BENCHMARK(W3_tad)->Apply(bench::sizes);
BENCHMARK(W3_xsimd)->Apply(bench::sizes);
BENCHMARK(W3_scalar)->Apply(bench::sizes);
BENCHMARK(W3_xsimdrecompute)->Apply(bench::sizes);
BENCHMARK(W3_xsimdonline)->Apply(bench::sizes);

BENCHMARK_MAIN();
