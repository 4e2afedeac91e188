// RLSE: row-wise logsumexp (issue 15), value and gradient of
//
//   L(X) = sum(logsumexp(X, axis<1>)),  dL/dX_rj = softmax(X_r)_j
//
// X a 1,024 x N matrix variable (N the size argument: 1,000 is the workload; 100 shows
// the cost per row), values uniform in [-10, 10], double. tad sweeps each row three times while
// it is in L1: the shift (the row's maximum), sum(exp(x - m)), then the gradient exp(x - lse).
// Baselines: W3's (benchmark/baselines.hpp) on each row, all computing value and gradient
// analytically:
//   scalar          max; exp(x - m) stored in g while summing; g *= 1/s (one exp per element);
//   xsimd           the same in xsimd ("store", W3's fastest);
//   xsimdrecompute  max; s = sum exp(x - m); g = exp(x - lse): two exps, tad's algorithm.
// Ratios: benchmark/processes.py (RLSE); results: doc/log/benchmarks.md ("RLSE").
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

constexpr std::size_t rows = 1024;

std::vector<double> rlse_data(std::size_t cols) { return bench::uniform<double>(rows * cols, -10.0, 10.0, 41); }

using row_fn = double (*)(const double*, double*, std::size_t);

/// A W3 baseline on each row.
double per_row(row_fn f, const double* x, double* g, std::size_t cols) {
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) total += f(x + r * cols, g + r * cols, cols);
  return total;
}

auto rlse_expression(const std::vector<double>& xs, std::size_t cols) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::logsumexp(X, tad::axis<1>));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}

/// tad's value and gradient must equal every baseline's before anything is timed.
void rlse_check(std::size_t cols) {
  bench::check_once("RLSE/" + std::to_string(cols), [&] {
    const auto xs = rlse_data(cols);
    auto [X, L] = rlse_expression(xs, cols);
    std::vector<double> gt(rows * cols);
    const double vt = tad::grad_into(L, tad::wrt(X, std::span<double>(gt)));
    constexpr double tol = bench::tolerance<double>::value;
    for (auto [name, f] : {std::pair<const char*, row_fn>{"scalar", bench::w3_scalar<double>},
                           {"xsimd (store)", bench::w3_xsimd_store<double>},
                           {"xsimd (recompute)", bench::w3_xsimd_recompute<double>}}) {
      std::vector<double> gb(rows * cols);
      const double vb = per_row(f, xs.data(), gb.data(), cols);
      const std::string w = std::string("RLSE (tad vs ") + name + ") ";
      bench::expect_close(w + "value", vt, vb, tol);
      bench::expect_close<double>(w + "gradient", gt, gb, tol, 0);  // softmax entries: relative
    }
  });
}

void RLSE_tad(benchmark::State& state) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  rlse_check(cols);
  const auto xs = rlse_data(cols);
  auto [X, L] = rlse_expression(xs, cols);  // built once
  std::vector<double> g(rows * cols);
  for (auto _ : state) {
    double v = tad::grad_into(L, tad::wrt(X, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

void rlse_baseline(benchmark::State& state, row_fn f) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  rlse_check(cols);
  const auto xs = rlse_data(cols);
  std::vector<double> g(rows * cols);
  for (auto _ : state) {
    double v = per_row(f, xs.data(), g.data(), cols);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

void RLSE_xsimd(benchmark::State& s) { rlse_baseline(s, bench::w3_xsimd_store<double>); }
void RLSE_xsimdrecompute(benchmark::State& s) { rlse_baseline(s, bench::w3_xsimd_recompute<double>); }
void RLSE_scalar(benchmark::State& s) { rlse_baseline(s, bench::w3_scalar<double>); }

void rlse_sizes(benchmark::internal::Benchmark* b) { b->Arg(100)->Arg(1000); }

}  // namespace

BENCHMARK(RLSE_tad)->Apply(rlse_sizes);
BENCHMARK(RLSE_xsimd)->Apply(rlse_sizes);
BENCHMARK(RLSE_xsimdrecompute)->Apply(rlse_sizes);
BENCHMARK(RLSE_scalar)->Apply(rlse_sizes);

BENCHMARK_MAIN();
