// Unary elementwise ops (tad/ops/elementwise.hpp). For each op: a scalar variable's value
// equals the std:: formula and its gradient the formula's central difference; on arrays of
// every test length (unaligned buffers, float and double) the values of op(x) match std::
// within a few ulps (SIMD lanes and scalar tail) and the gradient of sum(op(x)) matches
// central differences of the expression evaluated in double. Kinks (abs, relu at 0), NaN,
// round half to even and the structurally zero gradients of sign/round/floor/ceil are tested
// separately with exact expected values.
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

// ---- unary ops -----------------------------------------------------------------------------

template <class T>
constexpr double ulps(double k) {
  return k * std::numeric_limits<T>::epsilon();
}

constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();

/// The values of an array expression op(x), type-erased.
template <class T>
using values_fn = std::vector<double> (*)(std::span<T>);

template <class T, class Op>
std::vector<double> values_of(std::span<T> x) {
  return to_double(tad::value(Op{}(tad::var<"x">(x))));
}

template <class T>
void check_unary_impl(const std::string& name, const grad_fn<T>& scalar, const values_fn<T>& values,
                      const grad_fn<T>& g, const grad_fn<double>& gd, const formula_fn<T>& f,
                      const formula_fn<double>& fd, arr d, bool flat) {
  // (a) A scalar variable; NaN in, NaN out.
  check_scalar_impl<T>(name, scalar, f, fd, 4, {spec_of(scal{d.lo, d.hi, d.mixed})}, {flat});
  T a = T(quiet_nan);
  const std::span<T> sa(&a, 1);
  expect_close(scalar({&sa, 1}).value, quiet_nan, 0, name + ": scalar value at NaN");

  // (b) Arrays: values against std:: (in SIMD lanes and the scalar tail, NaN included), and
  // the gradient of sum(op(x)) against central differences (exactly 0 for the flat ops).
  const auto check_values = [&](std::span<T> x, const std::string& what) {
    std::vector<double> want;
    for (T& xi : x) want.push_back(f({&xi, 1}));
    expect_all_close(values(x), want, ulps<T>(8), name + ": " + what);
  };
  for (const std::size_t n : lengths) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto b = make_data<T>(true, d.lo, d.hi, d.mixed, n, 11);
    check_values(b.span(), "values" + at);
    if (flat) {
      const std::span<T> sb = b.span();
      expect_all_close(g({&sb, 1}).grads[0], std::vector<double>(n, 0.0), 0, name + ": d/dx" + at);
    } else {
      check_gradient_impl<T>(name, n, g, gd, {spec_of(d)});
    }
  }
  auto b = make_data<T>(true, d.lo, d.hi, d.mixed, 19, 13);
  for (const std::size_t i : {0, 5, 9, 17}) b[i] = T(quiet_nan);  // in batches of 4 and 8, and the tail
  check_values(b.span(), "values with NaN");
}

/// Everything one unary op must satisfy. `op` builds the tad expression from a variable, `f`
/// is the std:: formula (called with T and with double), d the domain.
template <class T, class Op, class F>
void check_unary(const std::string& name, Op, F, arr d) {
  check_unary_impl<T>(name, grad_of<T, Op, scal>, values_of<T, Op>, grad_of<T, sum_of<Op>, arr>,
                      grad_of<double, sum_of<Op>, arr>, formula_of<T, F, 1>, formula_of<double, F, 1>, d,
                      zero_gradients<T, Op, scal>()[0]);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(elementwise)

// One test case per family of ops: each Boost.Test template case costs ~0.5 s to compile.

BOOST_AUTO_TEST_CASE_TEMPLATE(exponential_and_logarithm, T, types) {
  check_unary<T>("exp", [](auto x) { return tad::exp(x); }, [](auto a) { return std::exp(a); }, {-3, 3});
  check_unary<T>("log", [](auto x) { return tad::log(x); }, [](auto a) { return std::log(a); }, {0.5, 3});
  check_unary<T>("log1p", [](auto x) { return tad::log1p(x); }, [](auto a) { return std::log1p(a); },
                 {-0.5, 3});
  check_unary<T>("expm1", [](auto x) { return tad::expm1(x); }, [](auto a) { return std::expm1(a); },
                 {-3, 3});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(trigonometric_and_tanh, T, types) {
  check_unary<T>("sin", [](auto x) { return tad::sin(x); }, [](auto a) { return std::sin(a); }, {-4, 4});
  check_unary<T>("cos", [](auto x) { return tad::cos(x); }, [](auto a) { return std::cos(a); }, {-4, 4});
  check_unary<T>("tan", [](auto x) { return tad::tan(x); }, [](auto a) { return std::tan(a); }, {-1.2, 1.2});
  check_unary<T>("tanh", [](auto x) { return tad::tanh(x); }, [](auto a) { return std::tanh(a); }, {-3, 3});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(powers, T, types) {
  check_unary<T>("sqrt", [](auto x) { return tad::sqrt(x); }, [](auto a) { return std::sqrt(a); }, {0.5, 4});
  check_unary<T>("square", [](auto x) { return tad::square(x); }, [](auto a) { return a * a; }, {-3, 3});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(activations, T, types) {
  check_unary<T>("sigmoid", [](auto x) { return tad::sigmoid(x); },
                 [](auto a) { return decltype(a)(1) / (decltype(a)(1) + std::exp(-a)); }, {-6, 6});
  check_unary<T>("softplus", [](auto x) { return tad::softplus(x); },
                 [](auto a) { return std::log1p(std::exp(a)); }, {-6, 6});
  check_unary<T>("abs", [](auto x) { return tad::abs(x); }, [](auto a) { return std::abs(a); },
                 {0.05, 3, true});
  check_unary<T>("relu", [](auto x) { return tad::relu(x); },
                 [](auto a) { return std::isnan(a) ? a : std::max(a, decltype(a)(0)); }, {0.05, 3, true});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(piecewise_constant, T, types) {
  check_unary<T>("sign", [](auto x) { return tad::sign(x); },
                 [](auto a) { return std::isnan(a) ? a : decltype(a)((a > 0) - (a < 0)); }, {0.05, 3, true});
  check_unary<T>("round", [](auto x) { return tad::round(x); }, [](auto a) { return std::nearbyint(a); },
                 {-4, 4});
  check_unary<T>("floor", [](auto x) { return tad::floor(x); }, [](auto a) { return std::floor(a); },
                 {-4, 4});
  check_unary<T>("ceil", [](auto x) { return tad::ceil(x); }, [](auto a) { return std::ceil(a); }, {-4, 4});

  // Structural zeros: known at compile time, and only that part of a gradient is dropped.
  auto in = make_data<T>(true, -4, 4, false, 17, 5);
  const auto x = tad::var<"x">(in.span());
  T a = 0.5;
  const auto s = tad::var<"s">(a);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::sign(x))), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::round(x))), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::floor(x))), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::ceil(x))), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sign(s)), decltype(s)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::round(s) * tad::floor(s) + tad::ceil(s)), decltype(s)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::exp(tad::floor(x * s)))), decltype(x)>);
  static_assert(!tad::gradient_is_zero_v<decltype(tad::sum(x * tad::floor(x))), decltype(x)>);
  const auto [v, g] = tad::grad(tad::sum(x * tad::floor(x)), x);
  std::vector<double> want;
  for (const T xi : in) want.push_back(std::floor(xi));
  expect_all_close(to_double(g), want, 0, "d/dx sum(x * floor(x)) = floor(x)");
}

