// An MLP training step's gradient (issue 16): batch 256, 64 -> 256 (tanh) -> 10, softmax
// cross-entropy over class labels, value and every parameter's gradient. tad: one expression,
// evaluated by a tad::program (Eigen GEMMs, tad's loops around them). Baseline in the same
// binary: the same forward and backward written by hand with Eigen (the GEMMs tad calls, the
// elementwise work as Eigen array expressions), as a user of Eigen would write it.
//
//   bench.mlp
//   benchmark/processes.py build/bench/benchmark/bench.mlp MLPf 256 --processes 8 --baseline eigen  (MLPd: double)
#include "mlp.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <vector>

namespace {

// The data and tad's side are shared with bench.torch (benchmark/mlp.hpp).
using bench::mlp::batch, bench::mlp::d_in, bench::mlp::d_hidden, bench::mlp::d_out;
using bench::mlp::data, bench::mlp::tad_loop, bench::mlp::tad_step;

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

/// tad's and the baseline's value and gradients agree (checked once per process).
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
