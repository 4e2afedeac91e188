// pow, min, max (tad/ops/binary.hpp). Scalar variables: values equal std::pow/min/max,
// gradients match central differences. Arrays of every test length (unaligned, float and
// double): gradients of sum(op(a, b)) with respect to both sides, for array/array,
// array/scalar-variable and scalar-variable/array operands (and numbers on either side),
// match central differences of the expression in double. Exact: ties split the gradient
// 50/50, NaN in either position gives NaN, pow's zero-gradient conventions (PyTorch), pow of a
// negative base with an integer exponent.
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

// ---- pow, min, max -------------------------------------------------------------------------

struct pow_fn {
  auto operator()(auto a, auto b) const { return tad::pow(a, b); }
};
struct max_fn {
  auto operator()(auto a, auto b) const { return tad::max(a, b); }
};
struct min_fn {
  auto operator()(auto a, auto b) const { return tad::min(a, b); }
};

scal scalar_of(arr a) { return {a.lo, a.hi, a.mixed}; }

/// Scalar/scalar, array/array, array/scalar and scalar/array. `Op` builds the tad expression,
/// `F` is the std:: formula.
template <class T, class Op, class F>
void check_binary(const std::string& name, Op op, F f, arr lhs, arr rhs) {
  check_scalar<T>(name, op, f, 4, scalar_of(lhs), scalar_of(rhs));
  for (const std::size_t n : lengths) {
    check_gradient<T>(name + " array/array", n, sum_of<Op>{}, lhs, rhs);
    check_gradient<T>(name + " array/scalar", n, sum_of<Op>{}, lhs, scalar_of(rhs));
    check_gradient<T>(name + " scalar/array", n, sum_of<Op>{}, scalar_of(lhs), rhs);
  }
}

constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();

