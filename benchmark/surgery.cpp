// Gradient surgery against hand-written loops (doc/benchmarks.md, "W4 and gradient surgery").
//
// CG: a custom_gradient, softplus written as log1p(exp(v)) with the rule dy * sigmoid(v);
//     tad::sum(soft(x)), gradient w.r.t. the array x. Baselines: log1p(exp(x)) and
//     1 / (1 + exp(-x)) as a scalar loop (std::) and an xsimd loop (xsimd::exp, xsimd::log1p).
//     Diagnostics (not targets): CG_xsimdtadmath, the xsimd loop calling the functions tad's
//     ops call (tad::math::exp, tad's own kernel, doc/decisions.md item 16;
//     tad::math::sigmoid with exp(-|x|) and a select; xsimd::log1p as tad::math::log1p),
//     CG_xsimdonediv, the same with the sigmoid's two divisions 1/(1+e), e/(1+e) replaced by
//     one, and CG_tadsoftplus, the built-in tad::softplus (a different forward:
//     log1p(exp(-|x|)) + max(x, 0)).
// ST: straight-through rounding, tad::sum(tad::square(tad::straight_through(tad::round(x), x)))
//     (ST_tad) and the trick x + stop_gradient(round(x) - x) (ST_tadtrick), gradient w.r.t. the
//     array x. Baselines: value sum(round(x)^2), gradient 2 round(x_i) (round half to even:
//     std::nearbyint, xsimd::nearbyint). Diagnostic: ST_xsimdtrick, the xsimd loop doing the
//     trick's arithmetic, x + (round(x) - x).
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using B = xsimd::batch<double>;
constexpr std::size_t W = B::size;
using baseline_fn = double (*)(const double*, double*, std::size_t);

/// The loop shared by the xsimd baselines: unroll 2 with 2 accumulators, a batch tail, a scalar
/// tail. `elem(xv)` returns (value term, gradient) of a batch, `scalar(x)` of one element.
template <class Elem, class Scalar>
inline double xsimd_loop(const double* x, double* g, std::size_t n, Elem elem, Scalar scalar) {
  B acc0(0.0), acc1(0.0);
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto [v0, g0] = elem(B::load_unaligned(x + i));
    const auto [v1, g1] = elem(B::load_unaligned(x + i + W));
    g0.store_unaligned(g + i);
    g1.store_unaligned(g + i + W);
    acc0 = acc0 + v0;
    acc1 = acc1 + v1;
  }
  for (; i + W <= n; i += W) {
    const auto [v0, g0] = elem(B::load_unaligned(x + i));
    g0.store_unaligned(g + i);
    acc0 = acc0 + v0;
  }
  double acc = xsimd::hadd(acc0 + acc1);
  for (; i < n; ++i) {
    const auto [v, gi] = scalar(x[i]);
    g[i] = gi;
    acc += v;
  }
  return acc;
}

// ---- CG: custom_gradient softplus --------------------------------------------------------------

std::pair<double, double> cg_scalar_elem(double x) {
  return {std::log1p(std::exp(x)), 1.0 / (1.0 + std::exp(-x))};
}

double cg_scalar(const double* x, double* g, std::size_t n) {
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [v, gi] = cg_scalar_elem(x[i]);
    g[i] = gi;
    acc += v;
  }
  return acc;
}

/// xsimd::exp for both exps, sigmoid as 1 / (1 + exp(-x)).
double cg_xsimd(const double* x, double* g, std::size_t n) {
  const B one(1.0);
  return xsimd_loop(
      x, g, n,
      [&](const B& xv) { return std::pair{xsimd::log1p(xsimd::exp(xv)), one / (one + xsimd::exp(-xv))}; },
      cg_scalar_elem);
}

/// The same with tad's math functions (what tad's ops evaluate): diagnostic.
double cg_xsimd_tadmath(const double* x, double* g, std::size_t n) {
  return xsimd_loop(
      x, g, n,
      [](const B& xv) { return std::pair{tad::math::log1p(tad::math::exp(xv)), tad::math::sigmoid(xv)}; },
      [](double xi) { return std::pair{tad::math::log1p(tad::math::exp(xi)), tad::math::sigmoid(xi)}; });
}

