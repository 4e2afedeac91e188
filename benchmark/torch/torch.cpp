// tad against libtorch (issue 16), single-threaded, opt-in: built only with
// -DTAD_BENCH_TORCH=ON (benchmark/CMakeLists.txt, doc/benchmarks.md "libtorch (issue 16)").
//
//   MLP{f,d}_{tad,torch}/256  benchmark/mlp.hpp's training step: batch 256, 64 -> 256 (tanh)
//                             -> 10, mean softmax cross-entropy; value and the 4 gradients.
//   LR_{tad,torch}/<N>        benchmark/logreg.hpp's logistic regression, N x 32 double;
//                             value and the gradient of w.
//   RNN{f,d}_{tad,torch}/50   benchmark/rnn.hpp's training step (issue 41): a batch of 32
//                             sequences, T = 50 steps of a tanh cell 16 -> 64, a linear head on
//                             the last carry (-> 10), mean softmax cross-entropy; value and the 5
//                             gradients. torch runs the loop eagerly and backpropagates it.
//
// The tad side is the code bench.mlp and bench.logreg time (the shared headers). The torch
// side is written as a libtorch user writes it: parameters with requires_grad, the forward
// with torch's functional ops (cross_entropy; binary_cross_entropy_with_logits, which is
// mean(softplus(z) - y z)), loss.backward(), the gradients read from .grad() and zeroed before
// each step (as optimizer.zero_grad() does in 1.13). Inputs are the same arrays (from_blob, no
// copy). Before timing, torch's value and gradients must equal tad's (1e-4 float, 1e-9
// double). at::set_num_threads(1) and at::set_num_interop_threads(1) before anything runs.
//
// torch's GEMM and GEMV go through libblas.so.3: Debian's default is the reference BLAS; the
// measured numbers use OpenBLAS (libopenblas0-serial, or LD_LIBRARY_PATH=<its folder>).
//
//   benchmark/processes.py build/torchbench/benchmark/torch/bench.torch MLPf 256 --baseline torch
//   benchmark/processes.py build/torchbench/benchmark/torch/bench.torch LR 100000 --baseline torch
#include "../logreg.hpp"
#include "../mlp.hpp"
#include "../rnn.hpp"

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

namespace mlp = bench::mlp;
namespace lr = bench::lr;
namespace rnn = bench::rnn;

template <class T>
constexpr auto dtype = sizeof(T) == 8 ? torch::kFloat64 : torch::kFloat32;

/// A tensor over v's elements (no copy), shaped `sizes`.
template <class T>
torch::Tensor view(std::vector<T>& v, std::vector<std::int64_t> sizes) {
  return torch::from_blob(v.data(), sizes, torch::TensorOptions().dtype(dtype<T>));
}

/// The parameters over d's arrays, X, the labels as int64, and the training step.
template <class T>
struct torch_mlp {
  torch::Tensor x, w1, b1, w2, b2, labels;
  explicit torch_mlp(mlp::data<T>& d)
      : x(view(d.x, {mlp::batch, mlp::d_in})),
        w1(view(d.w1, {mlp::d_in, mlp::d_hidden}).requires_grad_()),
        b1(view(d.b1, {mlp::d_hidden}).requires_grad_()),
        w2(view(d.w2, {mlp::d_hidden, mlp::d_out}).requires_grad_()),
        b2(view(d.b2, {mlp::d_out}).requires_grad_()),
        labels(torch::tensor(std::vector<std::int64_t>(d.labels.begin(), d.labels.end()), torch::kInt64)) {}
  T step() {
    for (auto* p : {&w1, &b1, &w2, &b2})
      if (p->grad().defined()) p->mutable_grad().zero_();
    const torch::Tensor h = torch::tanh(torch::addmm(b1, x, w1));
    const torch::Tensor loss = torch::nn::functional::cross_entropy(torch::addmm(b2, h, w2), labels);
    loss.backward();
    return loss.template item<T>();
  }
};

