#pragma once
// Shared machinery of the gradient tests in test/ops and test/eval: expressions are built by
// small "Build" functors over variables made from unaligned buffers, tad's gradient is compared
// with central differences of the same expression evaluated in double (also for float), and
// values with the standard library's formulas. Each expression type only wraps a tad call in a
// function pointer; data, differences and assertions compile once per element type.
#include "support/check.hpp"

#include <support/check.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tad_test::gradient_check {

using types = tad_test::reals;
using tad_test::lengths;

// ---- checks ---------------------------------------------------------------------------------
// (The same helpers open test/ops/*.cpp, test/eval/multipass.cpp and simd_scalar.cpp; they
// belong in test/support/.) Compile time: each distinct expression type costs tad's engine
// (~0.2-0.4 s), so the per-expression templates below only wrap a tad call in a function
// pointer; everything else (data, central differences, assertions) is compiled once per
// element type.

inline void expect_close(double got, double want, double tol, const std::string& what) {
  BOOST_TEST(tad_test::close(got, want, tol), what << ": tad " << got << ", expected " << want);
}

/// One assertion for a whole array: every got[i] is close to want[i].
inline void expect_all_close(std::span<const double> got, std::span<const double> want, double tol,
                      const std::string& what) {
  BOOST_TEST(got.size() == want.size(), what << ": length " << got.size() << ", expected " << want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (!tad_test::close(got[i], want[i], tol) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << got.size() << " elements differ; first [" << first
                             << "]: tad " << (bad ? got[first] : 0.0) << ", expected "
                             << (bad ? want[first] : 0.0));
}

/// Relative step of the central differences: their rounding error is ~eps * |f| / h, which at
/// n = 1000 (|f| up to ~1e4) needs h above 1e-6; the truncation error h^2 f''' / 6 stays below
/// 1e-8 on the domains used here.
constexpr double step = 1e-5;

/// Central differences of f() with respect to each element of xd (f reads xd).
inline std::vector<double> central_differences(std::span<double> xd, const std::function<double()>& f) {
  std::vector<double> d(xd.size());
  for (std::size_t i = 0; i < xd.size(); ++i) {
    const double x0 = xd[i];
    d[i] = tad_test::central(
        [&](double t) {
          xd[i] = t;
          return f();
        },
        x0, step);
    xd[i] = x0;
  }
  return d;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}
template <class T>
std::vector<double> to_double(T v) {
  return {double(v)};
}

template <class T>
constexpr double value_tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-12;
}

// ---- inputs --------------------------------------------------------------------------------

/// An array variable's data: uniform in [lo, hi); `mixed` gives each value a random sign (so
/// {0.05, 3, true} keeps away from a kink at 0).
struct arr {
  double lo, hi;
  bool mixed = false;
};
/// A scalar variable's data, drawn as arr.
struct scal {
  double lo, hi;
  bool mixed = false;
};

template <class B>
void fill(B& b, double lo, double hi, bool mixed, unsigned seed) {
  tad_test::fill_uniform(b, lo, hi, seed);
  if (mixed) {
    std::mt19937 g(seed + 1000);
    for (auto& v : b)
      if (g() & 1u) v = -v;
  }
}

/// Random data of one variable in an unaligned buffer (one element for a scalar variable).
/// With R = float, double data rounded to float: the double copy of float data.
template <class T, class R = T>
tad_test::buffer<T> make_data(bool array, double lo, double hi, bool mixed, std::size_t n, unsigned seed) {
  tad_test::buffer<T> b(array ? n : 1);
  fill(b, lo, hi, mixed, seed);
  for (auto& v : b) v = static_cast<T>(static_cast<R>(v));
  return b;
}

inline constexpr tad::fixed_string<2> names[] = {"x", "y", "z"};

/// The K-th variable: an array viewing d, or a scalar bound to d[0].
template <std::size_t K, class S, class T>
auto make_var(std::span<T> d) {
  if constexpr (std::is_same_v<S, arr>) return tad::var<names[K]>(d); else return tad::var<names[K]>(d[0]);
}

/// tad's value and gradients, in double.
struct result {
  double value;
  std::vector<std::vector<double>> grads;
};
/// tad::grad of one expression, type-erased: data (one span per variable) -> result. Builders
/// are captureless lambdas, so a function pointer does (std::function costs more compile time
/// per expression than tad does).
template <class T>
using grad_fn = result (*)(std::span<const std::span<T>>);

template <class T, class Build, class... S>
result grad_of(std::span<const std::span<T>> d) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    const auto vs = std::tuple{make_var<K, S>(d[K])...};
    const auto r = tad::grad(Build{}(std::get<K>(vs)...), std::get<K>(vs)...);
    return result{double(std::get<0>(r)), {to_double(std::get<K + 1>(r))...}};
  }(std::index_sequence_for<S...>{});
}

/// Is the gradient of build(vars) with respect to each variable structurally zero?
template <class T, class Build, class... S>
std::vector<bool> zero_gradients() {
  return []<std::size_t... K>(std::index_sequence<K...>) {
    using E = decltype(Build{}(make_var<K, S>(std::span<T>())...));
    return std::vector<bool>{tad::gradient_is_zero_v<E, decltype(make_var<K, S>(std::span<T>()))>...};
  }(std::index_sequence_for<S...>{});
}

