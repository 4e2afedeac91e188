// override_gradients (tad/gradient/override.hpp): the seed's identity examples, rules on unary
// and binary ops for arrays at every length in float and double, scope (the same op outside
// keeps its rule; an inner scope wins), an override inside a multi-pass expression, a gradient
// given to a piecewise-constant op (round: the straight-through estimator), parameters and
// evaluation-time checks of the overridden op kept, and constexpr gradients.
#include <gradient/common.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <cmath>
#include <stdexcept>

namespace {

namespace hana = boost::hana;
using tad_test::lengths;
using tad_test::reals;

constexpr auto times5 = [](auto dy, auto, auto) { return 5 * dy; };
constexpr auto clip01 = [](auto dy, auto, auto) {
  using D = decltype(dy);
  return tad::simd::select(dy < D(-0.1), D(-0.1), tad::simd::select(dy > D(0.1), D(0.1), dy));
};
constexpr auto identity5 = hana::make_map(hana::make_pair(hana::type_c<tad::identity_op>, times5));
constexpr auto identity_clip = hana::make_map(hana::make_pair(hana::type_c<tad::identity_op>, clip01));

constexpr auto at3(auto rules) {
  double v = 3;
  auto x = tad::var<"x">(v);
  return tad::grad(tad::override_gradients(tad::identity(x), rules), x);
}
static_assert(std::get<0>(at3(identity5)) == 3.0);
static_assert(std::get<1>(at3(identity5)) == 5.0);
static_assert(std::get<1>(at3(identity_clip)) == 0.1);

// Scope: identity outside the override keeps gradient 1: 5 + 1.
constexpr double scoped(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(tad::override_gradients(tad::identity(x), identity5) + tad::identity(x), x));
}
static_assert(scoped(3.0) == 6.0);

// Nested scopes: the inner rule (clip) wins for its node; the outer (x5) applies to the rest.
constexpr double nested(double v) {
  auto x = tad::var<"x">(v);
  auto inner = tad::override_gradients(tad::identity(x), identity_clip);
  return std::get<1>(tad::grad(tad::override_gradients(inner + tad::identity(x), identity5), x));
}
static_assert(nested(3.0) == 0.1 + 5.0);

// The overridden op keeps its forward and its structure.
using X = tad::array_var<"x", double>;
using OX = decltype(tad::override_gradients(tad::exp(X{}), hana::make_map(hana::make_pair(hana::type_c<tad::exp_op>, times5))));
static_assert(std::is_same_v<typename OX::op_type::base_op, tad::exp_op>);
static_assert(tad::is_array_v<OX>);
// A rule may give an input a structural zero.
constexpr auto no_rhs = hana::make_map(hana::make_pair(
    hana::type_c<tad::mul_op>, [](auto dy, auto, auto b, auto) { return tad::adjoints{dy * b, tad::zero{}}; }));
