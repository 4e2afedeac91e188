// Entry points: grad, grad_into, value, evaluate, vjp; bad input; no allocation (threads: test/threads/).

#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(api)

using tad_test::reals;

BOOST_AUTO_TEST_CASE_TEMPLATE(grad_returns_value_and_gradients_in_argument_order, T, reals) {
  std::vector<T> xs{T(0.5), T(-1.25), T(2.0)};
  T a = T(1.5);
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"s">(a);
  auto e = s * tad::sum(x * x) + tad::square(s);
  // d/dx_i = 2 s x_i; d/ds = sum(x^2) + 2 s.
  const double sx2 = 0.25 + 1.5625 + 4.0;
  auto [v, gs, gx] = tad::grad(e, s, x);
  BOOST_TEST(double(v) == 1.5 * sx2 + 2.25, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(double(gs) == sx2 + 3.0, boost::test_tools::tolerance(1e-5));
  BOOST_REQUIRE_EQUAL(gx.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(double(gx[i]) == 3.0 * double(xs[i]), boost::test_tools::tolerance(1e-5));
}

BOOST_AUTO_TEST_CASE(scalar_variable_bound_to_lvalue_sees_updates) {
  double a = 2.0;
  auto s = tad::var<"s">(a);
  auto e = s * s * s;
  BOOST_TEST(tad::value(e) == 8.0);
  a = 3.0;
  auto [v, g] = tad::grad(e, s);
  BOOST_TEST(v == 27.0);
  BOOST_TEST(g == 27.0);  // 3 a^2
}

// A scalar expression runs inline on the caller's expression (decisions.md 58): a bound
// variable's type says so, and a gradient is the IEEE sum of its contributions: -0.0 where
// every contribution is -0.0, +0.0 for a variable the expression does not reach.
BOOST_AUTO_TEST_CASE(scalar_gradients_are_the_sums_of_their_contributions) {
  double a = 2.0, b = -0.0, c = 5.0;
  auto x = tad::var<"x">(a);
  auto y = tad::var<"y">(b);
  auto z = tad::var<"z">(c);
  static_assert(std::is_same_v<decltype(x), tad::scalar_var<"x", double, true>>);
  static_assert(std::is_same_v<decltype(tad::var<"x">(2.0)), tad::scalar_var<"x", double>>);
  // d(x y)/dx = y = -0.0 (one contribution); d/dy = x = 2; z is not in the expression.
  double gx = 1, gy = 1, gz = 1;
  const double v = tad::grad_into(x * y, tad::wrt(x, gx), tad::wrt(y, gy), tad::wrt(z, gz));
  BOOST_TEST(v == 0.0);
  BOOST_TEST((gx == 0.0 && std::signbit(gx)));
  BOOST_TEST(gy == 2.0);
  BOOST_TEST((gz == 0.0 && !std::signbit(gz)));
  auto [v2, tx, tz] = tad::grad(x * y, x, z);
  BOOST_TEST(v2 == 0.0);
  BOOST_TEST((tx == 0.0 && std::signbit(tx)));
  BOOST_TEST((tz == 0.0 && !std::signbit(tz)));
  // Two contributions -0.0 and +0.0 (x y + x |y|): their sum is +0.0.
  auto [v3, ux] = tad::grad(x * y + x * tad::abs(y), x);
  BOOST_TEST(v3 == 0.0);
  BOOST_TEST((ux == 0.0 && !std::signbit(ux)));
  // The caller's values at each call, with the inline path as with the engine's loops.
  a = 3.0, b = 4.0, c = 1.0;
  BOOST_TEST(tad::grad_into(x * y + tad::square(z), tad::wrt(x, gx), tad::wrt(z, gz)) == 13.0);
  BOOST_TEST(gx == 4.0);
  BOOST_TEST(gz == 2.0);
}

BOOST_AUTO_TEST_CASE(variable_not_in_expression_gets_zero_gradient) {
  std::vector<double> xs{1, 2, 3}, ys{4, 5};
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
  double b = 1;
  auto s = tad::var<"s">(b);
  auto [v, gy, gs] = tad::grad(tad::sum(x), y, s);
  BOOST_TEST(v == 6.0);
  BOOST_TEST(gy == std::vector<double>({0.0, 0.0}), boost::test_tools::per_element());
  BOOST_TEST(gs == 0.0);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(x)), decltype(y)>);
  static_assert(!tad::depends_on_v<decltype(tad::sum(x)), decltype(y)>);
  static_assert(tad::depends_on_v<decltype(tad::sum(x)), decltype(x)>);
}

