#pragma once
/// The data and tad expressions of the workloads W1, W2, W4 and W5 (W4 also its two
/// hand-written baselines; the others' are in baselines.hpp), shared by their Google Benchmark
/// files (benchmark/w*.cpp) and the instruction counts (benchmark/icount/icount.cpp), so both
/// measure the same code.
#include "baselines.hpp"
#include "harness.hpp"

#include <tad/tad.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace bench::work {

// ---- W1 -------------------------------------------------------------------------------------

template <class T>
std::vector<T> w1_data(std::size_t n) {
  return bench::uniform<T>(n, -2.0, 2.0, 1);
}

template <class T>
auto w1_expression(const std::vector<T>& xs) {
  auto x = tad::var<"x">(xs);
  return std::pair{x, tad::sum(tad::exp(tad::sin(x)) * x + tad::square(tad::tanh(x)))};
}

// ---- W2 -------------------------------------------------------------------------------------

// y ~ N(1, 2); the parameters are elsewhere, so no gradient cancels to 0.
inline std::vector<double> w2_data(std::size_t n) { return bench::normal<double>(n, 1.0, 2.0, 2); }
inline constexpr double mu0 = 0.5, sigma0 = 1.3;

struct w2_problem {
  std::vector<double> ys;
  double mu = mu0, sigma = sigma0;
  explicit w2_problem(std::size_t n) : ys(w2_data(n)) {}
};

/// The expression over p's data; mu and sigma are bound by reference. Returns (y, mu, sigma, e).
inline auto w2_expression(const w2_problem& p) {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  auto y = tad::var<"y">(p.ys);
  auto mu = tad::var<"mu">(p.mu);
  auto sigma = tad::var<"sigma">(p.sigma);
  auto e = tad::sum(-0.5 * tad::square((y - mu) / sigma) - tad::log(sigma) - half_log_2pi);
  return std::tuple{y, mu, sigma, e};
}

// ---- W4 -------------------------------------------------------------------------------------

inline constexpr double clip_lo = -0.1, clip_hi = 0.1;

template <class T>
struct w4_grads {
  T w;
  T b;
};

// ---- baselines ------------------------------------------------------------------------------

/// r clipped to [lo, hi], NaN staying NaN (std::min/max return their first argument when it
/// is NaN): the scalar form of `select(r < lo, lo, select(r > hi, hi, r))`.
template <class T>
inline T clip(T r, T lo, T hi) {
  return std::max(std::min(r, hi), lo);
}

/// W4, plain scalar loop. Float accumulates in double (as W1's scalar float baseline). The
/// clip bounds are run-time arguments, as they are in tad's expression: with the constants
/// -0.1, 0.1 compiled in, g++ 12 turns the clip into data-dependent branches (it knows
/// lo < hi, or specializes the conversion of a constant bound to double), mispredicted for
/// about half of the elements here.
template <class T>
T w4_scalar(const T* x, const T* y, T w, T b, T lo, T hi, w4_grads<T>& g, std::size_t n) {
  using A = std::conditional_t<sizeof(T) == 4, double, T>;
  A v = 0, dw = 0, db = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T d = w * x[i] + b - y[i];
    v += d * d;
    const T c = clip(d + d, lo, hi);
    dw += c * x[i];
    db += c;
  }
  g.w = static_cast<T>(dw);
  g.b = static_cast<T>(db);
  return static_cast<T>(v);
}

/// W4, xsimd: one fused loop, unroll 2 with 2 accumulators per sum, scalar tail.
template <class T>
T w4_xsimd(const T* x, const T* y, T w, T b, T lo, T hi, w4_grads<T>& g, std::size_t n) {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  const B vw(w), vb(b), vlo(lo), vhi(hi);
  B v0(T(0)), v1(T(0)), dw0(T(0)), dw1(T(0)), db0(T(0)), db1(T(0));
  auto elem = [&](std::size_t k, B& v, B& dw, B& db) {
    const B xv = B::load_unaligned(x + k);
    const B d = xsimd::fma(vw, xv, vb) - B::load_unaligned(y + k);
    v = xsimd::fma(d, d, v);
    const B r = d + d;
    const B c = xsimd::select(r < vlo, vlo, xsimd::select(r > vhi, vhi, r));
    dw = xsimd::fma(c, xv, dw);
    db = db + c;
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem(i, v0, dw0, db0);
    elem(i + W, v1, dw1, db1);
  }
  for (; i + W <= n; i += W) elem(i, v0, dw0, db0);
  T v = xsimd::hadd(v0 + v1), dw = xsimd::hadd(dw0 + dw1), db = xsimd::hadd(db0 + db1);
  for (; i < n; ++i) {
    const T d = w * x[i] + b - y[i];
    v += d * d;
    const T r = d + d;
    const T c = clip(r, lo, hi);
    dw += c * x[i];
    db += c;
  }
  g.w = dw;
  g.b = db;
  return v;
}

