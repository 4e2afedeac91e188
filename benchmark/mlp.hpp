#pragma once
/// The MLP workload of issue 16 (doc/benchmarks.md "MLP"), shared by bench.mlp (against Eigen
/// by hand, benchmark/mlp.cpp) and the opt-in bench.torch (against libtorch,
/// benchmark/torch/torch.cpp): batch 256, 64 -> 256 (tanh) -> 10, mean softmax cross-entropy
/// over class labels; the data, tad's expression and tad's timed loop, so both binaries time
/// the same tad code on the same data.
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace bench::mlp {

inline constexpr std::size_t batch = 256, d_in = 64, d_hidden = 256, d_out = 10;

/// Inputs (row-major), labels, and the four gradient buffers.
template <class T>
struct data {
  std::vector<T> x = bench::normal<T>(batch * d_in, 0, 1, 1);
  std::vector<T> w1 = bench::normal<T>(d_in * d_hidden, 0, 0.1, 2), b1 = bench::normal<T>(d_hidden, 0, 0.1, 3);
  std::vector<T> w2 = bench::normal<T>(d_hidden * d_out, 0, 0.1, 4), b2 = bench::normal<T>(d_out, 0, 0.1, 5);
  std::vector<int> labels = [] {
    std::vector<int> l(batch);
    for (std::size_t i = 0; i < batch; ++i) l[i] = static_cast<int>((i * 7) % d_out);
    return l;
  }();
  std::vector<T> g1 = std::vector<T>(d_in * d_hidden), gb1 = std::vector<T>(d_hidden);
  std::vector<T> g2 = std::vector<T>(d_hidden * d_out), gb2 = std::vector<T>(d_out);
};

/// tad's loss over d's data and its four variables: (loss, W1, b1, W2, b2).
template <class T>
auto tad_loss(data<T>& d) {
  const auto X = tad::constant(d.x.data(), batch, d_in);
  const auto W1 = tad::var<"W1">(d.w1.data(), d_in, d_hidden);
  const auto W2 = tad::var<"W2">(d.w2.data(), d_hidden, d_out);
  const auto B1 = tad::var<"b1">(d.b1);
  const auto B2 = tad::var<"b2">(d.b2);
  const auto h = tad::tanh(tad::matmul(X, W1) + B1);
  return std::tuple{tad::mean(tad::softmax_cross_entropy(tad::matmul(h, W2) + B2, d.labels)), W1, B1, W2, B2};
}

/// tad's value and gradients into d's buffers by a program built once.
template <class T>
T tad_step(data<T>& d) {
  auto [loss, W1, B1, W2, B2] = tad_loss(d);
  const tad::program p(loss);
  return p.grad_into(tad::wrt(W1, d.g1), tad::wrt(B1, d.gb1), tad::wrt(W2, d.g2), tad::wrt(B2, d.gb2));
}

/// The timed loop of MLP{f,d}_tad: value and the four gradients per iteration.
template <class T>
void tad_loop(benchmark::State& state) {
  data<T> d;
  auto [loss, W1, B1, W2, B2] = tad_loss(d);
  const tad::program p(loss);
  for (auto _ : state) {
    T v = p.grad_into(tad::wrt(W1, d.g1), tad::wrt(B1, d.gb1), tad::wrt(W2, d.g2), tad::wrt(B2, d.gb2));
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(batch));
}

}  // namespace bench::mlp
