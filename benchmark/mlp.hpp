#pragma once
/// The MLP workload of issue 16 (doc/benchmarks.md "MLP"), shared by bench.mlp (against Eigen
/// by hand, benchmark/mlp.cpp), the opt-in bench.torch (against libtorch,
/// benchmark/torch/torch.cpp) and bench.icount (benchmark/icount/icount.cpp): batch 256,
/// 64 -> 256 (tanh) -> 10, mean softmax cross-entropy over class labels; the data, tad's
/// expression, the baseline by hand with Eigen, the check of tad against it and tad's timed
/// loop, so the binaries time and count the same code on the same data.
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <Eigen/Core>

#include <cmath>
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

// ---- the baseline ---------------------------------------------------------------------------

template <class T>
using rm = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using map = Eigen::Map<rm<T>>;
template <class T>
using cmap = Eigen::Map<const rm<T>>;

/// The hand-written forward and backward (buffers allocated once, outside the timed loop).
template <class T>
struct eigen_mlp {
  data<T>& d;
  rm<T> h{batch, d_hidden}, z{batch, d_out}, dh{batch, d_hidden};
  T step() {
    const cmap<T> x(d.x.data(), batch, d_in), w1(d.w1.data(), d_in, d_hidden), w2(d.w2.data(), d_hidden, d_out);
    const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> b1(d.b1.data(), d_hidden), b2(d.b2.data(), d_out);
    h.noalias() = x * w1;
    h = (h.rowwise() + b1).array().tanh().matrix();
    z.noalias() = h * w2;
    z.rowwise() += b2;
    T loss = 0;
    for (std::size_t i = 0; i < batch; ++i) {  // softmax cross-entropy per row, dZ in place
      auto row = z.row(static_cast<Eigen::Index>(i));
      const T m = row.maxCoeff();
      const T s = (row.array() - m).exp().sum();
      const auto label = static_cast<Eigen::Index>(d.labels[i]);
      loss += std::log(s) + m - row(label);
      row = ((row.array() - m).exp() / s).matrix() / T(batch);
      row(label) -= T(1) / T(batch);
    }
    map<T> g2(d.g2.data(), d_hidden, d_out), g1(d.g1.data(), d_in, d_hidden);
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> gb2(d.gb2.data(), d_out), gb1(d.gb1.data(), d_hidden);
    g2.noalias() = h.transpose() * z;
    gb2 = z.colwise().sum();
    dh.noalias() = z * w2.transpose();
    dh.array() *= T(1) - h.array().square();
    g1.noalias() = x.transpose() * dh;
    gb1 = dh.colwise().sum();
    return loss / T(batch);
  }
};

/// tad's value and gradients must equal the baseline's (aborts otherwise): bench.mlp checks once
/// per process before it times, bench.icount before it counts.
template <class T>
void check() {
  data<T> a, b;
  eigen_mlp<T> e{a};
  const T want = e.step();
  const T got = tad_step(b);
  const double tol = sizeof(T) == 8 ? 1e-10 : 1e-4;
  bench::expect_close("mlp loss", static_cast<double>(got), static_cast<double>(want), tol);
  bench::expect_close<T>("mlp dW1", b.g1, a.g1, tol);
  bench::expect_close<T>("mlp db1", b.gb1, a.gb1, tol);
  bench::expect_close<T>("mlp dW2", b.g2, a.g2, tol);
  bench::expect_close<T>("mlp db2", b.gb2, a.gb2, tol);
}

// ---- tad's timed loop -----------------------------------------------------------------------

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