/// Spans of two buffers, for grad_of.
template <class T>
struct two {
  std::array<std::span<T>, 2> s;
  two(tad_test::buffer<T>& a, tad_test::buffer<T>& b) : s{a.span(), b.span()} {}
  operator std::span<const std::span<T>>() const { return s; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(binary)

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_, T, types) {
  // Positive base; the exponent takes both signs.
  check_binary<T>("pow", pow_fn{}, [](auto a, auto b) { return std::pow(a, b); }, {0.5, 3}, {-2, 2});
  for (const std::size_t n : lengths) {
    check_gradient<T>("pow(x, 2.5)", n, [](auto x) { return tad::sum(tad::pow(x, 2.5)); }, arr{0.5, 3});
    check_gradient<T>("pow(2.0, x)", n, [](auto x) { return tad::sum(tad::pow(2.0, x)); }, arr{-2, 2});
    check_gradient<T>("pow(x, -1)", n, [](auto x) { return tad::sum(tad::pow(x, -1)); }, arr{0.5, 3});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_negative_base_integer_exponent, T, types) {
  // std::pow semantics: (-2)^3 = -8, (-2)^2 = 4. The SIMD lanes and the tail, and d/dx.
  auto b = make_data<T>(true, 0.5, 2, true, 19, 4);
  const auto x = tad::var<"x">(b.span());
  std::vector<double> cube, square, dcube;
  for (const T v : b) {
    cube.push_back(std::pow(v, T(3)));
    square.push_back(std::pow(v, T(2)));
    dcube.push_back(3 * double(v) * double(v));
  }
  expect_all_close(to_double(tad::value(tad::pow(x, 3))), cube, 8 * std::numeric_limits<T>::epsilon(),
                   "pow(x, 3), x < 0 too");
  expect_all_close(to_double(tad::value(tad::pow(x, 2.0))), square, 8 * std::numeric_limits<T>::epsilon(),
                   "pow(x, 2.0), x < 0 too");
  expect_all_close(to_double(std::get<1>(tad::grad(tad::sum(tad::pow(x, 3)), x))), dcube,
                   tad_test::grad_tol<T>(), "d/dx sum(pow(x, 3)), x < 0 too");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_zero_gradient_conventions, T, types) {
  // As PyTorch: d/da pow(a, b) = 0 where b == 0 (even at a == 0), and d/db = 0 where a == 0
  // and b >= 0 (instead of 0 * log(0) = NaN).
  auto a = make_data<T>(true, 0.5, 2, false, 17, 1);
  auto b = make_data<T>(true, 0.5, 2, false, 17, 2);
  for (const std::size_t i : {0u, 5u, 9u, 16u}) b[i] = 0;
  for (const std::size_t i : {5u, 9u, 12u}) a[i] = 0;
  b[12] = T(1.5);  // 0^0.5: finite
  const result r = grad_of<T, sum_of<pow_fn>, arr, arr>(two<T>(a, b));
  std::vector<double> da, db;
  for (std::size_t i = 0; i < 17; ++i) {
    da.push_back(b[i] == 0 ? 0.0 : double(b[i]) * std::pow(double(a[i]), double(b[i]) - 1));
    db.push_back(a[i] == 0 ? 0.0 : std::pow(double(a[i]), double(b[i])) * std::log(double(a[i])));
  }
  expect_all_close(r.grads[0], da, tad_test::grad_tol<T>(), "d/da pow(a, b) with zeros");
  expect_all_close(r.grads[1], db, tad_test::grad_tol<T>(), "d/db pow(a, b) with zeros");
  BOOST_TEST(std::all_of(r.grads[1].begin(), r.grads[1].end(), [](double v) { return std::isfinite(v); }));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_min, T, types) {
  // |x| >= 1 > |y|: no ties, and each side wins somewhere.
  check_binary<T>("max", max_fn{}, [](auto a, auto b) { return std::max(a, b); }, {1, 2, true}, {-0.5, 0.5});
  check_binary<T>("min", min_fn{}, [](auto a, auto b) { return std::min(a, b); }, {1, 2, true}, {-0.5, 0.5});
  for (const std::size_t n : lengths) {
    check_gradient<T>("max(x, 0.0), min(0, x)", n,
                      [](auto x) { return tad::sum(tad::max(x, 0.0) * 2 + tad::min(0, x)); },
                      arr{1, 2, true});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_min_ties_split_evenly, T, types) {
  // Elementwise ties (in the first batch, a later batch and the tail) give each side half.
  auto x = make_data<T>(true, -2, 2, false, 19, 1);
  auto y = make_data<T>(true, -2, 2, false, 19, 2);
  for (const std::size_t i : {0u, 5u, 9u, 18u}) y[i] = x[i];
  const result rmax = grad_of<T, sum_of<max_fn>, arr, arr>(two<T>(x, y));
  const result rmin = grad_of<T, sum_of<min_fn>, arr, arr>(two<T>(x, y));
  std::vector<double> max_dx, max_dy, min_dx, min_dy;
  for (std::size_t i = 0; i < 19; ++i) {
    max_dx.push_back(x[i] > y[i] ? 1.0 : x[i] == y[i] ? 0.5 : 0.0);
    max_dy.push_back(y[i] > x[i] ? 1.0 : x[i] == y[i] ? 0.5 : 0.0);
    min_dx.push_back(x[i] < y[i] ? 1.0 : x[i] == y[i] ? 0.5 : 0.0);
    min_dy.push_back(y[i] < x[i] ? 1.0 : x[i] == y[i] ? 0.5 : 0.0);
  }
  expect_all_close(rmax.grads[0], max_dx, 0, "d/dx sum(max(x, y)) with ties");
  expect_all_close(rmax.grads[1], max_dy, 0, "d/dy sum(max(x, y)) with ties");
  expect_all_close(rmin.grads[0], min_dx, 0, "d/dx sum(min(x, y)) with ties");
  expect_all_close(rmin.grads[1], min_dy, 0, "d/dy sum(min(x, y)) with ties");

  // Array/scalar: the scalar collects 1 per element it beats and 0.5 per tie.
  T s = x[5];
  x[11] = s;
  const std::array<std::span<T>, 2> xs{x.span(), std::span<T>(&s, 1)};
  const result r = grad_of<T, sum_of<max_fn>, arr, scal>(xs);
  std::vector<double> dx;
  double ds = 0;
  for (std::size_t i = 0; i < 19; ++i) {
    dx.push_back(x[i] > s ? 1.0 : x[i] == s ? 0.5 : 0.0);
    ds += s > x[i] ? 1.0 : x[i] == s ? 0.5 : 0.0;
  }
  expect_all_close(r.grads[0], dx, 0, "d/dx sum(max(x, s)) with ties");
  expect_close(r.grads[1][0], ds, 0, "d/ds sum(max(x, s)) with ties");

  // Scalar/scalar.
  std::array<T, 2> ab{T(1.5), T(1.5)};
  const std::array<std::span<T>, 2> as{std::span<T>(&ab[0], 1), std::span<T>(&ab[1], 1)};
  for (const result& q : {grad_of<T, max_fn, scal, scal>(as), grad_of<T, min_fn, scal, scal>(as)}) {
    expect_close(q.value, 1.5, 0, "max/min(1.5, 1.5)");
    expect_close(q.grads[0][0], 0.5, 0, "d/da max/min(a, a)");
    expect_close(q.grads[1][0], 0.5, 0, "d/db max/min(a, a)");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_min_propagate_nan, T, types) {
  // NaN in either position, in SIMD lanes and the tail, and for scalars.
  auto x = make_data<T>(true, -2, 2, false, 19, 1);
  auto y = make_data<T>(true, -2, 2, false, 19, 2);
  for (const std::size_t i : {0u, 9u, 17u}) x[i] = T(quiet_nan);
  for (const std::size_t i : {2u, 12u, 18u}) y[i] = T(quiet_nan);
  const auto xv = tad::var<"x">(x.span());
  const auto yv = tad::var<"y">(y.span());
  std::vector<double> want_max, want_min;
  for (std::size_t i = 0; i < 19; ++i) {
    const bool n = std::isnan(x[i]) || std::isnan(y[i]);
    want_max.push_back(n ? quiet_nan : std::max(double(x[i]), double(y[i])));
    want_min.push_back(n ? quiet_nan : std::min(double(x[i]), double(y[i])));
  }
  expect_all_close(to_double(tad::value(tad::max(xv, yv))), want_max, 0, "max(x, y) with NaN");
  expect_all_close(to_double(tad::value(tad::min(xv, yv))), want_min, 0, "min(x, y) with NaN");
  const std::pair<double, double> pairs[] = {{quiet_nan, 1.0}, {1.0, quiet_nan}, {quiet_nan, quiet_nan}};
  for (const auto& [a, b] : pairs) {
    std::array<T, 2> ab{T(a), T(b)};
    const std::array<std::span<T>, 2> as{std::span<T>(&ab[0], 1), std::span<T>(&ab[1], 1)};
    const std::string at = "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
    expect_close(grad_of<T, max_fn, scal, scal>(as).value, quiet_nan, 0, "max" + at);
    expect_close(grad_of<T, min_fn, scal, scal>(as).value, quiet_nan, 0, "min" + at);
  }
}

BOOST_AUTO_TEST_SUITE_END()
