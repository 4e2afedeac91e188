#pragma once
/// The RNN workload of issue 41 (doc/benchmarks.md "RNN"): a batch of 32 sequences of T = 50
/// steps through a tanh recurrent cell `h_{t+1} = tanh(h_t W + x_t U + b)` (16 inputs, 64
/// hidden), then a linear head on the last carry, mean softmax cross-entropy over 10 classes;
/// the value and every parameter's gradient (W, U, b, V, c). tad: one expression with a
/// tad::scan, run by a tad::program. Baseline: the same forward and backpropagation through
/// time written by hand with Eigen (the GEMMs, the elementwise work as array expressions,
/// every carry kept), as a user of Eigen would write it. Shared by bench.rnn and bench.icount.
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace bench::rnn {

inline constexpr std::size_t batch = 32, steps = 50, d_in = 16, d_hidden = 64, d_out = 10;

template <class T>
struct data {
  std::vector<T> x = bench::normal<T>(steps * batch * d_in, 0, 1, 1);  // step t: rows t B .. t B + B - 1
  std::vector<T> h0 = std::vector<T>(batch * d_hidden);
  std::vector<T> w = bench::normal<T>(d_hidden * d_hidden, 0, 0.1, 2), u = bench::normal<T>(d_in * d_hidden, 0, 0.2, 3);
  std::vector<T> b = bench::normal<T>(d_hidden, 0, 0.1, 4);
  std::vector<T> v = bench::normal<T>(d_hidden * d_out, 0, 0.2, 5), c = bench::normal<T>(d_out, 0, 0.1, 6);
  std::vector<int> labels = [] {
    std::vector<int> l(batch);
    for (std::size_t i = 0; i < batch; ++i) l[i] = static_cast<int>((i * 7) % d_out);
    return l;
  }();
  std::vector<T> gw = std::vector<T>(d_hidden * d_hidden), gu = std::vector<T>(d_in * d_hidden),
                 gb = std::vector<T>(d_hidden), gv = std::vector<T>(d_hidden * d_out), gc = std::vector<T>(d_out);
};

/// tad's loss and its variables: (loss, W, U, b, V, c); `options`: the scan's (checkpointing).
template <class T>
auto tad_loss(data<T>& d, tad::scan_options options = {}) {
  const auto X = tad::constant(d.x.data(), steps * batch, d_in);
  const auto H0 = tad::constant(d.h0.data(), batch, d_hidden);
  const auto W = tad::var<"W">(d.w.data(), d_hidden, d_hidden);
  const auto U = tad::var<"U">(d.u.data(), d_in, d_hidden);
  const auto B = tad::var<"b">(d.b);
  const auto V = tad::var<"V">(d.v.data(), d_hidden, d_out);
  const auto C = tad::var<"c">(d.c);
  const auto cell = [=](auto h, auto x) { return tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + B); };
  const auto last = tad::scan(cell, H0, X, options);
  return std::tuple{tad::mean(tad::softmax_cross_entropy(tad::matmul(last, V) + C, d.labels)), W, U, B, V, C};
}

template <class T>
T tad_step(data<T>& d) {
  auto [loss, W, U, B, V, C] = tad_loss(d);
  const tad::program p(loss);
  return p.grad_into(tad::wrt(W, d.gw), tad::wrt(U, d.gu), tad::wrt(B, d.gb), tad::wrt(V, d.gv), tad::wrt(C, d.gc));
}

// ---- the baseline ---------------------------------------------------------------------------

template <class T>
using rm = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using map = Eigen::Map<rm<T>>;
template <class T>
using cmap = Eigen::Map<const rm<T>>;
template <class T>
using row = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;
template <class T>
using mrow = Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>;