// ---- kinks and special values, exact -------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(abs_relu_sign_at_zero, T, types) {
  // abs'(0) = relu'(0) = 0 and sign(0) = 0 (PyTorch), for +0 and -0, in the first batch, a
  // later batch and the scalar tail, and for a scalar variable.
  auto in = make_data<T>(true, 0.05, 3, true, 19, 21);
  for (const std::size_t i : {0, 11}) in[i] = T(0);
  for (const std::size_t i : {6, 18}) in[i] = T(-0.0);
  const auto x = tad::var<"x">(in.span());
  std::vector<double> sgn, pos;
  for (const T xi : in) {
    sgn.push_back(xi > 0 ? 1.0 : xi < 0 ? -1.0 : 0.0);
    pos.push_back(xi > 0 ? 1.0 : 0.0);
  }
  expect_all_close(to_double(std::get<1>(tad::grad(tad::sum(tad::abs(x)), x))), sgn, 0, "d/dx sum(abs(x))");
  expect_all_close(to_double(std::get<1>(tad::grad(tad::sum(tad::relu(x)), x))), pos, 0, "d/dx sum(relu(x))");
  expect_all_close(to_double(tad::value(tad::sign(x))), sgn, 0, "sign(x)");
  T a = 0;
  const auto s = tad::var<"x">(a);
  for (const T z : {T(0), T(-0.0)}) {
    a = z;
    const std::string at = "(" + std::string(std::signbit(z) ? "-0" : "+0") + ")";
    expect_close(std::get<1>(tad::grad(tad::abs(s), s)), 0, 0, "abs'" + at);
    expect_close(std::get<1>(tad::grad(tad::relu(s), s)), 0, 0, "relu'" + at);
    expect_close(std::get<0>(tad::grad(tad::relu(s), s)), 0, 0, "relu" + at);
    expect_close(std::get<0>(tad::grad(tad::sign(s), s)), 0, 0, "sign" + at);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(round_halves_to_even, T, types) {
  // SIMD path: the array below (length 39) runs through full batches; scalar path: length-1
  // arrays (only the tail loop runs), the tail of the long array, and a scalar variable.
  const double halves[] = {0.5, 1.5, 2.5, -2.5, -0.5, -1.5, 3.5, 4.5, -3.5, 5.5, 0.25, -0.75, 1e6 + 0.5};
  const double even[] = {0.0, 2.0, 2.0, -2.0, -0.0, -2.0, 4.0, 4.0, -4.0, 6.0, 0.0, -1.0, 1e6};
  constexpr std::size_t k = std::size(halves);
  tad_test::buffer<T> in(3 * k);
  std::vector<double> want(3 * k);
  for (std::size_t i = 0; i < 3 * k; ++i) {
    in[i] = T(halves[i % k]);
    want[i] = even[i % k];
  }
  expect_all_close(to_double(tad::value(tad::round(tad::var<"x">(in.span())))), want, 0,
                   "round, SIMD and tail");
  T a = 0;
  const auto s = tad::var<"x">(a);
  for (std::size_t i = 0; i < k; ++i) {
    tad_test::buffer<T> one(1);
    one[0] = a = T(halves[i]);
    const std::string what = "round(" + std::to_string(halves[i]) + ")";
    expect_close(tad::value(tad::round(tad::var<"x">(one.span())))[0], even[i], 0, what + ", length 1");
    expect_close(std::get<0>(tad::grad(tad::round(s), s)), even[i], 0, what + ", scalar");
  }
}

BOOST_AUTO_TEST_SUITE_END()
