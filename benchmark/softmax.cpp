// SMX: row-wise softmax as a matrix expression (issue 15), value and gradient of
//
//   L(X) = sum(G * softmax(X, axis<1>)),  dL/dX_rj = s_rj (G_rj - sum_j G_rj s_rj)
//
// X a 1,024 x N matrix variable (N the size argument: 100 and 1,000), values uniform in
// [-10, 10], G a constant matrix in [0, 1], double. tad runs one pass over the rows: per row the
// logsumexp's two forward sweeps (max, sum(exp(x - m))), the row's code exp(x - lse) with its
// gradient G * s, then the logsumexp's backward sweep with the row's adjoint -sum(G * s): three
// exponentials per element, no per-element value kept between the sweeps. Baselines
// (benchmark/softmax.hpp), each computing value and gradient analytically:
//   scalar          max; e = exp(x - m) stored in g while summing; a = sum(G * e); then
//                   g = e / Z * (G - a / Z): one exp per element;
//   xsimd           the same in xsimd ("store");
//   xsimdrecompute  tad's algorithm by hand, one batch at a time: max; Z; a = sum(G * s) with
//                   s = exp(x - lse); then g = s * (G - a) with s computed again: three exps
//                   per element, as tad.
// Ratios: benchmark/processes.py (SMX); results: doc/log/benchmarks.md ("SMX").
#include "softmax.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

// The data, tad's side and the baselines are in benchmark/softmax.hpp (shared with bench.icount).
using bench::smx::per_row, bench::smx::row_fn, bench::smx::rows, bench::smx::smx_data, bench::smx::smx_expression,
    bench::smx::smx_scalar, bench::smx::smx_weights, bench::smx::smx_xsimd_recompute, bench::smx::smx_xsimd_store;

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
