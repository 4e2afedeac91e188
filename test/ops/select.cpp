// Comparisons, mask logic, where and clamp (tad/ops/select.hpp). Comparison masks
// (scalar/scalar, array/array, array/scalar-variable, number/array, array/number; with ties,
// and with NaN) against the C++ operators, combined with && || !; where: values, and the
// gradient goes only into the chosen branch (central differences and exact); clamp: values,
// central differences away from the bounds, exactly 1 at the bounds and 0 outside, gradients
// into array or scalar bounds, NaN.
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

namespace {

using types = std::tuple<float, double>;
using tad_test::lengths;

// ---- checks ---------------------------------------------------------------------------------
// (The same helpers open test/ops/*.cpp, test/eval/multipass.cpp and simd_scalar.cpp; they
// belong in test/support/.) Compile time: each distinct expression type costs tad's engine
// (~0.2-0.4 s), so the per-expression templates below only wrap a tad call in a function
// pointer; everything else (data, central differences, assertions) is compiled once per
// element type.

void expect_close(double got, double want, double tol, const std::string& what) {
  BOOST_TEST(tad_test::close(got, want, tol), what << ": tad " << got << ", expected " << want);
}

/// One assertion for a whole array: every got[i] is close to want[i].
void expect_all_close(std::span<const double> got, std::span<const double> want, double tol,
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
std::vector<double> central_differences(std::span<double> xd, const std::function<double()>& f) {
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

// ---- comparisons and masks -------------------------------------------------------------------

constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();

/// Data with many ties: values from {-1, -0.5, 0, 0.5, 1}.
template <class T>
tad_test::buffer<T> tie_data(std::size_t n, unsigned seed) {
  tad_test::buffer<T> b(n);
  std::mt19937 g(seed);
  for (auto& v : b) v = T(0.5 * (int(g() % 5) - 2));
  return b;
}

/// A mask as 0/1 values: where(m, 1, 0).
template <class T, class Cmp, class... S>
std::vector<double> mask_of(std::span<const std::span<T>> d) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return to_double(tad::value(tad::where(Cmp{}(make_var<K, S>(d[K])...), 1.0, 0.0)));
  }(std::index_sequence_for<S...>{});
}

template <class Cmp>
struct with_half {
  auto operator()(auto y) const { return Cmp{}(0.5, y); }
};
template <class Cmp>
struct with_zero {
  auto operator()(auto x) const { return Cmp{}(x, 0); }
};

/// cmp(x, y), cmp(x, s), cmp(0.5, y), cmp(x, 0) against the C++ operator, at every length;
/// cmp(s, t) of two scalar variables, NaN included.
template <class T, class Cmp>
void check_comparison(const std::string& name, Cmp cmp) {
  const double values[] = {-0.5, 0, 0.5, quiet_nan};
  std::vector<double> got, want;
  for (const double a : values) {
    for (const double b : values) {
      std::array<T, 2> st{T(a), T(b)};
      const std::array<std::span<T>, 2> d{std::span<T>(&st[0], 1), std::span<T>(&st[1], 1)};
      got.push_back(mask_of<T, Cmp, scal, scal>(d)[0]);
      want.push_back(cmp(st[0], st[1]));
    }
  }
  expect_all_close(got, want, 0, "s " + name + " t, scalars");
  for (const std::size_t n : lengths) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto x = tie_data<T>(n, 1);
    auto y = tie_data<T>(n, 2);
    T s = T(0.5);
    std::vector<double> xy, xs, hy, x0;
    for (std::size_t i = 0; i < n; ++i) {
      xy.push_back(cmp(x[i], y[i]));
      xs.push_back(cmp(x[i], s));
      hy.push_back(cmp(T(0.5), y[i]));
      x0.push_back(cmp(x[i], T(0)));
    }
    const std::array<std::span<T>, 2> d2{x.span(), y.span()};
    const std::array<std::span<T>, 2> ds{x.span(), std::span<T>(&s, 1)};
    const std::array<std::span<T>, 1> dy{y.span()}, dx{x.span()};
    expect_all_close(mask_of<T, Cmp, arr, arr>(d2), xy, 0, "x " + name + " y" + at);
    expect_all_close(mask_of<T, Cmp, arr, scal>(ds), xs, 0, "x " + name + " s" + at);
    expect_all_close(mask_of<T, with_half<Cmp>, arr>(dy), hy, 0, "0.5 " + name + " y" + at);
    expect_all_close(mask_of<T, with_zero<Cmp>, arr>(dx), x0, 0, "x " + name + " 0" + at);
  }
}

