// stop_gradient, scale_gradient, reverse_gradient and reversal_strength
// (tad/gradient/modifiers.hpp, tad/gradient/schedule.hpp): structural traits, constexpr
// gradients, arrays at every length in float and double, scalar variables, runtime parameters
// through constant_ref, modifiers inside multi-pass expressions, and inf/NaN semantics.
#include <gradient/common.hpp>

#include <limits>
#include <stdexcept>
#include <type_traits>

namespace {

using tad_test::lengths;
using tad_test::reals;

// ---- structure -------------------------------------------------------------------------------
using X = tad::array_var<"x", double>;
using S = tad::scalar_var<"s", double>;
static_assert(std::is_same_v<decltype(tad::stop_gradient(X{})), tad::stop_gradient_t<X>>);
static_assert(std::is_same_v<tad::stop_gradient_t<X>, tad::node<tad::stop_gradient_op, X>>);
static_assert(tad::gradient_is_zero_v<tad::stop_gradient_t<X>, X>);
static_assert(tad::depends_on_v<tad::stop_gradient_t<X>, X>);
static_assert(tad::gradient_is_zero_v<decltype(tad::sum(tad::stop_gradient(X{} * S{}))), S>);
static_assert(!tad::gradient_is_zero_v<decltype(tad::sum(X{} * tad::stop_gradient(S{}))), X>);
static_assert(tad::gradient_is_zero_v<decltype(tad::sum(X{} * tad::stop_gradient(S{}))), S>);
static_assert(!tad::gradient_is_zero_v<decltype(tad::scale_gradient(S{}, 0.0)), S>);
static_assert(tad::gradient_is_zero_v<decltype(tad::scale_gradient(tad::stop_gradient(S{}), 2.0)), S>);

// ---- constexpr -------------------------------------------------------------------------------
constexpr auto scaled_square(double v, double k) {
  auto x = tad::var<"x">(v);
  return tad::grad(tad::scale_gradient(x * x, k), x);
}
static_assert(std::get<0>(scaled_square(3.0, 5.0)) == 9.0);
static_assert(std::get<1>(scaled_square(3.0, 5.0)) == 30.0);
static_assert(std::get<1>(scaled_square(3.0, 0.0)) == 0.0);

constexpr double reversed_square(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(tad::reverse_gradient(x * x, tad::lit<1, 2>) + x, x));
}
static_assert(reversed_square(3.0) == -3.0 + 1.0);

constexpr auto half_stopped(double v) {
  auto x = tad::var<"x">(v);
  return tad::grad(x * tad::stop_gradient(x) + tad::stop_gradient(tad::exp(x)), x);
}
static_assert(std::get<1>(half_stopped(3.0)) == 3.0);
static_assert(std::get<1>(half_stopped(-2.0)) == -2.0);

static_assert(tad::reversal_strength(0.0) == 0.0);
static_assert(tad::reversal_strength(1.0) > 0.9999 && tad::reversal_strength(1.0) < 1.0);
static_assert(std::is_same_v<decltype(tad::reversal_strength(0.5f)), float>);

}  // namespace