/// Forward and BPTT by hand (buffers allocated once, outside the timed loop).
template <class T>
struct eigen_rnn {
  data<T>& d;
  std::vector<rm<T>> hs = std::vector<rm<T>>(steps + 1, rm<T>(batch, d_hidden));
  rm<T> z{batch, d_out}, dh{batch, d_hidden}, da{batch, d_hidden};
  T step() {
    const cmap<T> w(d.w.data(), d_hidden, d_hidden), u(d.u.data(), d_in, d_hidden), v(d.v.data(), d_hidden, d_out);
    const row<T> b(d.b.data(), d_hidden), c(d.c.data(), d_out);
    hs[0] = cmap<T>(d.h0.data(), batch, d_hidden);
    for (std::size_t t = 0; t < steps; ++t) {
      const cmap<T> x(d.x.data() + t * batch * d_in, batch, d_in);
      auto& h = hs[t + 1];
      h.noalias() = hs[t] * w;
      h.noalias() += x * u;
      h = (h.rowwise() + b).array().tanh().matrix();
    }
    z.noalias() = hs[steps] * v;
    z.rowwise() += c;
    T loss = 0;
    for (std::size_t i = 0; i < batch; ++i) {  // softmax cross-entropy per row, dZ in place
      auto r = z.row(static_cast<Eigen::Index>(i));
      const T m = r.maxCoeff();
      const T s = (r.array() - m).exp().sum();
      const auto label = static_cast<Eigen::Index>(d.labels[i]);
      loss += std::log(s) + m - r(label);
      r = ((r.array() - m).exp() / s).matrix() / T(batch);
      r(label) -= T(1) / T(batch);
    }
    map<T> gw(d.gw.data(), d_hidden, d_hidden), gu(d.gu.data(), d_in, d_hidden), gv(d.gv.data(), d_hidden, d_out);
    mrow<T> gb(d.gb.data(), d_hidden), gc(d.gc.data(), d_out);
    gv.noalias() = hs[steps].transpose() * z;
    gc = z.colwise().sum();
    dh.noalias() = z * v.transpose();
    gw.setZero();
    gu.setZero();
    gb.setZero();
    for (std::size_t t = steps; t-- > 0;) {
      const cmap<T> x(d.x.data() + t * batch * d_in, batch, d_in);
      da = (dh.array() * (T(1) - hs[t + 1].array().square())).matrix();
      gw.noalias() += hs[t].transpose() * da;
      gu.noalias() += x.transpose() * da;
      gb += da.colwise().sum();
      dh.noalias() = da * w.transpose();
    }
    return loss / T(batch);
  }
};

/// tad's value and gradients must equal the baseline's (aborts otherwise).
template <class T>
void check() {
  data<T> a, b;
  eigen_rnn<T> e{a};
  const T want = e.step();
  const T got = tad_step(b);
  const double tol = sizeof(T) == 8 ? 1e-10 : 1e-4;
  bench::expect_close("rnn loss", static_cast<double>(got), static_cast<double>(want), tol);
  bench::expect_close<T>("rnn dW", b.gw, a.gw, tol);
  bench::expect_close<T>("rnn dU", b.gu, a.gu, tol);
  bench::expect_close<T>("rnn db", b.gb, a.gb, tol);
  bench::expect_close<T>("rnn dV", b.gv, a.gv, tol);
  bench::expect_close<T>("rnn dc", b.gc, a.gc, tol);
}

/// The timed loop of RNN{f,d}_tad; with `options`, RNNf_tadckpt (checkpointing). The counter
/// `workspace_MB`: the program's workspace.
template <class T>
void tad_loop(benchmark::State& state, tad::scan_options options = {}) {
  data<T> d;
  auto [loss, W, U, B, V, C] = tad_loss(d, options);
  const tad::program p(loss);
  state.counters["workspace_MB"] = static_cast<double>(p.workspace_size() * sizeof(T)) / 1e6;
  for (auto _ : state) {
    T val = p.grad_into(tad::wrt(W, d.gw), tad::wrt(U, d.gu), tad::wrt(B, d.gb), tad::wrt(V, d.gv), tad::wrt(C, d.gc));
    benchmark::DoNotOptimize(val);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(batch));
}

// ---- a tiny scan: the per-step cost --------------------------------------------------------

