// The fixed cost of each entry point (doc/benchmarks.md, "Fixed costs"): sum(square(x)) over 4
// doubles through tad::grad, grad_into, value, a tad::program's grad_into, vjp and vjp_into
// (of square(x)), and the hand-written function (FIXED_baseline), one call per iteration.
// benchmark/icount/icount.cpp counts the same calls' instructions.
#include "fixed_costs.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

void fixed(benchmark::State& state, const char* entry) {
  bench::work::fixed_problem p;
  bench::work::with_fixed_call(entry, p, [&](auto call) {
    for (auto _ : state) {
      benchmark::DoNotOptimize(p.xs.data());
      benchmark::DoNotOptimize(call());
      benchmark::ClobberMemory();
    }
  });
}

const bool registered = [] {
  for (const char* entry : bench::work::fixed_entries)
    benchmark::RegisterBenchmark((std::string("FIXED_") + entry).c_str(), fixed, entry);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