BOOST_AUTO_TEST_CASE(gradient_blocked_by_piecewise_constant_op_is_structurally_zero) {
  std::vector<double> xs{1.5, 2.5};
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::round(x) * x);
  static_assert(!tad::gradient_is_zero_v<decltype(e), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::floor(x))), decltype(x)>);
  static_assert(tad::depends_on_v<decltype(tad::sum(tad::floor(x))), decltype(x)>);
  auto [v, g] = tad::grad(e, x);
  BOOST_TEST(v == 2.0 * 1.5 + 2.0 * 2.5);  // round half to even: 2, 2
  BOOST_TEST(g == std::vector<double>({2.0, 2.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(grad_into_writes_caller_buffers_and_allocates_nothing, T, reals) {
  for (std::size_t n : tad_test::lengths) {
    tad_test::buffer<T> xs(n), ys(n), gx(n), gy(n);
    tad_test::fill_uniform(xs, -1, 1, 1);
    tad_test::fill_uniform(ys, -1, 1, 2);
    T a = T(0.75), ga = T(-99);
    auto x = tad::var<"x">(xs.cspan());
    auto y = tad::var<"y">(ys.cspan());
    auto s = tad::var<"s">(a);
    // Three loops: max, sum of exp, gradient; and a fused sum.
    auto e = tad::logsumexp(x * s) + tad::sum(tad::square(y - s));
    tad_test::alloc_counter::start();
    const T v = tad::grad_into(e, tad::wrt(x, gx.span()), tad::wrt(s, ga), tad::wrt(y, gy.span()));
    const long allocations = tad_test::alloc_counter::stop();
    BOOST_TEST(allocations == 0);
    // The counter counts: tad::grad returns its array gradient in a std::vector.
    tad_test::alloc_counter::start();
    auto with_vector = tad::grad(e, x);
    BOOST_TEST(tad_test::alloc_counter::stop() >= (n > 0 ? 1 : 0));
    BOOST_TEST(std::get<1>(with_vector).size() == n);
    // Independent check: softmax weights.
    double m = -INFINITY;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, double(xs[i]) * double(a));
    double z = 0;
    for (std::size_t i = 0; i < n; ++i) z += std::exp(double(xs[i]) * double(a) - m);
    double lse = n ? m + std::log(z) : -INFINITY;
    double sq = 0, gs_expected = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double p = std::exp(double(xs[i]) * double(a) - lse);
      sq += (double(ys[i]) - double(a)) * (double(ys[i]) - double(a));
      gs_expected += p * double(xs[i]) - 2 * (double(ys[i]) - double(a));
      BOOST_TEST(tad_test::close(double(gx[i]), p * double(a), tad_test::grad_tol<T>()));
      BOOST_TEST(tad_test::close(double(gy[i]), 2 * (double(ys[i]) - double(a)), tad_test::grad_tol<T>()));
    }
    BOOST_TEST(tad_test::close(double(v), lse + sq, tad_test::grad_tol<T>()));
    BOOST_TEST(tad_test::close(double(ga), gs_expected, tad_test::grad_tol<T>() * 10));
  }
}

BOOST_AUTO_TEST_CASE(different_lengths_combined_elementwise_throw_shape_error_and_write_nothing) {
  std::vector<double> xs{1, 2, 3}, ys{1, 2}, gx{7, 7, 7};
  double a = 1, ga = 7;
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
  auto s = tad::var<"s">(a);
  // x and y meet in one product, after a reduction of each that would be legal alone.
  auto e = tad::sum(x * s) + tad::sum(y) + tad::sum(x * y);
  try {
    tad::grad_into(e, tad::wrt(x, gx), tad::wrt(s, ga));
    BOOST_FAIL("expected tad::shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(err.expected() == 3u);
    BOOST_TEST(err.got() == 2u);
    BOOST_TEST(std::string(err.what()).find("length 3") != std::string::npos);
    BOOST_TEST(std::string(err.what()).find("length 2") != std::string::npos);
  }
  BOOST_TEST(gx == std::vector<double>({7, 7, 7}), boost::test_tools::per_element());
  BOOST_TEST(ga == 7.0);
  BOOST_CHECK_THROW(tad::grad(e, x), tad::shape_error);
  BOOST_CHECK_THROW(tad::value(e), tad::shape_error);
}

BOOST_AUTO_TEST_CASE(shape_error_names_the_arrays_whose_lengths_differ) {
  std::vector<double> xs{1, 2, 3, 4, 5}, ws{1, 2, 3}, cs{1, 2};
  auto x = tad::var<"x">(xs);
  auto w = tad::var<"w">(ws);
  auto c = tad::constant(cs);
  auto says = [](std::string text, std::size_t expected, std::size_t got) {
    return [=](const tad::shape_error& err) {
      BOOST_TEST(err.expected() == expected);
      BOOST_TEST(err.got() == got);
      BOOST_TEST(std::string(err.what()) == text);
      return std::string(err.what()) == text && err.expected() == expected && err.got() == got;
    };
  };
  BOOST_CHECK_EXCEPTION((void)tad::value(tad::sum(x * w)), tad::shape_error,
                        says("tad: arrays combined elementwise differ in length: variable 'x' has length 5, "
                             "variable 'w' has length 3", 5, 3));
  // The first array is a constant: it is named by its position among the array leaves.
  BOOST_CHECK_EXCEPTION((void)tad::grad(tad::sum(c * w), w), tad::shape_error,
                        says("tad: arrays combined elementwise differ in length: a constant array (array 1 from "
                             "the left) has length 2, variable 'w' has length 3", 2, 3));
  // Leaves x, x, c: the third one differs.
  BOOST_CHECK_EXCEPTION((void)tad::grad(tad::sum(tad::exp(x) * x + c), x), tad::shape_error,
                        says("tad: arrays combined elementwise differ in length: variable 'x' has length 5, "
                             "a constant array (array 3 from the left) has length 2", 5, 2));
}

BOOST_AUTO_TEST_CASE(gradient_buffer_of_wrong_length_throws_before_writing) {
  std::vector<double> xs{1, 2, 3}, gx{7, 7}, out{7, 7};
  auto x = tad::var<"x">(xs);
  BOOST_CHECK_THROW(tad::grad_into(tad::sum(x * x), tad::wrt(x, gx)), tad::shape_error);
  BOOST_TEST(gx == std::vector<double>({7, 7}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(tad::evaluate(x * 2.0, out), tad::shape_error);
  BOOST_TEST(out == std::vector<double>({7, 7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gradient_buffer_overlapping_an_input_throws) {
  std::vector<double> xs{1, 2, 3, 4};
  auto x = tad::var<"x">(std::span<const double>(xs.data(), 3));
  BOOST_CHECK_THROW(tad::grad_into(tad::sum(x * x), tad::wrt(x, std::span<double>(xs.data() + 1, 3))),
                    std::invalid_argument);
  BOOST_TEST(xs == std::vector<double>({1, 2, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(variable_bound_to_other_data_than_the_expression_throws) {
  std::vector<double> xs{1, 2, 3}, other{1, 2, 3};
  auto e = tad::sum(tad::var<"x">(xs));
  BOOST_CHECK_THROW(tad::grad(e, tad::var<"x">(other)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(max_of_empty_array_is_an_error) {
  std::vector<double> xs;
  auto x = tad::var<"x">(xs);
  BOOST_CHECK_THROW(tad::value(tad::max(x)), std::domain_error);
  BOOST_CHECK_THROW(tad::grad(tad::min(x), x), std::domain_error);
  BOOST_TEST(tad::value(tad::sum(x)) == 0.0);
  BOOST_TEST(std::isnan(tad::value(tad::mean(x))));
  BOOST_TEST(tad::value(tad::logsumexp(x)) == -INFINITY);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(evaluate_and_value_of_array_expressions, T, reals) {
  for (std::size_t n : tad_test::lengths) {
    tad_test::buffer<T> xs(n), out(n, 3);
    tad_test::fill_uniform(xs, -2, 2, 3);
    auto x = tad::var<"x">(xs.cspan());
    auto e = tad::exp(x) - tad::mean(x);
    tad::evaluate(e, out.span());
    const std::vector<T> v = tad::value(e);
    double m = 0;
    for (std::size_t i = 0; i < n; ++i) m += double(xs[i]);
    m /= double(n);
    for (std::size_t i = 0; i < n; ++i) {
      BOOST_TEST(tad_test::close(double(out[i]), std::exp(double(xs[i])) - m, 1e-5));
      BOOST_TEST(out[i] == v[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(vjp_is_the_seeded_gradient, T, reals) {
  for (std::size_t n : tad_test::lengths) {
    tad_test::buffer<T> xs(n), seed(n), gx(n);
    tad_test::fill_uniform(xs, -1, 1, 4);
    tad_test::fill_uniform(seed, -1, 1, 5);
    T a = T(0.5), ga = 0;
    auto x = tad::var<"x">(xs.cspan());
    auto s = tad::var<"s">(a);
    auto e = tad::sin(x) * s;  // J = diag(cos(x) s); d/ds = sin(x)
    auto [v, g, gs] = tad::vjp(e, seed.cspan(), x, s);
    tad::vjp_into(e, seed.cspan(), tad::wrt(x, gx.span()), tad::wrt(s, ga));
    double expected_gs = 0, expected_v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      BOOST_TEST(tad_test::close(double(g[i]), double(seed[i]) * std::cos(double(xs[i])) * 0.5, 1e-5));
      BOOST_TEST(g[i] == gx[i]);
      expected_gs += double(seed[i]) * std::sin(double(xs[i]));
      expected_v += double(seed[i]) * std::sin(double(xs[i])) * 0.5;
    }
    BOOST_TEST(tad_test::close(double(gs), expected_gs, 1e-4));
    BOOST_TEST(gs == ga);
    BOOST_TEST(tad_test::close(double(v), expected_v, 1e-4));
  }
  std::vector<T> xs(3), short_seed(2);
  BOOST_CHECK_THROW(tad::vjp(tad::var<"x">(xs) * T(2), short_seed, tad::var<"x">(xs)), tad::shape_error);
}

BOOST_AUTO_TEST_CASE(loop_free_terms_leave_sums_without_changing_values) {
  // sum(a * x - c + log(a)) is computed as a * sum(x) - n c + n log(a): same value and gradient.
  std::vector<double> xs{0.5, -1.5, 2.0, 3.0, 0.25};
  double a = 1.5;
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"a">(a);
  auto e = tad::sum(s * x - 2.0 + tad::log(s));
  auto [v, gx, ga] = tad::grad(e, x, s);
  const double sx = 0.5 - 1.5 + 2.0 + 3.0 + 0.25;
  BOOST_TEST(v == 1.5 * sx - 5 * 2.0 + 5 * std::log(1.5), boost::test_tools::tolerance(1e-14));
  BOOST_TEST(ga == sx + 5 / 1.5, boost::test_tools::tolerance(1e-14));
  for (double g : gx) BOOST_TEST(g == 1.5);
  // The sum of no terms is 0, even of an infinite term (n * inf would be NaN).
  std::vector<double> empty;
  double inf = INFINITY;
  auto e0 = tad::sum(tad::var<"x">(empty) + tad::var<"i">(inf));
  auto [v0, gi] = tad::grad(e0, tad::var<"i">(inf));
  BOOST_TEST(v0 == 0.0);
  BOOST_TEST(gi == 0.0);
  // mean(x + c) = mean(x) + c; of an empty array NaN.
  BOOST_TEST(tad::value(tad::mean(x + 1.0)) == sx / 5 + 1.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(std::isnan(tad::value(tad::mean(tad::var<"x">(empty) + 1.0))));
}

BOOST_AUTO_TEST_SUITE_END()