// ---- data and tad ---------------------------------------------------------------------------

/// x uniform in [-1, 1]; y = 0.75 x + 0.12 + N(0, 0.05). At w = 0.8, b = 0.1 the adjoints
/// r_i = 2 (w x_i + b - y_i) lie in about [-0.4, 0.4]: roughly half of them are clipped.
template <class T>
struct w4_problem {
  std::vector<T> xs, ys;
  T w = T(0.8), b = T(0.1);
  T lo = static_cast<T>(clip_lo), hi = static_cast<T>(clip_hi);  // the baselines' bounds
  explicit w4_problem(std::size_t n) : xs(bench::uniform<T>(n, -1.0, 1.0, 4)), ys(bench::normal<T>(n, 0.0, 0.05, 5)) {
    for (std::size_t i = 0; i < n; ++i) ys[i] += static_cast<T>(0.75 * static_cast<double>(xs[i]) + 0.12);
  }
};

/// The expression over p's data; w and b are bound by reference. Returns (w, b, e).
template <class T>
auto w4_expression(const w4_problem<T>& p) {
  auto w = tad::var<"w">(p.w);
  auto b = tad::var<"b">(p.b);
  auto x = tad::constant(p.xs);
  auto y = tad::constant(p.ys);
  auto e = tad::sum(tad::square(tad::clip_gradient(w * x + b, clip_lo, clip_hi) - y));
  return std::tuple{w, b, e};
}

// ---- W5 -------------------------------------------------------------------------------------

inline constexpr std::size_t dim = 10;

/// The name "x<I>" as a compile-time string, for any I.
template <std::size_t I>
constexpr std::size_t digits = I < 10 ? 1 : 1 + digits<I / 10>;

template <std::size_t I>
constexpr auto x_name = [] {
  char s[digits<I> + 2] = {'x'};
  std::size_t v = I;
  for (std::size_t k = digits<I>; k >= 1; --k, v /= 10) s[k] = static_cast<char>('0' + v % 10);
  return tad::fixed_string<digits<I> + 2>(s);
}();
static_assert(x_name<7>.view() == "x7" && x_name<12>.view() == "x12");

/// The variables x0..x<N-1>, bound to the elements of x (by reference: they see updates).
template <std::size_t... I>
auto make_vars(std::array<double, sizeof...(I)>& x, std::index_sequence<I...>) {
  return std::tuple{tad::var<x_name<I>>(x[I])...};
}

/// f as a fold over the 9 terms, each built from the variables i and i + 1. The constants are
/// plain numbers (runtime constants in the expression).
template <class Vars, std::size_t... I>
auto rosenbrock_expr(const Vars& v, std::index_sequence<I...>) {
  auto term = [](const auto& xi, const auto& xj) {
    return 100.0 * tad::square(xj - tad::square(xi)) + tad::square(1.0 - xi);
  };
  return (... + term(std::get<I>(v), std::get<I + 1>(v)));
}

/// The same with compile-time literals (tad::lit): not a target, it shows what constant folding
/// is worth (doc/benchmarks.md).
template <class Vars, std::size_t... I>
auto rosenbrock_expr_lit(const Vars& v, std::index_sequence<I...>) {
  auto term = [](const auto& xi, const auto& xj) {
    return tad::lit<100> * tad::square(xj - tad::square(xi)) + tad::square(tad::lit<1> - xi);
  };
  return (... + term(std::get<I>(v), std::get<I + 1>(v)));
}

struct w5_problem {
  std::array<double, dim> x{};
  w5_problem() {
    for (std::size_t k = 0; k < dim; ++k) x[k] = -1.2 + 0.23 * static_cast<double>(k);
  }
  /// The same tiny change before every call, in every benchmark: nothing can be hoisted.
  void perturb(std::int64_t iter) {
    const double d = (iter & 1) ? 1e-9 : -1e-9;
    for (auto& xk : x) xk += d;
  }
};

template <class Vars, class E, std::size_t... K>
double tad_grad_into(const E& e, const Vars& v, std::array<double, dim>& g, std::index_sequence<K...>) {
  return tad::grad_into(e, tad::wrt(std::get<K>(v), g[K])...);
}

}  // namespace bench::work
