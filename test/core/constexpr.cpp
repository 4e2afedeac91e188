// Scalar expressions compute value and gradient in constant evaluation.

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

namespace {

// f(x, y) = x^2 y + 3 x - y / x; df/dx = 2xy + 3 + y/x^2; df/dy = x^2 - 1/x.
constexpr auto poly(double xv, double yv) {
  auto x = tad::var<"x">(xv);
  auto y = tad::var<"y">(yv);
  return tad::grad(tad::square(x) * y + 3.0 * x - y / x, x, y);
}
constexpr auto poly_result = poly(2.0, 5.0);
static_assert(std::get<0>(poly_result) == 4.0 * 5.0 + 6.0 - 2.5);
static_assert(std::get<1>(poly_result) == 2.0 * 2.0 * 5.0 + 3.0 + 5.0 / 4.0);
static_assert(std::get<2>(poly_result) == 4.0 - 0.5);

// Transcendental ops run on tad's constexpr math fallbacks: compare with closed forms.
constexpr bool near(double a, double b) { return (a - b < 0 ? b - a : a - b) <= 1e-12 * (b < 0 ? -b : b) + 1e-300; }
constexpr auto trig() {
  double v = 0.0;
  auto x = tad::var<"x">(v);
  // d/dx [exp(x) * cos(x) + log1p(x)] at 0 = exp(0)(cos 0 - sin 0) + 1 = 2.
  return tad::grad(tad::exp(x) * tad::cos(x) + tad::log1p(x), x);
}
static_assert(std::get<0>(trig()) == 1.0);
static_assert(near(std::get<1>(trig()), 2.0));

// Kinks and masks at compile time: relu'(0) = 0, abs'(0) = 0, where picks a branch.
constexpr double kink_grad(double v) {
  auto x = tad::var<"x">(v);
  auto [val, g] = tad::grad(tad::relu(x) + tad::abs(x) + tad::where(x > 1.0, x * x, -x), x);
  (void)val;
  return g;
}
static_assert(kink_grad(0.0) == -1.0);
static_assert(kink_grad(2.0) == 1.0 + 1.0 + 4.0);
static_assert(kink_grad(-0.5) == 0.0 - 1.0 - 1.0);

// Literals: compile-time constants.
constexpr auto with_literal() {
  auto x = tad::var<"x">(4.0);
  return tad::grad(tad::lit<1, 2> * tad::square(x) + tad::lit<3>, x);
}
static_assert(std::get<0>(with_literal()) == 11.0);
static_assert(std::get<1>(with_literal()) == 4.0);

// Float expressions compute in float.
constexpr auto in_float() {
  auto x = tad::var<"x">(1.5f);
  return tad::grad(x * x * 2.0, x);
}
static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<0>(in_float()))>, float>);
static_assert(std::get<1>(in_float()) == 6.0f);

}  // namespace

BOOST_AUTO_TEST_CASE(constexpr_gradients_also_run_at_run_time) {
  // The same functions at run time give the same numbers (std math at run time).
  const auto r = poly(2.0, 5.0);
  BOOST_TEST(std::get<1>(r) == std::get<1>(poly_result));
  BOOST_TEST(std::get<1>(trig()) == 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(kink_grad(0.0) == -1.0);
}