/// The timed loop of a torch model's training step; `items` per step (its batch).
template <class Model>
void torch_loop(benchmark::State& state, Model& t, std::int64_t items) {
  for (auto _ : state) {
    auto v = t.step();
    benchmark::DoNotOptimize(v);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * items);
}

template <class T>
void expect_close(const std::string& what, const torch::Tensor& got, const std::vector<T>& want, double tol) {
  const torch::Tensor c = got.contiguous();
  bench::expect_close<T>(what, std::span<const T>(c.data_ptr<T>(), static_cast<std::size_t>(c.numel())), want, tol);
}

/// torch's value and gradients agree with tad's (checked once per process).
template <class T>
void mlp_check() {
  mlp::data<T> a, b;
  const T want = mlp::tad_step(a);
  torch_mlp<T> t{b};
  const T got = t.step();
  const double tol = sizeof(T) == 8 ? 1e-9 : 1e-4;
  bench::expect_close("mlp loss (torch vs tad)", static_cast<double>(got), static_cast<double>(want), tol);
  expect_close<T>("mlp dW1 (torch vs tad)", t.w1.grad(), a.g1, tol);
  expect_close<T>("mlp db1 (torch vs tad)", t.b1.grad(), a.gb1, tol);
  expect_close<T>("mlp dW2 (torch vs tad)", t.w2.grad(), a.g2, tol);
  expect_close<T>("mlp db2 (torch vs tad)", t.b2.grad(), a.gb2, tol);
}

template <class T>
void mlp_tad(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "mlp double" : "mlp float", mlp_check<T>);
  mlp::tad_loop<T>(state);
}

template <class T>
void mlp_torch(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "mlp double" : "mlp float", mlp_check<T>);
  mlp::data<T> d;
  torch_mlp<T> t{d};
  torch_loop(state, t, static_cast<std::int64_t>(mlp::batch));
}

/// The RNN over d's arrays: the cell `h = tanh(h W + x_t U + b)` written as a loop, as a
/// libtorch user writes it (torch records each step and backpropagates the loop).
template <class T>
struct torch_rnn {
  torch::Tensor x, h0, w, u, b, v, c, labels;
  explicit torch_rnn(rnn::data<T>& d)
      : x(view(d.x, {rnn::steps * rnn::batch, rnn::d_in})), h0(view(d.h0, {rnn::batch, rnn::d_hidden})),
        w(view(d.w, {rnn::d_hidden, rnn::d_hidden}).requires_grad_()),
        u(view(d.u, {rnn::d_in, rnn::d_hidden}).requires_grad_()), b(view(d.b, {rnn::d_hidden}).requires_grad_()),
        v(view(d.v, {rnn::d_hidden, rnn::d_out}).requires_grad_()), c(view(d.c, {rnn::d_out}).requires_grad_()),
        labels(torch::tensor(std::vector<std::int64_t>(d.labels.begin(), d.labels.end()), torch::kInt64)) {}
  T step() {
    for (auto* p : {&w, &u, &b, &v, &c})
      if (p->grad().defined()) p->mutable_grad().zero_();
    constexpr auto B = static_cast<std::int64_t>(rnn::batch);
    torch::Tensor h = h0;
    for (std::int64_t t = 0; t < static_cast<std::int64_t>(rnn::steps); ++t)
      h = torch::tanh(torch::addmm(torch::addmm(b, x.narrow(0, t * B, B), u), h, w));
    const torch::Tensor loss = torch::nn::functional::cross_entropy(torch::addmm(c, h, v), labels);
    loss.backward();
    return loss.template item<T>();
  }
};

