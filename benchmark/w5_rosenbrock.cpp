// W5: the Rosenbrock function of 10 scalar variables x0..x9, built by a compile-time fold:
// f = sum_{i=0}^{8} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, gradient w.r.t. all 10.
// One benchmark iteration is one call. tad (grad_into into 10 doubles; W5_tadtuple: tad::grad
// returning a std::tuple; W5_tadlit: the constants as tad::lit) against the hand-written
// function of benchmark/baselines.hpp.
#include "baselines.hpp"
#include "harness.hpp"
#include "workloads.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace {

using namespace bench::work;  // the workload (benchmark/workloads.hpp)


template <class Vars, class E, std::size_t... K>
auto tad_grad_tuple(const E& e, const Vars& v, std::index_sequence<K...>) {
  return tad::grad(e, std::get<K>(v)...);
}

void w5_check() {
  bench::check_once("W5", [] {
    w5_problem p;
    const auto vars = make_vars(p.x, std::make_index_sequence<dim>{});
    const auto e = rosenbrock_expr(vars, std::make_index_sequence<dim - 1>{});
    const auto el = rosenbrock_expr_lit(vars, std::make_index_sequence<dim - 1>{});
    constexpr double tol = bench::tolerance<double>::value;
    for (std::int64_t it = 0; it < 4; ++it) {
      p.perturb(it);
      p.x[static_cast<std::size_t>(it)] += 0.5;  // a few different points, with the variables seeing them
      std::array<double, dim> gt{}, gh{};
      const double vt = tad_grad_into(e, vars, gt, std::make_index_sequence<dim>{});
      const double vh = bench::rosenbrock(p.x, gh);
      const auto tup = tad_grad_tuple(e, vars, std::make_index_sequence<dim>{});
      std::array<double, dim> gl{};
      const double vl = tad_grad_into(el, vars, gl, std::make_index_sequence<dim>{});
      bench::expect_close("W5 value (grad_into)", vt, vh, tol);
      bench::expect_close("W5 value (literals)", vl, vh, tol);
      bench::expect_close("W5 value (grad)", std::get<0>(tup), vh, tol);
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (bench::expect_close("W5 d/dx" + std::to_string(K) + " (grad_into)", gt[K], gh[K], tol), ...);
        (bench::expect_close("W5 d/dx" + std::to_string(K) + " (grad)", std::get<K + 1>(tup), gh[K], tol), ...);
        (bench::expect_close("W5 d/dx" + std::to_string(K) + " (literals)", gl[K], gh[K], tol), ...);
      }(std::make_index_sequence<dim>{});
    }
  });
}

template <class Build>
void w5_tad(benchmark::State& state, Build build) {
  w5_check();
  w5_problem p;
  const auto vars = make_vars(p.x, std::make_index_sequence<dim>{});
  const auto e = build(vars);  // built once
  std::array<double, dim> g{};
  std::int64_t it = 0;
  for (auto _ : state) {
    p.perturb(it++);
    benchmark::DoNotOptimize(p.x);  // the inputs live in memory, as an optimizer leaves them
    double v = tad_grad_into(e, vars, g, std::make_index_sequence<dim>{});
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void W5_tad(benchmark::State& s) {
  w5_tad(s, [](const auto& v) { return rosenbrock_expr(v, std::make_index_sequence<dim - 1>{}); });
}
void W5_tadlit(benchmark::State& s) {
  w5_tad(s, [](const auto& v) { return rosenbrock_expr_lit(v, std::make_index_sequence<dim - 1>{}); });
}

void W5_tadtuple(benchmark::State& state) {
  w5_check();
  w5_problem p;
  const auto vars = make_vars(p.x, std::make_index_sequence<dim>{});
  const auto e = rosenbrock_expr(vars, std::make_index_sequence<dim - 1>{});
  std::int64_t it = 0;
  for (auto _ : state) {
    p.perturb(it++);
    benchmark::DoNotOptimize(p.x);  // the inputs live in memory, as an optimizer leaves them
    auto r = tad_grad_tuple(e, vars, std::make_index_sequence<dim>{});
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void W5_scalar(benchmark::State& state) {
  w5_check();
  w5_problem p;
  std::array<double, dim> g{};
  std::int64_t it = 0;
  for (auto _ : state) {
    p.perturb(it++);
    benchmark::DoNotOptimize(p.x);  // the inputs live in memory, as an optimizer leaves them
    double v = bench::rosenbrock(p.x, g);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(W5_tad);
BENCHMARK(W5_tadtuple);
BENCHMARK(W5_tadlit);
BENCHMARK(W5_scalar);

BENCHMARK_MAIN();
