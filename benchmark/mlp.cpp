// An MLP training step's gradient (issue 16): batch 256, 64 -> 256 (tanh) -> 10, softmax
// cross-entropy over class labels, value and every parameter's gradient. tad: one expression,
// evaluated by a tad::program (Eigen GEMMs, tad's loops around them). Baseline in the same
// binary: the same forward and backward written by hand with Eigen (the GEMMs tad calls, the
// elementwise work as Eigen array expressions), as a user of Eigen would write it.
//
//   bench.mlp
//   benchmark/processes.py build/bench/benchmark/bench.mlp MLPf 256 --processes 8 --baseline eigen  (MLPd: double)
#include "mlp.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>

namespace {

// The data, tad's side, the baseline and the check are in benchmark/mlp.hpp (shared with
// bench.torch and bench.icount).
using bench::mlp::batch, bench::mlp::check, bench::mlp::data, bench::mlp::eigen_mlp, bench::mlp::tad_loop;

template <class T>
void mlp_tad(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "double" : "float", check<T>);
  tad_loop<T>(state);
}

template <class T>
void mlp_eigen(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "double" : "float", check<T>);
  data<T> d;
  eigen_mlp<T> e{d};
  for (auto _ : state) {
    T v = e.step();
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(batch));
}

}  // namespace

// Names as benchmark/processes.py expects: <workload>_<tad|eigen>/<batch>.
BENCHMARK(mlp_tad<float>)->Name("MLPf_tad")->Arg(256);
BENCHMARK(mlp_eigen<float>)->Name("MLPf_eigen")->Arg(256);
BENCHMARK(mlp_tad<double>)->Name("MLPd_tad")->Arg(256);
BENCHMARK(mlp_eigen<double>)->Name("MLPd_eigen")->Arg(256);

BENCHMARK_MAIN();
