// The gradient of sum(square(A B - C)) with respect to A and B (N x N each), a GEMM-bound
// workload (issue 16: target at most 1.05x Eigen by hand). tad: a tad::program (one forward
// GEMM, the engine's pass over A B and C for the value and dY = 2 (A B - C), two backward
// GEMMs). Baseline in the same binary: the same three GEMMs and one Eigen array pass, by hand.
//
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 256 --processes 8 --baseline eigen
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 1024 --processes 4 --baseline eigen
//   benchmark/processes.py build/bench/benchmark/bench.products SQ 4 --processes 6 --baseline eigen
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <vector>

namespace {

using rm = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct data {
  std::size_t n;
  std::vector<float> a = bench::normal<float>(n * n, 0, 1, 1), b = bench::normal<float>(n * n, 0, 1, 2);
  std::vector<float> c = bench::normal<float>(n * n, 0, 1, 3);
  std::vector<float> ga = std::vector<float>(n * n), gb = std::vector<float>(n * n);
};

struct eigen_sq {
  data& d;
  rm r{static_cast<Eigen::Index>(d.n), static_cast<Eigen::Index>(d.n)};
  float step() {
    const auto n = static_cast<Eigen::Index>(d.n);
    const Eigen::Map<const rm> a(d.a.data(), n, n), b(d.b.data(), n, n), c(d.c.data(), n, n);
    Eigen::Map<rm> ga(d.ga.data(), n, n), gb(d.gb.data(), n, n);
    r.noalias() = a * b;
    r -= c;
    const float loss = r.squaredNorm();
    r *= 2.0f;
    ga.noalias() = r * b.transpose();
    gb.noalias() = a.transpose() * r;
    return loss;
  }
};

auto tad_sq(data& d) {
  const auto A = tad::var<"A">(d.a.data(), d.n, d.n);
  const auto B = tad::var<"B">(d.b.data(), d.n, d.n);
  const auto C = tad::constant(d.c.data(), d.n, d.n);
  return std::tuple{tad::sum(tad::square(tad::matmul(A, B) - C)), A, B};
}

void check(std::size_t n) {
  data x{n}, y{n};
  eigen_sq e{x};
  const float want = e.step();
  auto [loss, A, B] = tad_sq(y);
  const tad::program p(loss);
  const float got = p.grad_into(tad::wrt(A, y.ga), tad::wrt(B, y.gb));
  bench::expect_close("SQ loss", got, want, 1e-3);
  bench::expect_close<float>("SQ dA", y.ga, x.ga, 1e-3, 10);
  bench::expect_close<float>("SQ dB", y.gb, x.gb, 1e-3, 10);
}

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
