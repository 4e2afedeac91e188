// W2: Gaussian log-likelihood sum(-0.5 * square((y - mu) / sigma) - log(sigma) - 0.5 log(2 pi)),
// gradient w.r.t. the scalars mu, sigma and the array y. tad against the scalar and xsimd
// loops of benchmark/baselines.hpp. For the diagnosis in doc/log/benchmarks.md, not targets:
// W2_xsimddiv (the xsimd loop dividing by sigma per element) and W2_tadhoisted, W2_tadfactored
// (tad with the loop-invariant parts moved out of the sum by hand).
#include "baselines.hpp"
#include "harness.hpp"
#include "workloads.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace bench::work;  // the workload (benchmark/workloads.hpp)


/// The same function with its loop-invariant parts moved out of the sum by hand:
/// "hoisted": sum(-0.5 * square((y - mu) / sigma)) - n (log(sigma) + 0.5 log(2 pi));
/// "factored": -0.5 sum(square(y - mu)) / square(sigma) - n (log(sigma) + 0.5 log(2 pi)).
/// Not targets: they show what the engine would gain by hoisting array-free subexpressions.
auto w2_expression_hoisted(const w2_problem& p) {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi), n = static_cast<double>(p.ys.size());
  auto y = tad::var<"y">(p.ys);
  auto mu = tad::var<"mu">(p.mu);
  auto sigma = tad::var<"sigma">(p.sigma);
  auto e = tad::sum(-0.5 * tad::square((y - mu) / sigma)) - n * (tad::log(sigma) + half_log_2pi);
  return std::tuple{y, mu, sigma, e};
}
auto w2_expression_factored(const w2_problem& p) {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi), n = static_cast<double>(p.ys.size());
  auto y = tad::var<"y">(p.ys);
  auto mu = tad::var<"mu">(p.mu);
  auto sigma = tad::var<"sigma">(p.sigma);
  auto e = -0.5 * tad::sum(tad::square(y - mu)) / tad::square(sigma) - n * (tad::log(sigma) + half_log_2pi);
  return std::tuple{y, mu, sigma, e};
}

/// Value and gradients of one of the tad forms, into gy, gmu, gsigma.
template <class Make>
double w2_tad_once(Make make, const w2_problem& p, std::vector<double>& gy, double& gmu, double& gsigma) {
  auto [y, mu, sigma, e] = make(p);
  return tad::grad_into(e, tad::wrt(mu, gmu), tad::wrt(sigma, gsigma), tad::wrt(y, std::span<double>(gy)));
}

using w2_fn = double (*)(const double*, double, double, double*, bench::w2_grads<double>&, std::size_t);

void w2_check(std::size_t n) {
  bench::check_once("W2/" + std::to_string(n), [&] {
    const w2_problem p(n);
    std::vector<double> gy(n);
    double gmu = 0, gsigma = 0;
    const double v = w2_tad_once(w2_expression, p, gy, gmu, gsigma);
    constexpr double tol = bench::tolerance<double>::value;
    auto same_as_tad = [&](const char* name, auto make) {
      std::vector<double> hy(n);
      double hmu = 0, hsigma = 0;
      const double hv = w2_tad_once(make, p, hy, hmu, hsigma);
      const std::string w = std::string("W2 (tad vs tad ") + name + ") ";
      bench::expect_close(w + "value", v, hv, tol);
      bench::expect_close(w + "d/dmu", gmu, hmu, tol);
      bench::expect_close(w + "d/dsigma", gsigma, hsigma, tol);
      bench::expect_close<double>(w + "d/dy", gy, hy, tol);
    };
    same_as_tad("hoisted", w2_expression_hoisted);
    same_as_tad("factored", w2_expression_factored);
    for (auto [name, f] : {std::pair<const char*, w2_fn>{"scalar", bench::w2_scalar<double>},
                           {"xsimd", bench::w2_xsimd<double>},
                           {"xsimddiv", bench::w2_xsimd_div<double>}}) {
      std::vector<double> by(n);
      bench::w2_grads<double> bg{};
      const double bv = f(p.ys.data(), p.mu, p.sigma, by.data(), bg, n);
      const std::string w = std::string("W2 (tad vs ") + name + ") ";
      bench::expect_close(w + "value", v, bv, tol);
      bench::expect_close(w + "d/dmu", gmu, bg.mu, tol);
      bench::expect_close(w + "d/dsigma", gsigma, bg.sigma, tol);
      bench::expect_close<double>(w + "d/dy", gy, by, tol);
    }
  });
}

template <class Make>
void w2_tad(benchmark::State& state, Make make) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w2_check(n);
  const w2_problem p(n);
  auto [y, mu, sigma, e] = make(p);  // built once
  std::vector<double> gy(n);
  double gmu = 0, gsigma = 0;
  for (auto _ : state) {
    double v = tad::grad_into(e, tad::wrt(mu, gmu), tad::wrt(sigma, gsigma), tad::wrt(y, std::span<double>(gy)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gmu);
    benchmark::DoNotOptimize(gsigma);
    benchmark::DoNotOptimize(gy.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <w2_fn F>
void w2_baseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  w2_check(n);
  const w2_problem p(n);
  std::vector<double> gy(n);
  bench::w2_grads<double> g{};
  for (auto _ : state) {
    double v = F(p.ys.data(), p.mu, p.sigma, gy.data(), g, n);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g);
    benchmark::DoNotOptimize(gy.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void W2_tad(benchmark::State& s) { w2_tad(s, w2_expression); }
void W2_tadhoisted(benchmark::State& s) { w2_tad(s, w2_expression_hoisted); }
void W2_tadfactored(benchmark::State& s) { w2_tad(s, w2_expression_factored); }
void W2_xsimd(benchmark::State& s) { w2_baseline<bench::w2_xsimd<double>>(s); }
void W2_scalar(benchmark::State& s) { w2_baseline<bench::w2_scalar<double>>(s); }
void W2_xsimddiv(benchmark::State& s) { w2_baseline<bench::w2_xsimd_div<double>>(s); }

}  // namespace

BENCHMARK(W2_tad)->Apply(bench::sizes);
BENCHMARK(W2_xsimd)->Apply(bench::sizes);
BENCHMARK(W2_scalar)->Apply(bench::sizes);
BENCHMARK(W2_xsimddiv)->Apply(bench::sizes);
BENCHMARK(W2_tadhoisted)->Apply(bench::sizes);
BENCHMARK(W2_tadfactored)->Apply(bench::sizes);

BENCHMARK_MAIN();