using Y = tad::array_var<"y", double>;
static_assert(tad::gradient_is_zero_v<decltype(tad::override_gradients(X{} * Y{}, no_rhs)), Y>);
static_assert(!tad::gradient_is_zero_v<decltype(tad::override_gradients(X{} * Y{}, no_rhs)), X>);
static_assert(!tad::gradient_is_zero_v<decltype(tad::override_gradients(X{} * Y{}, no_rhs) + Y{}), Y>);

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(override_unary_and_binary_ops_on_arrays, T, reals) {
  // exp with the rule 2 dy y; mul with a rule that passes dy to a only.
  const auto exp2 = hana::make_map(hana::make_pair(hana::type_c<tad::exp_op>, [](auto dy, auto, auto y) { return 2 * dy * y; }));
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto yb = grad_test::data<T>(n, -1, 1, 5);
    auto x = tad::var<"x">(xb.cspan());
    auto y = tad::var<"y">(yb.cspan());
    const double tol = grad_test::tol<T>();
    // Two exp nodes (per_use: without it, two copies of one overridden node are a compile error).
    auto [v, g] = tad::grad(tad::sum(tad::override_gradients(tad::per_use(tad::exp(x)) * tad::per_use(tad::exp(x)), exp2)), x);
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return std::exp(2 * a); })), tol, "value");
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return 4 * std::exp(2 * a); }), tol, "2 dy y, twice");
    // Only the exp inside the scope is overridden: d/dx [exp(x) exp(x)] = exp(2x) (2 + 1).
    auto [v2, g2] = tad::grad(tad::sum(tad::override_gradients(tad::exp(x), exp2) * tad::exp(x)), x);
    grad_test::expect_all(g2, grad_test::map(xb, [](double a) { return 3 * std::exp(2 * a); }), tol, "scoped");
    // x * y with no gradient to y; y also appears outside the scope.
    auto [v3, gx, gy] = tad::grad(tad::sum(tad::override_gradients(x * y, no_rhs) + y * y), x, y);
    grad_test::expect_all(gx, grad_test::map(yb, [](double b) { return b; }), tol, "d/dx");
    grad_test::expect_all(gy, grad_test::map(yb, [](double b) { return 2 * b; }), tol, "d/dy: outside only");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(override_in_multipass_and_piecewise_constant, T, reals) {
  const auto exp2 = hana::make_map(hana::make_pair(hana::type_c<tad::exp_op>, [](auto dy, auto, auto y) { return 2 * dy * y; }));
  const auto round_ste = hana::make_map(hana::make_pair(hana::type_c<tad::round_op>, [](auto dy, auto, auto) { return dy; }));
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -3, 3);
    auto x = tad::var<"x">(xb.cspan());
    const double tol = grad_test::tol<T>();
    if (n > 0) {
      // log(sum(exp(x))) with exp's rule doubled: twice the softmax (a rule that is linear in
      // dy, but the engine cannot know: no pass runs it with a provisional unit adjoint).
      double z = 0;
      for (std::size_t i = 0; i < n; ++i) z += std::exp(double(xb[i]));
      auto [v, g] = tad::grad(tad::log(tad::sum(tad::override_gradients(tad::exp(x), exp2))), x);
      grad_test::expect(v, std::log(z), tol, "value");
      grad_test::expect_all(g, grad_test::map(xb, [&](double a) { return 2 * std::exp(a) / z; }), tol, "2 softmax");
    }
    // round has no gradient; overridden with the identity it is the straight-through estimator.
    auto [v2, g2] = tad::grad(tad::sum(tad::square(tad::override_gradients(tad::round(x), round_ste))), x);
    grad_test::expect(v2, grad_test::total(grad_test::map(xb, [](double a) { return std::nearbyint(a) * std::nearbyint(a); })), tol, "round value");
    grad_test::expect_all(g2, grad_test::map(xb, [](double a) { return 2 * std::nearbyint(a); }), tol, "2 round(x)");
    auto [v3, g3] = tad::grad(tad::sum(tad::square(tad::straight_through(tad::round(x), x))), x);
    grad_test::expect_all(g3, grad_test::map(xb, [](double a) { return 2 * std::nearbyint(a); }), tol, "same as straight_through");
  }
}

BOOST_AUTO_TEST_CASE(override_keeps_parameters_and_checks) {
  // clip_gradient overridden with a rule of its own: its bounds are still validated.
  std::vector<double> xb{1, 2, 3};
  auto x = tad::var<"x">(xb);
  double lo = -1, hi = 1;
  const auto twice = hana::make_map(hana::make_pair(
      hana::type_c<tad::clip_gradient_op>, [](auto dy, auto, auto, auto, auto) { return tad::adjoints{2 * dy, tad::zero{}, tad::zero{}}; }));
  const auto e = tad::sum(tad::square(tad::override_gradients(tad::clip_gradient(x, tad::constant_ref(lo), tad::constant_ref(hi)), twice)));
  auto [v, g] = tad::grad(e, x);
  BOOST_TEST(v == 14.0);
  BOOST_TEST(g[2] == 12.0);
  lo = 2;
  BOOST_CHECK_THROW(tad::grad(e, x), std::invalid_argument);
  // A scale parameter travels with the overridden op: scale_gradient(x, 3) then x2 by the rule
  // is ignored (the rule replaces the op's backward): the gradient is 2 * dy.
  const auto scale_rule = hana::make_map(hana::make_pair(
      hana::type_c<tad::scale_gradient_op>, [](auto dy, auto, auto, auto) { return tad::adjoints{2 * dy, tad::zero{}}; }));
  auto [v2, g2] = tad::grad(tad::sum(tad::override_gradients(tad::scale_gradient(x, 3.0), scale_rule)), x);
  BOOST_TEST(v2 == 6.0);
  BOOST_TEST(g2[1] == 2.0);
}