/// One sequence (a vector carry) of 64 steps through a cell of 4 hidden units and 2 inputs,
/// loss `sum(square(h_T))`: the work per step is a few dozen flops, so tad's cost per step
/// (binding the body, the engine's calls, Eigen's small products) shows. Baseline: the same by
/// hand in scalar loops.
namespace tiny {
inline constexpr std::size_t steps = 64, d_in = 2, d_hidden = 4;

template <class T>
struct data {
  std::vector<T> x = bench::normal<T>(steps * d_in, 0, 1, 11), h0 = std::vector<T>(d_hidden);
  std::vector<T> w = bench::normal<T>(d_hidden * d_hidden, 0, 0.4, 12), u = bench::normal<T>(d_in * d_hidden, 0, 0.5, 13);
  std::vector<T> b = bench::normal<T>(d_hidden, 0, 0.1, 14);
  std::vector<T> gw = std::vector<T>(d_hidden * d_hidden), gu = std::vector<T>(d_in * d_hidden), gb = std::vector<T>(d_hidden);
};

template <class T>
auto tad_loss(data<T>& d) {
  const auto X = tad::constant(d.x.data(), steps, d_in);
  const auto H0 = tad::constant(d.h0.data(), d_hidden);
  const auto W = tad::var<"W">(d.w.data(), d_hidden, d_hidden);
  const auto U = tad::var<"U">(d.u.data(), d_in, d_hidden);
  const auto B = tad::var<"b">(d.b);
  const auto cell = [=](auto h, auto x) { return tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + B); };
  return std::tuple{tad::sum(tad::square(tad::scan(cell, H0, X))), W, U, B};
}

/// The forward and BPTT by hand, scalar loops.
template <class T>
struct by_hand {
  data<T>& d;
  std::vector<T> hs = std::vector<T>((steps + 1) * d_hidden);
  T step() {
    constexpr std::size_t H = d_hidden, D = d_in;
    std::copy(d.h0.begin(), d.h0.end(), hs.begin());
    for (std::size_t t = 0; t < steps; ++t) {
      for (std::size_t j = 0; j < H; ++j) {
        T a = d.b[j];
        for (std::size_t i = 0; i < H; ++i) a += hs[t * H + i] * d.w[i * H + j];
        for (std::size_t i = 0; i < D; ++i) a += d.x[t * D + i] * d.u[i * H + j];
        hs[(t + 1) * H + j] = std::tanh(a);
      }
    }
    T loss = 0;
    T dh[H], da[H];
    for (std::size_t j = 0; j < H; ++j) {
      const T h = hs[steps * H + j];
      loss += h * h;
      dh[j] = 2 * h;
    }
    std::fill(d.gw.begin(), d.gw.end(), T(0));
    std::fill(d.gu.begin(), d.gu.end(), T(0));
    std::fill(d.gb.begin(), d.gb.end(), T(0));
    for (std::size_t t = steps; t-- > 0;) {
      for (std::size_t j = 0; j < H; ++j) {
        const T h = hs[(t + 1) * H + j];
        da[j] = dh[j] * (1 - h * h);
        d.gb[j] += da[j];
      }
      for (std::size_t i = 0; i < H; ++i) {
        T s = 0;
        for (std::size_t j = 0; j < H; ++j) {
          d.gw[i * H + j] += hs[t * H + i] * da[j];
          s += da[j] * d.w[i * H + j];
        }
        dh[i] = s;
      }
      for (std::size_t i = 0; i < D; ++i)
        for (std::size_t j = 0; j < H; ++j) d.gu[i * H + j] += d.x[t * D + i] * da[j];
    }
    return loss;
  }
};

template <class T>
void check() {
  data<T> a, b;
  by_hand<T> e{a};
  const T want = e.step();
  auto [loss, W, U, B] = tad_loss(b);
  const tad::program p(loss);
  const T got = p.grad_into(tad::wrt(W, b.gw), tad::wrt(U, b.gu), tad::wrt(B, b.gb));
  const double tol = sizeof(T) == 8 ? 1e-10 : 1e-4;
  bench::expect_close("tiny scan loss", static_cast<double>(got), static_cast<double>(want), tol);
  bench::expect_close<T>("tiny scan dW", b.gw, a.gw, tol);
  bench::expect_close<T>("tiny scan dU", b.gu, a.gu, tol);
  bench::expect_close<T>("tiny scan db", b.gb, a.gb, tol);
}
}  // namespace tiny

}  // namespace bench::rnn