struct spec {
  bool array;
  double lo, hi;
  bool mixed;
};
template <class S>
spec spec_of(S s) {
  return {std::is_same_v<S, arr>, s.lo, s.hi, s.mixed};
}

template <class T>
void check_gradient_impl(const std::string& label, std::size_t n, const grad_fn<T>& g,
                         const grad_fn<double>& gd, const std::vector<spec>& specs) {
  std::vector<tad_test::buffer<T>> bt;
  std::vector<tad_test::buffer<double>> bd;
  std::vector<std::span<T>> st;
  std::vector<std::span<double>> sd;
  bt.reserve(specs.size());
  bd.reserve(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const spec& s = specs[k];
    bt.push_back(make_data<T>(s.array, s.lo, s.hi, s.mixed, n, 7 + 31 * unsigned(k)));
    bd.push_back(make_data<double, T>(s.array, s.lo, s.hi, s.mixed, n, 7 + 31 * unsigned(k)));
    st.push_back(bt.back().span());
    sd.push_back(bd.back().span());
  }
  const result r = g(st);
  const std::function<double()> f = [&] { return gd(sd).value; };
  const std::string at = " (n = " + std::to_string(n) + ")";
  expect_close(r.value, f(), value_tol<T>(), label + ": value" + at);
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const std::vector<double> want = central_differences(sd[k], f);
    // NaN compares equal to NaN in close(): make sure the reference is a number.
    BOOST_TEST(std::all_of(want.begin(), want.end(), [](double v) { return std::isfinite(v); }),
               label << ": central differences of d/d" << names[k].view() << at << " are finite");
    expect_all_close(r.grads[k], want, tad_test::grad_tol<T>(),
                     label + ": d/d" + std::string(names[k].view()) + at);
  }
}

/// The value and the gradients of build(x, y, ...) in T against the value and central
/// differences of build(...) in double, on the same data. Variables are named x, y, z; each
/// is an array of length n (arr) or a scalar (scal).
template <class T, class Build, class... S>
void check_gradient(const std::string& label, std::size_t n, Build, S... specs) {
  check_gradient_impl<T>(label, n, grad_of<T, Build, S...>, grad_of<double, Build, S...>,
                         {spec_of(specs)...});
}

/// sum(op(x, ...)) for a captureless op.
template <class Op>
struct sum_of {
  auto operator()(auto... x) const { return tad::sum(Op{}(x...)); }
};

/// A formula f(a, b, ...) of N numbers (a captureless lambda), type-erased.
template <class U>
using formula_fn = double (*)(std::span<const U>);

template <class U, class F, std::size_t N>
double formula_of(std::span<const U> a) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) { return double(F{}(a[K]...)); }(
      std::make_index_sequence<N>{});
}

template <class T>
void check_scalar_impl(const std::string& label, const grad_fn<T>& g, const formula_fn<T>& f,
                       const formula_fn<double>& fd, double ulps, const std::vector<spec>& specs,
                       const std::vector<bool>& zero) {
  const std::size_t nv = specs.size();
  std::vector<std::vector<T>> pts(nv, std::vector<T>(16));
  for (std::size_t k = 0; k < nv; ++k)
    fill(pts[k], specs[k].lo, specs[k].hi, specs[k].mixed, 3 + 17 * unsigned(k));
  std::vector<T> a(nv);
  std::vector<std::span<T>> sa;
  for (std::size_t k = 0; k < nv; ++k) sa.push_back(std::span<T>(&a[k], 1));
  std::vector<double> got_v, want_v;
  std::vector<std::vector<double>> got_g(nv), want_g(nv);
  for (std::size_t p = 0; p < 16; ++p) {
    for (std::size_t k = 0; k < nv; ++k) a[k] = pts[k][p];
    const result r = g(sa);
    got_v.push_back(r.value);
    want_v.push_back(f(a));
    std::vector<double> ad(a.begin(), a.end());
    for (std::size_t k = 0; k < nv; ++k) {
      got_g[k].push_back(r.grads[k][0]);
      want_g[k].push_back(zero[k] ? 0.0 : tad_test::central(
                                              [&](double t) {
                                                auto b = ad;
                                                b[k] = t;
                                                return fd(b);
                                              },
                                              ad[k], step));
    }
  }
  const auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
  };
  BOOST_TEST(finite(want_v), label << ": scalar reference values are finite");
  for (const auto& w : want_g) BOOST_TEST(finite(w), label << ": scalar reference gradients are finite");
  expect_all_close(got_v, want_v, ulps * std::numeric_limits<T>::epsilon(), label + ": scalar values");
  for (std::size_t k = 0; k < nv; ++k)
    expect_all_close(got_g[k], want_g[k], zero[k] ? 0.0 : tad_test::grad_tol<T>(),
                     label + ": scalar d/d" + std::string(names[k].view()));
}

/// Scalar variables x, y, ... at 16 random points: the value of build(x, ...) in T against the
/// formula f evaluated in T (within `ulps`), and each gradient against central differences
/// of f in double (exactly 0 where the gradient is structurally zero).
template <class T, class Build, class F, class... S>
void check_scalar(const std::string& label, Build, F, double ulps, S... specs) {
  constexpr std::size_t N = sizeof...(S);
  check_scalar_impl<T>(label, grad_of<T, Build, S...>, formula_of<T, F, N>, formula_of<double, F, N>, ulps,
                       {spec_of(specs)...}, zero_gradients<T, Build, S...>());
}

}  // namespace tad_test::gradient_check
