// An RNN training step through tad::scan (issue 41): a batch of 32 sequences, T = 50, 16 -> 64
// (tanh) -> 10, softmax cross-entropy on the last carry; the value and every parameter's
// gradient. Baseline in the same binary: the same forward and BPTT by hand with Eigen.
// benchmark/rnn.hpp holds the data, tad's side, the baseline and the check.
//
//   bench.rnn
//   benchmark/processes.py build/bench/benchmark/bench.rnn RNNf 50 --processes 6 --baseline eigen  (RNNd: double)
//   benchmark/processes.py build/bench/benchmark/bench.rnn SCANd 64 --processes 6 --baseline scalar  (per-step cost)
//   benchmark/processes.py build/bench/benchmark/bench.rnn RNNf 50 --processes 6 --tad tadckpt --baseline tad  (checkpointing)
#include "rnn.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>

namespace {

using bench::rnn::batch, bench::rnn::check, bench::rnn::data, bench::rnn::eigen_rnn, bench::rnn::tad_loop;

template <class T>
void rnn_tad(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "double" : "float", check<T>);
  tad_loop<T>(state);
}

// Checkpointing (scan_options::sqrt_steps: every 8th carry of 50 kept, each block recomputed in
// the backward): the same gradients, bit for bit (test/scan/options.cpp), for less memory.
void rnn_tad_checkpointed(benchmark::State& state) {
  bench::check_once("float", check<float>);
  tad_loop<float>(state, tad::scan_options{.checkpoint = tad::scan_options::sqrt_steps});
}

template <class T>
void rnn_eigen(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "double" : "float", check<T>);
  data<T> d;
  eigen_rnn<T> e{d};
  for (auto _ : state) {
    T v = e.step();
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(batch));
}

template <class T>
void scan_tad(benchmark::State& state) {
  namespace tiny = bench::rnn::tiny;
  bench::check_once(sizeof(T) == 8 ? "tiny double" : "tiny float", tiny::check<T>);
  tiny::data<T> d;
  auto [loss, W, U, B] = tiny::tad_loss(d);
  const tad::program p(loss);
  for (auto _ : state) {
    T v = p.grad_into(tad::wrt(W, d.gw), tad::wrt(U, d.gu), tad::wrt(B, d.gb));
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
}

template <class T>
void scan_scalar(benchmark::State& state) {
  namespace tiny = bench::rnn::tiny;
  bench::check_once(sizeof(T) == 8 ? "tiny double" : "tiny float", tiny::check<T>);
  tiny::data<T> d;
  tiny::by_hand<T> e{d};
  for (auto _ : state) {
    T v = e.step();
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
}

}  // namespace

// Names as benchmark/processes.py expects: <workload>_<tad|eigen>/<steps>.
BENCHMARK(rnn_tad<float>)->Name("RNNf_tad")->Arg(50);
BENCHMARK(rnn_eigen<float>)->Name("RNNf_eigen")->Arg(50);
BENCHMARK(rnn_tad_checkpointed)->Name("RNNf_tadckpt")->Arg(50);
BENCHMARK(rnn_tad<double>)->Name("RNNd_tad")->Arg(50);
BENCHMARK(rnn_eigen<double>)->Name("RNNd_eigen")->Arg(50);

// The tiny scan (per-step cost): SCANd_tad / SCANd_scalar, 64 steps of 4 hidden units.
BENCHMARK(scan_tad<double>)->Name("SCANd_tad")->Arg(64);
BENCHMARK(scan_scalar<double>)->Name("SCANd_scalar")->Arg(64);

BENCHMARK_MAIN();