/// torch's value and gradients agree with tad's (checked once per process).
template <class T>
void rnn_check() {
  rnn::data<T> a, b;
  const T want = rnn::tad_step(a);
  torch_rnn<T> t{b};
  const T got = t.step();
  const double tol = sizeof(T) == 8 ? 1e-9 : 1e-4;
  bench::expect_close("rnn loss (torch vs tad)", static_cast<double>(got), static_cast<double>(want), tol);
  expect_close<T>("rnn dW (torch vs tad)", t.w.grad(), a.gw, tol);
  expect_close<T>("rnn dU (torch vs tad)", t.u.grad(), a.gu, tol);
  expect_close<T>("rnn db (torch vs tad)", t.b.grad(), a.gb, tol);
  expect_close<T>("rnn dV (torch vs tad)", t.v.grad(), a.gv, tol);
  expect_close<T>("rnn dc (torch vs tad)", t.c.grad(), a.gc, tol);
}

template <class T>
void rnn_tad(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "rnn double" : "rnn float", rnn_check<T>);
  rnn::tad_loop<T>(state);
}

template <class T>
void rnn_torch(benchmark::State& state) {
  bench::check_once(sizeof(T) == 8 ? "rnn double" : "rnn float", rnn_check<T>);
  rnn::data<T> d;
  torch_rnn<T> t{d};
  torch_loop(state, t, static_cast<std::int64_t>(rnn::batch));
}

/// Logistic regression over pr's data (X and y without copies; w a copy that needs its grad).
struct torch_lr {
  torch::Tensor x, y, w;
  explicit torch_lr(lr::lr_problem& pr)
      : x(view(pr.xs, {static_cast<std::int64_t>(pr.rows), lr::features})),
        y(view(pr.ys, {static_cast<std::int64_t>(pr.rows)})), w(view(pr.ws, {lr::features}).requires_grad_()) {}
  double step() {
    if (w.grad().defined()) w.mutable_grad().zero_();
    const torch::Tensor loss = torch::nn::functional::binary_cross_entropy_with_logits(torch::mv(x, w), y);
    loss.backward();
    return loss.item<double>();
  }
};

void lr_check(std::size_t n) {
  bench::check_once("LR/" + std::to_string(n), [&] {
    lr::lr_problem pr(n);
    auto [w, L] = lr::lr_expression(pr);
    std::vector<double> g(lr::features);
    const double want = tad::grad_into(L, tad::wrt(w, std::span<double>(g)));
    torch_lr t{pr};
    const double got = t.step();
    bench::expect_close("LR value (torch vs tad)", got, want, 1e-9);
    expect_close<double>("LR d/dw (torch vs tad)", t.w.grad(), g, 1e-9);
  });
}

void LR_tad(benchmark::State& state) {
  lr_check(static_cast<std::size_t>(state.range(0)));
  lr::tad_loop(state);
}

void LR_torch(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  lr_check(n);
  lr::lr_problem pr(n);
  torch_lr t{pr};
  torch_loop(state, t, static_cast<std::int64_t>(n * lr::features));
}

void lr_sizes(benchmark::internal::Benchmark* b) { b->Arg(1000)->Arg(100000)->Arg(1000000); }  // as bench.logreg

}  // namespace

BENCHMARK(mlp_tad<float>)->Name("MLPf_tad")->Arg(256);
BENCHMARK(mlp_torch<float>)->Name("MLPf_torch")->Arg(256);
BENCHMARK(mlp_tad<double>)->Name("MLPd_tad")->Arg(256);
BENCHMARK(mlp_torch<double>)->Name("MLPd_torch")->Arg(256);
BENCHMARK(rnn_tad<float>)->Name("RNNf_tad")->Arg(50);
BENCHMARK(rnn_torch<float>)->Name("RNNf_torch")->Arg(50);
BENCHMARK(rnn_tad<double>)->Name("RNNd_tad")->Arg(50);
BENCHMARK(rnn_torch<double>)->Name("RNNd_torch")->Arg(50);
BENCHMARK(LR_tad)->Apply(lr_sizes);
BENCHMARK(LR_torch)->Apply(lr_sizes);

int main(int argc, char** argv) {
  // One thread for torch's intra-op work (OpenMP) and one for its inter-op pool, as tad uses
  // one: the comparison is per core. Interop must be set before any parallel work starts.
  at::set_num_interop_threads(1);
  at::set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