/// tad's math with a one-division sigmoid, select(x >= 0, 1, e) / (1 + e): diagnostic (what
/// tad::math::sigmoid would cost if it divided once instead of twice).
double cg_xsimd_onediv(const double* x, double* g, std::size_t n) {
  const B one(1.0), zero(0.0);
  return xsimd_loop(
      x, g, n,
      [&](const B& xv) {
        const B e = tad::math::exp(-xsimd::abs(xv));
        return std::pair{tad::math::log1p(tad::math::exp(xv)), xsimd::select(xv >= zero, one, e) / (one + e)};
      },
      [](double xi) { return std::pair{tad::math::log1p(tad::math::exp(xi)), tad::math::sigmoid(xi)}; });
}

constexpr auto soft = tad::custom_gradient([](auto v) { return tad::log1p(tad::exp(v)); },
                                           [](auto dy, auto v, auto) { return dy * tad::math::sigmoid(v); });

/// x uniform in [-5, 5]: sigmoid from 0.007 to 0.993, exp well inside its range.
std::vector<double> cg_data(std::size_t n) { return bench::uniform<double>(n, -5.0, 5.0, 6); }

auto cg_expression(const std::vector<double>& xs) {
  auto x = tad::var<"x">(xs);
  return std::pair{x, tad::sum(soft(x))};
}
auto cg_expression_softplus(const std::vector<double>& xs) {
  auto x = tad::var<"x">(xs);
  return std::pair{x, tad::sum(tad::softplus(x))};
}

// ---- ST: straight-through rounding ------------------------------------------------------------

std::pair<double, double> st_scalar_elem(double x) {
  const double r = std::nearbyint(x);
  return {r * r, r + r};
}

double st_scalar(const double* x, double* g, std::size_t n) {
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [v, gi] = st_scalar_elem(x[i]);
    g[i] = gi;
    acc += v;
  }
  return acc;
}

double st_xsimd(const double* x, double* g, std::size_t n) {
  return xsimd_loop(
      x, g, n,
      [](const B& xv) {
        const B r = xsimd::nearbyint(xv);
        return std::pair{r * r, r + r};
      },
      st_scalar_elem);
}

/// The trick by hand: value x + (round(x) - x) squared, gradient twice that (diagnostic: the
/// arithmetic ST_tadtrick's expression asks for).
double st_xsimd_trick(const double* x, double* g, std::size_t n) {
  return xsimd_loop(
      x, g, n,
      [](const B& xv) {
        const B v = xv + (xsimd::nearbyint(xv) - xv);
        return std::pair{v * v, v + v};
      },
      [](double xi) {
        const double v = xi + (std::nearbyint(xi) - xi);
        return std::pair{v * v, v + v};
      });
}

/// x uniform in [-10, 10]: round changes every element, by up to 0.5.
std::vector<double> st_data(std::size_t n) { return bench::uniform<double>(n, -10.0, 10.0, 7); }

auto st_expression(const std::vector<double>& xs) {
  auto x = tad::var<"x">(xs);
  return std::pair{x, tad::sum(tad::square(tad::straight_through(tad::round(x), x)))};
}
auto st_expression_trick(const std::vector<double>& xs) {
  auto x = tad::var<"x">(xs);
  return std::pair{x, tad::sum(tad::square(x + tad::stop_gradient(tad::round(x) - x)))};
}

// ---- the check, and the benchmark bodies shared by CG and ST ------------------------------------

using data_fn = std::vector<double> (*)(std::size_t);

struct workload {
  const char* name;
  data_fn data;
  std::vector<std::pair<const char*, baseline_fn>> baselines;
};

const workload cg{"CG", cg_data, {{"scalar", cg_scalar}, {"xsimd", cg_xsimd}, {"xsimdtadmath", cg_xsimd_tadmath},
                                       {"xsimdonediv", cg_xsimd_onediv}}};
const workload st{"ST", st_data, {{"scalar", st_scalar}, {"xsimd", st_xsimd}, {"xsimdtrick", st_xsimd_trick}}};