// ---- arrays ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(scale_gradient_of_arrays, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    // d/dx sum(scale_gradient(x * x, k)) = 2 k x
    auto [v, g] = tad::grad(tad::sum(tad::scale_gradient(x * x, 3.0)), x);
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return a * a; })), grad_test::tol<T>(), "value");
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return 6 * a; }), grad_test::tol<T>(), "scale 3");
    // reverse_gradient with a literal: -lambda 2 x
    auto [v2, g2] = tad::grad(tad::sum(tad::square(tad::reverse_gradient(x, tad::lit<1, 4>))), x);
    grad_test::expect(v2, v, grad_test::tol<T>(), "reversed value");
    grad_test::expect_all(g2, grad_test::map(xb, [](double a) { return -0.5 * a; }), grad_test::tol<T>(), "reverse 1/4");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(stop_gradient_of_arrays, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    auto [v, g] = tad::grad(tad::sum(x * tad::stop_gradient(x)), x);  // gradient x, not 2x
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return a * a; })), grad_test::tol<T>(), "value");
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return a; }), grad_test::tol<T>(), "x * stop(x)");
    // Nothing reaches x: the gradient buffer is still written, with zeros.
    std::vector<T> gz(n, T(7));
    tad::grad_into(tad::sum(tad::stop_gradient(tad::exp(x))), tad::wrt(x, gz));
    grad_test::expect_all(gz, std::vector<double>(n, 0.0), 0, "sum(stop(exp(x)))");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(scalar_variables_inside_loops, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    T sv = T(1.5);
    auto x = tad::var<"x">(xb.cspan());
    auto s = tad::var<"s">(sv);
    // s * x per element, scaled by -2: d/ds = -2 sum x; a scaled loop invariant: d/ds = 4 n.
    auto [v, gx, gs] = tad::grad(tad::sum(tad::scale_gradient(s * x, -2.0)) + tad::sum(x * 0.0 + tad::scale_gradient(s, 4.0)), x, s);
    grad_test::expect(v, 1.5 * grad_test::total(xb) + 1.5 * double(n), grad_test::tol<T>(), "value");
    grad_test::expect(gs, -2 * grad_test::total(xb) + 4.0 * double(n), grad_test::tol<T>(), "d/ds");
    grad_test::expect_all(gx, std::vector<double>(n, -2 * 1.5), grad_test::tol<T>(), "d/dx");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(runtime_parameter_through_constant_ref, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    T k = T(2);
    const auto e = tad::sum(tad::scale_gradient(tad::square(x), tad::constant_ref(k)));
    const auto r = tad::sum(tad::reverse_gradient(tad::square(x), tad::constant_ref(k)));
    for (T kv : {T(2), T(-0.5), T(0)}) {
      k = kv;  // no rebuild
      auto [v, g] = tad::grad(e, x);
      grad_test::expect_all(g, grad_test::map(xb, [&](double a) { return 2 * double(kv) * a; }), grad_test::tol<T>(), "scale by k");
      auto [vr, gr] = tad::grad(r, x);
      grad_test::expect(vr, v, grad_test::tol<T>(), "value");
      grad_test::expect_all(gr, grad_test::map(xb, [&](double a) { return -2 * double(kv) * a; }), grad_test::tol<T>(), "reverse by k");
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers_inside_multipass_expressions, T, reals) {
  for (std::size_t n : lengths) {
    if (n == 0) continue;
    auto xb = grad_test::data<T>(n, -3, 3);
    auto x = tad::var<"x">(xb.cspan());
    double m = -1e300, z = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, double(xb[i]));
    for (std::size_t i = 0; i < n; ++i) z += std::exp(double(xb[i]) - m);
    // logsumexp(scale_gradient(x, 2)): gradient 2 softmax(x)
    auto [v, g] = tad::grad(tad::logsumexp(tad::scale_gradient(x, 2.0)), x);
    grad_test::expect(v, m + std::log(z), grad_test::tol<T>(), "logsumexp value");
    grad_test::expect_all(g, grad_test::map(xb, [&](double a) { return 2 * std::exp(a - m) / z; }), grad_test::tol<T>(), "2 softmax");
    // sum((scale_gradient(x, k) - mean(x))^2): k 2 (x - mean) (the mean's own term sums to 0)
    const double mu = grad_test::total(xb) / double(n);
    auto [v2, g2] = tad::grad(tad::sum(tad::square(tad::scale_gradient(x, 3.0) - tad::mean(x))), x);
    grad_test::expect_all(g2, grad_test::map(xb, [&](double a) { return 6 * (a - mu); }), 10 * grad_test::tol<T>(), "centred");
    // A modifier above the reductions: scale_gradient(sum(x), k) * mean(x)
    auto [v3, g3] = tad::grad(tad::scale_gradient(tad::sum(x), -1.0) * tad::mean(x), x);
    const double sx = grad_test::total(xb);
    grad_test::expect(v3, sx * mu, 10 * grad_test::tol<T>(), "product value");
    grad_test::expect_all(g3, std::vector<double>(n, -mu + sx / double(n)), 10 * grad_test::tol<T>(), "above reductions");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(infinite_gradients, T, reals) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t n : lengths) {
    if (n == 0) continue;
    auto xb = grad_test::data<T>(n, 1, 2);
    xb[n / 2] = T(0);  // sqrt'(0) = inf
    auto x = tad::var<"x">(xb.cspan());
    std::vector<double> want(n, 0.0);
    want[n / 2] = double(nan);  // 0 * inf
    auto [v, g] = tad::grad(tad::sum(tad::sqrt(tad::scale_gradient(x, 0.0))), x);
    grad_test::expect_all(g, want, 0, "scale by 0 of inf");
    auto [v2, g2] = tad::grad(tad::sum(tad::sqrt(tad::reverse_gradient(x, tad::lit<0>))), x);
    grad_test::expect_all(g2, want, 0, "reverse by 0 of inf");
    auto [v3, g3] = tad::grad(tad::sum(tad::sqrt(tad::scale_gradient(x, 2.0))), x);
    BOOST_TEST(g3[n / 2] == inf);
    // stop_gradient: the infinite derivative is never computed, so no NaN either.
    auto [v4, g4] = tad::grad(tad::sum(x + tad::stop_gradient(tad::sqrt(x))), x);
    grad_test::expect_all(g4, std::vector<double>(n, 1.0), 0, "stop of inf");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(no_backward_below_a_cut, T, reals) {
  // A reduction whose adjoint is a structural zero runs no backward (semantics.md: stop_gradient
  // is exactly 0 even where f' is inf or NaN). norm's gradient x / norm(x) at x = (inf, 1, 2, 3)
  // is NaN at inf (inf / inf), its finite elements 0; logsumexp's along a row of -inf is
  // 0 * exp(-inf - (-inf)) = NaN. Below stop_gradient, straight_through's value side or a
  // custom rule's tad::zero, none of that may reach a gradient.
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> xs{inf, 1, 2, 3};
  auto x = tad::var<"x">(xs);
  const auto stopped = tad::stop_gradient(tad::norm(x)) + tad::sum(x);
  // norm's forward and sum's fused pass are one loop: nothing runs backward through norm.
  static_assert(tad::passes_v<decltype(stopped), decltype(x)> == 1);
  const auto [v, g] = tad::grad(stopped, x);
  BOOST_TEST(v == inf);
  grad_test::expect_all(g, std::vector<double>(4, 1.0), 0, "stop_gradient(norm(x)) + sum(x)");
  // Reached only through the cut: exact zeros, also over a buffer that held something.
  std::vector<T> gx(4, T(7));
  const T v2 = tad::grad_into(tad::stop_gradient(tad::norm(x)), tad::wrt(x, gx));
  BOOST_TEST(v2 == inf);
  grad_test::expect_all(gx, std::vector<double>(4, 0.0), 0, "stop_gradient(norm(x)) alone");
  const auto [v3, g3] = tad::grad(tad::straight_through(tad::norm(x), tad::sum(x)), x);
  BOOST_TEST(v3 == inf);
  grad_test::expect_all(g3, std::vector<double>(4, 1.0), 0, "straight_through(norm(x), sum(x))");
  const auto first_only = tad::custom_gradient([](auto a, auto b) { return a + b; },
                                               [](auto dy, auto, auto, auto) { return tad::adjoints{tad::zero{}, dy}; });
  const auto [v4, g4] = tad::grad(first_only(tad::norm(x), tad::sum(x)), x);
  BOOST_TEST(v4 == inf);
  grad_test::expect_all(g4, std::vector<double>(4, 1.0), 0, "custom rule {zero, dy} over norm(x)");
  // Along rows: a 3 x 4 matrix of -inf; exp's gradient there is exp(-inf) = 0.
  std::vector<T> ys(12, -inf);
  auto Y = tad::var<"Y">(ys.data(), 3, 4);
  const auto [v5, g5] = tad::grad(tad::stop_gradient(tad::sum(tad::logsumexp(Y, tad::axis<1>))) + tad::sum(tad::exp(Y)), Y);
  BOOST_TEST((std::isinf(v5) && v5 < 0));
  grad_test::expect_all(std::vector<T>(g5.begin(), g5.end()), std::vector<double>(12, 0.0), 0,
                        "stop_gradient(sum(logsumexp(Y, axis<1>))) + sum(exp(Y))");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_cut_does_not_stop_fusion, T, reals) {
  // The product sum(x) * sum(square(x)) would need both values before either adjoint is known,
  // but below a cut no adjoint flows into it, so sum(exp(x))'s loop runs forward and backward
  // fused: one pass, as with stop_gradient. (The fusion test once looked through
  // straight_through's value side and a rule's tad::zero: two passes.)
  std::vector<T> xs{T(0.5), 1, 2, 3};
  T sv = T(0.7);
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"s">(sv);
  const auto product = tad::sum(x) * tad::sum(tad::square(x));
  const auto first_only = tad::custom_gradient([](auto a, auto b) { return a + b; },
                                               [](auto dy, auto, auto, auto) { return tad::adjoints{tad::zero{}, dy}; });
  const auto through = tad::straight_through(product, s) + tad::sum(tad::exp(x));
  const auto ruled = first_only(product, s) + tad::sum(tad::exp(x));
  const auto stopped = tad::stop_gradient(product) + tad::sum(tad::exp(x));
  static_assert(tad::passes_v<decltype(through), decltype(x), decltype(s)> == 1);
  static_assert(tad::passes_v<decltype(ruled), decltype(x), decltype(s)> == 1);
  static_assert(tad::passes_v<decltype(stopped), decltype(x), decltype(s)> == 1);
  // sum(x) = 6.5, sum(square(x)) = 14.25; d/dx is exp(x) alone, d/ds is 1.
  std::vector<double> ex;
  double sum_exp = 0;
  for (T xi : xs) {
    ex.push_back(std::exp(double(xi)));
    sum_exp += ex.back();
  }
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  {
    const auto [v, gx, gs] = tad::grad(through, x, s);
    grad_test::expect(v, 6.5 * 14.25 + sum_exp, tol, "straight_through value");
    grad_test::expect_all(gx, ex, tol, "straight_through dx");
    grad_test::expect(gs, 1.0, 0, "straight_through ds");
  }
  {
    const auto [v, gx, gs] = tad::grad(ruled, x, s);
    grad_test::expect(v, 0.7 + 6.5 * 14.25 + sum_exp, tol, "custom rule value");
    grad_test::expect_all(gx, ex, tol, "custom rule dx");
    grad_test::expect(gs, 1.0, 0, "custom rule ds");
  }
}

BOOST_AUTO_TEST_CASE(reversal_strength_schedule) {
  for (double p : {0.0, 0.1, 0.25, 0.5, 0.75, 1.0}) {
    grad_test::expect(tad::reversal_strength(p), std::tanh(5 * p), 1e-15, "gamma 10");
    grad_test::expect(tad::reversal_strength(p, 4.0), std::tanh(2 * p), 1e-15, "gamma 4");
    grad_test::expect(tad::reversal_strength(float(p)), std::tanh(5 * p), 1e-6, "float");
  }
  BOOST_CHECK_THROW(tad::reversal_strength(-0.01), std::invalid_argument);
  BOOST_CHECK_THROW(tad::reversal_strength(1.01), std::invalid_argument);
  BOOST_CHECK_THROW(tad::reversal_strength(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
}