struct less {
  auto operator()(auto a, auto b) const { return a < b; }
};
struct less_equal {
  auto operator()(auto a, auto b) const { return a <= b; }
};
struct greater {
  auto operator()(auto a, auto b) const { return a > b; }
};
struct greater_equal {
  auto operator()(auto a, auto b) const { return a >= b; }
};
struct equal {
  auto operator()(auto a, auto b) const { return a == b; }
};
struct not_equal {
  auto operator()(auto a, auto b) const { return a != b; }
};

struct and_ {
  auto operator()(auto x, auto y, auto s) const { return (x > y) && (y <= s); }
};
struct or_ {
  auto operator()(auto x, auto y, auto s) const { return (x < s) || (x == y); }
};
struct not_ {
  auto operator()(auto x, auto y, auto s) const { return !((x >= y) || (y != s)); }
};
struct nested {
  auto operator()(auto x, auto y, auto s) const { return (!(x < y) && (x != s)) || !(y > 0); }
};

struct clamp_fn {
  auto operator()(auto x, auto lo, auto hi) const { return tad::clamp(x, lo, hi); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(select_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(comparisons, T, types) {
  check_comparison<T>("<", less{});
  check_comparison<T>("<=", less_equal{});
  check_comparison<T>(">", greater{});
  check_comparison<T>(">=", greater_equal{});
  check_comparison<T>("==", equal{});
  check_comparison<T>("!=", not_equal{});
}

// `x != y` is true where x or y is NaN, in SIMD batches too (xsimd 8.1's batch != is ordered,
// so tad negates ==).
BOOST_AUTO_TEST_CASE_TEMPLATE(comparisons_with_nan, T, types) {
  // NaN in x and in y, in SIMD batches and in the tail: only != holds.
  auto x = tie_data<T>(19, 5);
  auto y = tie_data<T>(19, 6);
  for (const std::size_t i : {0, 5, 9, 17}) x[i] = T(quiet_nan);
  for (const std::size_t i : {2, 12, 18}) y[i] = T(quiet_nan);
  const std::array<std::span<T>, 2> d{x.span(), y.span()};
  const auto want = [&](auto cmp) {
    std::vector<double> w;
    for (std::size_t i = 0; i < 19; ++i) w.push_back(cmp(x[i], y[i]));
    return w;
  };
  expect_all_close(mask_of<T, less, arr, arr>(d), want(less{}), 0, "x < y with NaN");
  expect_all_close(mask_of<T, less_equal, arr, arr>(d), want(less_equal{}), 0, "x <= y with NaN");
  expect_all_close(mask_of<T, greater, arr, arr>(d), want(greater{}), 0, "x > y with NaN");
  expect_all_close(mask_of<T, greater_equal, arr, arr>(d), want(greater_equal{}), 0, "x >= y with NaN");
  expect_all_close(mask_of<T, equal, arr, arr>(d), want(equal{}), 0, "x == y with NaN");
  expect_all_close(mask_of<T, not_equal, arr, arr>(d), want(not_equal{}), 0, "x != y with NaN");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(mask_logic, T, types) {
  for (const std::size_t n : lengths) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto x = tie_data<T>(n, 3);
    auto y = tie_data<T>(n, 4);
    T s = T(0);
    std::vector<double> w_and, w_or, w_not, w_nested;
    for (std::size_t i = 0; i < n; ++i) {
      const T a = x[i], b = y[i];
      w_and.push_back((a > b) && (b <= s));
      w_or.push_back((a < s) || (a == b));
      w_not.push_back(!((a >= b) || (b != s)));
      w_nested.push_back((!(a < b) && (a != s)) || !(b > 0));
    }
    const std::array<std::span<T>, 3> d{x.span(), y.span(), std::span<T>(&s, 1)};
    expect_all_close(mask_of<T, and_, arr, arr, scal>(d), w_and, 0, "(x > y) && (y <= s)" + at);
    expect_all_close(mask_of<T, or_, arr, arr, scal>(d), w_or, 0, "(x < s) || (x == y)" + at);
    expect_all_close(mask_of<T, not_, arr, arr, scal>(d), w_not, 0, "!((x >= y) || (y != s))" + at);
    expect_all_close(mask_of<T, nested, arr, arr, scal>(d), w_nested, 0,
                     "(!(x < y) && (x != s)) || !(y > 0)" + at);
  }
}

// ---- where ----------------------------------------------------------------------------------

struct where_xy {
  auto operator()(auto x, auto y) const { return tad::sum(tad::where(x > y, x * x, 3.0 * y)); }
};
struct where_scalar_branch {
  auto operator()(auto x, auto s) const { return tad::sum(tad::where(x > 0, s, x * s)); }
};
struct where_log_branch {
  auto operator()(auto x) const { return tad::sum(tad::where(x > 0, tad::log(x), 2 * x)); }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(where_gradient_goes_to_the_chosen_branch, T, types) {
  // Central differences, away from the switch (|x| >= 1 > |y|).
  check_scalar<T>(
      "where(x > y, x * y, y - x)", [](auto x, auto y) { return tad::where(x > y, x * y, y - x); },
      [](auto x, auto y) { return x > y ? x * y : y - x; }, 0, scal{1, 2, true}, scal{-0.5, 0.5});
  for (const std::size_t n : lengths) {
    check_gradient<T>("where(x > y, x * x, 3 * y)", n, where_xy{}, arr{1, 2, true}, arr{-0.5, 0.5});
    check_gradient<T>("where(x > 0, s, x * s)", n, where_scalar_branch{}, arr{1, 2, true}, scal{-2, 2});
    check_gradient<T>("where(x > 0, log(x), 2 * x)", n, where_log_branch{}, arr{1, 2, true});
  }
  // Exact, with the mask's ties (x == y goes to the second branch).
  auto x = make_data<T>(true, -2, 2, false, 19, 5);
  auto y = make_data<T>(true, -2, 2, false, 19, 6);
  for (const std::size_t i : {1, 8, 17}) y[i] = x[i];
  T s = T(1.25);
  const std::array<std::span<T>, 2> dxy{x.span(), y.span()};
  const std::array<std::span<T>, 2> dxs{x.span(), std::span<T>(&s, 1)};
  const std::array<std::span<T>, 1> dx{x.span()};
  const result r = grad_of<T, where_xy, arr, arr>(dxy);
  const result q = grad_of<T, where_scalar_branch, arr, scal>(dxs);
  const result l = grad_of<T, where_log_branch, arr>(dx);
  std::vector<double> gx, gy, qx, lx;
  double qs = 0, value = 0;
  for (std::size_t i = 0; i < 19; ++i) {
    const double a = x[i];
    gx.push_back(x[i] > y[i] ? 2 * a : 0.0);
    gy.push_back(x[i] > y[i] ? 0.0 : 3.0);
    qx.push_back(x[i] > 0 ? 0.0 : double(s));
    qs += x[i] > 0 ? 1.0 : a;
    lx.push_back(x[i] > 0 ? 1 / a : 2.0);
    value += x[i] > 0 ? std::log(a) : 2 * a;
  }
  expect_all_close(r.grads[0], gx, 0, "d/dx where(x > y, x * x, 3 * y)");
  expect_all_close(r.grads[1], gy, 0, "d/dy where(x > y, x * x, 3 * y)");
  expect_all_close(q.grads[0], qx, 0, "d/dx where(x > 0, s, x * s)");
  expect_close(q.grads[1][0], qs, 1e-6, "d/ds where(x > 0, s, x * s)");
  // log(x) of x < 0 is NaN in the branch not taken: neither the value nor the gradient sees it.
  expect_close(l.value, value, 1e-5, "where(x > 0, log(x), 2 * x), x < 0 too");
  expect_all_close(l.grads[0], lx, tad_test::grad_tol<T>(), "d/dx where(x > 0, log(x), 2 * x), x < 0 too");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(where_values, T, types) {
  // Numbers as branches, and an array/array selection with NaN in the mask's input.
  auto x = tie_data<T>(23, 7);
  for (const std::size_t i : {2, 11, 21}) x[i] = T(quiet_nan);
  auto y = make_data<T>(true, -2, 2, false, 23, 8);
  const auto xv = tad::var<"x">(x.span());
  const auto yv = tad::var<"y">(y.span());
  std::vector<double> w1, w2;
  for (std::size_t i = 0; i < 23; ++i) {
    w1.push_back(x[i] >= 0 ? 2.5 : -1.0);
    w2.push_back(x[i] < y[i] ? double(y[i]) : double(x[i]));
  }
  expect_all_close(to_double(tad::value(tad::where(xv >= 0, 2.5, -1))), w1, 0, "where(x >= 0, 2.5, -1)");
  expect_all_close(to_double(tad::value(tad::where(xv < yv, yv, xv))), w2, 0, "where(x < y, y, x)");
}

// ---- clamp ----------------------------------------------------------------------------------

struct clamp_numbers {
  auto operator()(auto x) const { return tad::sum(tad::clamp(x, -1.0, 1.0)); }
};
struct clamp_xyz {
  auto operator()(auto x, auto lo, auto hi) const { return tad::sum(tad::clamp(x, lo, hi)); }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_, T, types) {
  check_scalar<T>("clamp(x, y, z)", clamp_fn{},
                  [](auto x, auto y, auto z) { return std::clamp(x, y, z); }, 0, scal{-3, 3},
                  scal{-1.5, -0.5}, scal{0.5, 1.5});
  for (const std::size_t n : lengths) {
    check_gradient<T>("clamp(x, -1, 1)", n, clamp_numbers{}, arr{-3, 3});
    check_gradient<T>("clamp(x, s, t)", n, clamp_xyz{}, arr{-3, 3}, scal{-1.5, -0.5}, scal{0.5, 1.5});
    check_gradient<T>("clamp(x, lo, hi), arrays", n, clamp_xyz{}, arr{-3, 3}, arr{-1.5, -0.5}, arr{0.5, 1.5});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_at_and_beyond_the_bounds, T, types) {
  // The gradient passes to x inside [lo, hi] including exactly at lo and hi (PyTorch), is 0
  // outside; lo (hi) gets it where x is strictly below (above). Values and NaN too.
  auto x = make_data<T>(true, -3, 3, false, 21, 9);
  for (const std::size_t i : {0, 6, 13, 20}) x[i] = T(-1);
  for (const std::size_t i : {3, 9, 17}) x[i] = T(1);
  std::array<T, 2> bounds{T(-1), T(1)};
  const std::array<std::span<T>, 1> dx{x.span()};
  const std::array<std::span<T>, 3> d{x.span(), std::span<T>(&bounds[0], 1), std::span<T>(&bounds[1], 1)};
  const result rn = grad_of<T, clamp_numbers, arr>(dx);
  const result rs = grad_of<T, clamp_xyz, arr, scal, scal>(d);
  std::vector<double> gx, values;
  double glo = 0, ghi = 0, value = 0;
  for (const T v : x) {
    gx.push_back(v >= -1 && v <= 1 ? 1.0 : 0.0);
    glo += v < -1 ? 1.0 : 0.0;
    ghi += v > 1 ? 1.0 : 0.0;
    values.push_back(std::clamp(double(v), -1.0, 1.0));
    value += values.back();
  }
  expect_all_close(rn.grads[0], gx, 0, "d/dx clamp(x, -1, 1) at the bounds");
  expect_all_close(rs.grads[0], gx, 0, "d/dx clamp(x, lo, hi) at the bounds");
  expect_close(rs.grads[1][0], glo, 0, "d/dlo clamp(x, lo, hi)");
  expect_close(rs.grads[2][0], ghi, 0, "d/dhi clamp(x, lo, hi)");
  expect_close(rn.value, value, 1e-5, "sum(clamp(x, -1, 1))");
  const auto xv = tad::var<"x">(x.span());
  for (const std::size_t i : {2, 10, 19}) {
    x[i] = T(quiet_nan);
    values[i] = quiet_nan;
  }
  expect_all_close(to_double(tad::value(tad::clamp(xv, -1.0, 1.0))), values, 0, "clamp(x, -1, 1) with NaN");
  std::array<T, 3> sx{T(quiet_nan), T(-1), T(1)};
  const std::array<std::span<T>, 3> ds{std::span<T>(&sx[0], 1), std::span<T>(&sx[1], 1),
                                       std::span<T>(&sx[2], 1)};
  expect_close(grad_of<T, clamp_fn, scal, scal, scal>(ds).value, quiet_nan, 0, "clamp(NaN, -1, 1)");
}

BOOST_AUTO_TEST_SUITE_END()
