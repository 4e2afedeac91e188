// The gradient of sum(square(A B - C)) with respect to A and B (N x N each), a GEMM-bound
// workload (issue 16: target at most 1.05x Eigen by hand). tad: a tad::program (one forward
// GEMM, the engine's pass over A B and C for the value and dY = 2 (A B - C), two backward
// GEMMs). Baseline in the same binary: the same three GEMMs and one Eigen array pass, by hand.
//
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 256 --processes 8 --baseline eigen
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 1024 --processes 4 --baseline eigen
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 4 --processes 6 --baseline eigen
#include "products.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

// The data, tad's side, the baseline and the check are in benchmark/products.hpp (shared with
// bench.icount).
using bench::sq::check, bench::sq::data, bench::sq::eigen_sq, bench::sq::tad_sq;

void sq_tad(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bench::check_once("SQ" + std::to_string(n), [&] { check(n); });
  data d{n};
  auto [loss, A, B] = tad_sq(d);
  const tad::program p(loss);
  for (auto _ : state) {
    float v = p.grad_into(tad::wrt(A, d.ga), tad::wrt(B, d.gb));
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n * n));
}

void sq_eigen(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  bench::check_once("SQ" + std::to_string(n), [&] { check(n); });
  data d{n};
  eigen_sq e{d};
  for (auto _ : state) {
    float v = e.step();
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n * n));
}

}  // namespace

// 4: three 4 x 4 x 4 products, which Eigen's `*` and a program both run coefficient by
// coefficient (rows + depth + cols < 20, decisions.md 50); 16: the GEMM kernel on tiny blocks.
BENCHMARK(sq_tad)->Name("SQ_tad")->Arg(4)->Arg(16)->Arg(256)->Arg(1024);
BENCHMARK(sq_eigen)->Name("SQ_eigen")->Arg(4)->Arg(16)->Arg(256)->Arg(1024);

BENCHMARK_MAIN();
