// LR: logistic regression over an N x D feature matrix (issue 15, doc/log/plan-shapes.md 2.3),
// value and gradient of
//
//   L(w) = mean(softplus(z) - y * z),  z = sum(X * w, axis<1>)  (z = X w)
//   dL/dw = X^T (sigmoid(z) - y) / N
//
// X a constant N x D matrix (D = 32, N the size argument), y a constant N-vector of 0/1 labels,
// w the D weights; double. tad runs one loop over X's rows: per block of SIMD-width rows, the W
// dot products (forward sweeps), the loss and dz for the block in one batch, then the W rows'
// gradient terms (backward sweeps) while the rows are in L1.
// Baselines (benchmark/logreg.hpp, in benchmark/baselines.hpp's conventions), all computing
// value and gradient analytically:
//   scalar  one pass, one row at a time: dot, one exp for softplus and sigmoid, axpy;
//   xsimd   one pass in row blocks, as tad: W dots (two accumulators each), the block's loss and
//           dz in one batch (one exp: softplus = log1p(e) + max(z, 0), sigmoid from e), W axpys;
//   gemv    two passes in xsimd, as a BLAS user writes it: z = X w into a buffer, the loss and
//           dz over z in batches, then g = X^T dz (X read twice).
// Ratios: benchmark/processes.py (LR); results: doc/log/benchmarks.md ("LR").
#include "logreg.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

// The data, tad's side and the baselines are in benchmark/logreg.hpp (shared with bench.torch
// and bench.icount).
using bench::lr::features, bench::lr::lr_gemv, bench::lr::lr_problem, bench::lr::lr_scalar, bench::lr::lr_xsimd;

/// tad's value and gradient must equal every baseline's before anything is timed.
void lr_check(std::size_t n) {
  bench::check_once("LR/" + std::to_string(n), [&] { bench::lr::check(n); });
}

void LR_tad(benchmark::State& state) {
  lr_check(static_cast<std::size_t>(state.range(0)));
  bench::lr::tad_loop(state);
}

template <class F>
void lr_baseline(benchmark::State& state, F f) {
  const auto n = static_cast<std::size_t>(state.range(0));
  lr_check(n);
  const lr_problem pr(n);
  std::vector<double> g(features), zbuf(n);
  for (auto _ : state) {
    double v = f(pr, g.data(), zbuf.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n * features));
}

void LR_xsimd(benchmark::State& s) {
  lr_baseline(s, [](const lr_problem& pr, double* g, double*) { return lr_xsimd(pr, g); });
}
void LR_scalar(benchmark::State& s) {
  lr_baseline(s, [](const lr_problem& pr, double* g, double*) { return lr_scalar(pr, g); });
}
void LR_gemv(benchmark::State& s) { lr_baseline(s, lr_gemv); }

void lr_sizes(benchmark::internal::Benchmark* b) { b->Arg(1000)->Arg(100000)->Arg(1000000); }

}  // namespace

BENCHMARK(LR_tad)->Apply(lr_sizes);
BENCHMARK(LR_xsimd)->Apply(lr_sizes);
BENCHMARK(LR_gemv)->Apply(lr_sizes);
BENCHMARK(LR_scalar)->Apply(lr_sizes);

BENCHMARK_MAIN();