/// Every tad form of the workload against every baseline (relative 1e-9), once per size.
template <class... Make>
void check(const workload& w, std::size_t n, Make... make) {
  bench::check_once(std::string(w.name) + "/" + std::to_string(n), [&] {
    const auto xs = w.data(n);
    constexpr double tol = bench::tolerance<double>::value;
    auto one_form = [&](auto mk, int form) {
      auto [x, e] = mk(xs);
      std::vector<double> gt(n);
      const double vt = tad::grad_into(e, tad::wrt(x, std::span<double>(gt)));
      for (const auto& [name, f] : w.baselines) {
        std::vector<double> gb(n);
        const double vb = f(xs.data(), gb.data(), n);
        const std::string s = std::string(w.name) + " (tad form " + std::to_string(form) + " vs " + name + ") ";
        bench::expect_close(s + "value", vt, vb, tol);
        bench::expect_close<double>(s + "gradient", gt, gb, tol);
      }
    };
    int form = 0;
    (one_form(make, form++), ...);
  });
}

template <class Make>
void run_tad(benchmark::State& state, const workload& w, Make make, auto check_all) {
  const auto n = static_cast<std::size_t>(state.range(0));
  check_all(n);
  const auto xs = w.data(n);
  std::vector<double> g(n);
  auto [x, e] = make(xs);  // built once; the variable views xs
  for (auto _ : state) {
    double v = tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <baseline_fn F>
void run_baseline(benchmark::State& state, const workload& w, auto check_all) {
  const auto n = static_cast<std::size_t>(state.range(0));
  check_all(n);
  const auto xs = w.data(n);
  std::vector<double> g(n);
  for (auto _ : state) {
    double v = F(xs.data(), g.data(), n);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void cg_check(std::size_t n) { check(cg, n, cg_expression, cg_expression_softplus); }
void st_check(std::size_t n) { check(st, n, st_expression, st_expression_trick); }

void CG_tad(benchmark::State& s) { run_tad(s, cg, cg_expression, cg_check); }
void CG_xsimdonediv(benchmark::State& s) { run_baseline<cg_xsimd_onediv>(s, cg, cg_check); }
void CG_tadsoftplus(benchmark::State& s) { run_tad(s, cg, cg_expression_softplus, cg_check); }
void CG_xsimd(benchmark::State& s) { run_baseline<cg_xsimd>(s, cg, cg_check); }
void CG_scalar(benchmark::State& s) { run_baseline<cg_scalar>(s, cg, cg_check); }
void CG_xsimdtadmath(benchmark::State& s) { run_baseline<cg_xsimd_tadmath>(s, cg, cg_check); }
void ST_tad(benchmark::State& s) { run_tad(s, st, st_expression, st_check); }
void ST_tadtrick(benchmark::State& s) { run_tad(s, st, st_expression_trick, st_check); }
void ST_xsimd(benchmark::State& s) { run_baseline<st_xsimd>(s, st, st_check); }
void ST_scalar(benchmark::State& s) { run_baseline<st_scalar>(s, st, st_check); }
void ST_xsimdtrick(benchmark::State& s) { run_baseline<st_xsimd_trick>(s, st, st_check); }

}  // namespace

BENCHMARK(CG_tad)->Apply(bench::sizes);
BENCHMARK(CG_xsimd)->Apply(bench::sizes);
BENCHMARK(CG_scalar)->Apply(bench::sizes);
BENCHMARK(CG_xsimdtadmath)->Apply(bench::sizes);
BENCHMARK(CG_xsimdonediv)->Apply(bench::sizes);
BENCHMARK(CG_tadsoftplus)->Apply(bench::sizes);
BENCHMARK(ST_tad)->Apply(bench::sizes);
BENCHMARK(ST_tadtrick)->Apply(bench::sizes);
BENCHMARK(ST_xsimd)->Apply(bench::sizes);
BENCHMARK(ST_scalar)->Apply(bench::sizes);
BENCHMARK(ST_xsimdtrick)->Apply(bench::sizes);

BENCHMARK_MAIN();
