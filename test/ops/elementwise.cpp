// Unary elementwise ops (tad/ops/elementwise.hpp). For each op: a scalar variable's value
// equals the std:: formula and its gradient the formula's central difference; on arrays of
// every test length (unaligned buffers, float and double) the values of op(x) match std::
// within a few ulps (SIMD lanes and scalar tail) and the gradient of sum(op(x)) matches
// central differences of the expression evaluated in double. Kinks (abs, relu at 0), NaN,
// round half to even and the structurally zero gradients of sign/round/floor/ceil are tested
// separately with exact expected values.
#include <support/gradient_check.hpp>

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

using namespace tad_test::gradient_check;

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
  // (a) A scalar variable; at NaN the formula's value (NaN for every op but sign).
  check_scalar_impl<T>(name, scalar, f, fd, 4, {spec_of(scal{d.lo, d.hi, d.mixed})}, {flat});
  T a = T(quiet_nan);
  const std::span<T> sa(&a, 1);
  expect_close(scalar({&sa, 1}).value, f(sa), 0, name + ": scalar value at NaN");

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
  for (const std::size_t i : {0u, 5u, 9u, 17u}) b[i] = T(quiet_nan);  // in batches of 4 and 8, and the tail
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
                 [](auto a) { return decltype(a)((a > 0) - (a < 0)); }, {0.05, 3, true});  // sign(NaN) = 0
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
  for (const std::size_t i : {0u, 11u}) in[i] = T(0);
  for (const std::size_t i : {6u, 18u}) in[i] = T(-0.0);
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
