// clip_gradient and straight_through (tad/gradient/modifiers.hpp): constexpr gradients, arrays
// at every length in float and double, composition order with scale_gradient, clipping inside a
// multi-pass logsumexp (never run with a provisional unit adjoint), clipped loop invariants,
// NaN/inf gradients, bounds through constant_ref and lo > hi errors that write nothing, and
// straight_through against the trick b + stop_gradient(f - b).
#include <gradient/common.hpp>

#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace {

using tad_test::lengths;
using tad_test::reals;

// ---- structure and constexpr -------------------------------------------------------------------
using X = tad::array_var<"x", double>;
using Y = tad::array_var<"y", double>;
static_assert(tad::gradient_is_zero_v<decltype(tad::straight_through(X{} * X{}, Y{})), X>);
static_assert(!tad::gradient_is_zero_v<decltype(tad::straight_through(X{} * X{}, Y{})), Y>);
static_assert(tad::depends_on_v<decltype(tad::straight_through(X{} * X{}, Y{})), X>);

// Scale inside clip: dy = 1 is clipped to [-1, 2], then scaled: 4. Clip inside scale: 4 clipped: 2.
constexpr double clip_of_scale(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(tad::clip_gradient(tad::scale_gradient(x, 4.0), -1.0, 2.0), x));
}
constexpr double scale_of_clip(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(tad::scale_gradient(tad::clip_gradient(x, -1.0, 2.0), 4.0), x));
}
static_assert(clip_of_scale(3.0) == 4.0);
static_assert(scale_of_clip(3.0) == 2.0);

constexpr auto clipped_square(double v) {  // d/dx = 2x clip(1, lo, hi) = 2x hi with hi = 1/2
  auto x = tad::var<"x">(v);
  return tad::grad(tad::clip_gradient(x * x, tad::lit<-1>, tad::lit<1, 2>), x);
}
static_assert(std::get<0>(clipped_square(3.0)) == 9.0);
static_assert(std::get<1>(clipped_square(3.0)) == 3.0);

constexpr auto rounded(double v) {
  auto x = tad::var<"x">(v);
  return tad::grad(tad::straight_through(tad::round(x), x * x), x);
}
static_assert(std::get<0>(rounded(2.75)) == 3.0);
static_assert(std::get<1>(rounded(2.75)) == 5.5);

}  // namespace

// ---- clip_gradient ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_of_arrays, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    // sum(clip_gradient(x, -1, 1)^2): the adjoint 2x reaching the clip is clipped.
    auto [v, g] = tad::grad(tad::sum(tad::square(tad::clip_gradient(x, -1.0, 1.0))), x);
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return a * a; })), grad_test::tol<T>(), "value");
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return grad_test::clip(2 * a, -1, 1); }), grad_test::tol<T>(), "clip(2x)");
    // Composition order: scale inside clip, clip inside scale.
    auto [v1, g1] = tad::grad(tad::sum(tad::square(tad::clip_gradient(tad::scale_gradient(x, 3.0), -1.0, 1.0))), x);
    grad_test::expect_all(g1, grad_test::map(xb, [](double a) { return 3 * grad_test::clip(2 * a, -1, 1); }), grad_test::tol<T>(), "scale inside clip");
    auto [v2, g2] = tad::grad(tad::sum(tad::square(tad::scale_gradient(tad::clip_gradient(x, tad::lit<-1>, tad::lit<1>), 3.0))), x);
    grad_test::expect_all(g2, grad_test::map(xb, [](double a) { return grad_test::clip(6 * a, -1, 1); }), grad_test::tol<T>(), "clip inside scale");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_bounds_through_constant_ref, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    T lo = T(-1), hi = T(1);
    const auto e = tad::sum(tad::square(tad::clip_gradient(x, tad::constant_ref(lo), tad::constant_ref(hi))));
    for (const auto& b : {std::pair{T(-1), T(1)}, std::pair{T(-0.25), T(3)}, std::pair{T(0.5), T(0.5)}}) {
      lo = b.first;
      hi = b.second;
      auto [v, g] = tad::grad(e, x);
      grad_test::expect_all(g, grad_test::map(xb, [&](double a) { return grad_test::clip(2 * a, b.first, b.second); }), grad_test::tol<T>(), "runtime bounds");
    }
    // lo > hi (or a NaN bound): std::invalid_argument before anything is written.
    for (const auto& b : {std::pair{T(1), T(-1)}, std::pair{std::numeric_limits<T>::quiet_NaN(), T(1)}}) {
      lo = b.first;
      hi = b.second;
      std::vector<T> gx(n, T(7));
      BOOST_CHECK_THROW(tad::grad_into(e, tad::wrt(x, gx)), std::invalid_argument);
      grad_test::expect_all(gx, std::vector<double>(n, 7.0), 0, "nothing written");
      BOOST_CHECK_THROW(tad::value(e), std::invalid_argument);
      std::vector<T> out(n, T(7));
      BOOST_CHECK_THROW(tad::evaluate(tad::clip_gradient(x, tad::constant_ref(lo), tad::constant_ref(hi)), out), std::invalid_argument);
      grad_test::expect_all(out, std::vector<double>(n, 7.0), 0, "nothing evaluated");
    }
  }
  std::vector<T> d{T(1)};
  auto x = tad::var<"x">(d);
  BOOST_CHECK_THROW(tad::clip_gradient(x, 1.0, -1.0), std::invalid_argument);  // plain numbers: at once
  BOOST_CHECK_THROW(tad::clip_gradient(x, tad::lit<1>, -1.0), std::invalid_argument);  // a literal and a number too
  BOOST_CHECK_NO_THROW(tad::clip_gradient(x, 1.0, 1.0));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_in_multipass_and_invariants, T, reals) {
  for (std::size_t n : lengths) {
    if (n == 0) continue;
    auto xb = grad_test::data<T>(n, -3, 3);
    auto x = tad::var<"x">(xb.cspan());
    double m = -1e300, z = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, double(xb[i]));
    for (std::size_t i = 0; i < n; ++i) z += std::exp(double(xb[i]) - m);
    // logsumexp(clip_gradient(x, 0, 0.2)): the softmax, each element clipped to 0.2.
    auto [v, g] = tad::grad(tad::logsumexp(tad::clip_gradient(x, 0.0, 0.2)), x);
    grad_test::expect(v, m + std::log(z), grad_test::tol<T>(), "value");
    grad_test::expect_all(g, grad_test::map(xb, [&](double a) { return grad_test::clip(std::exp(a - m) / z, 0, 0.2); }), grad_test::tol<T>(), "clipped softmax");
    // A clipped scalar is one node: its adjoint sum(x) is clipped once.
    T sv = T(0.5);
    auto s = tad::var<"s">(sv);
    auto [v2, gs] = tad::grad(tad::sum(tad::clip_gradient(s, -1.0, 1.0) * x), s);
    grad_test::expect(gs, grad_test::clip(grad_test::total(xb), -1, 1), grad_test::tol<T>(), "clipped invariant");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_nan_and_inf, T, reals) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto cb = grad_test::data<T>(n, -3, 3, 11);
    if (n > 0) cb[0] = nan;
    if (n > 1) cb[1] = inf;
    if (n > 2) cb[2] = -inf;
    auto x = tad::var<"x">(xb.cspan());
    // The adjoint reaching the clip is c: NaN stays NaN, +-inf become the bounds.
    auto [v, g] = tad::grad(tad::sum(tad::clip_gradient(x, -1.0, 1.0) * tad::constant(cb.cspan())), x);
    grad_test::expect_all(g, grad_test::map(cb, [](double c) { return std::isnan(c) ? c : grad_test::clip(c, -1, 1); }), 0, "clip of c");
    // Infinite bounds clip nothing.
    auto [v2, g2] = tad::grad(tad::sum(tad::clip_gradient(x, -inf, inf) * tad::constant(cb.cspan())), x);
    grad_test::expect_all(g2, grad_test::map(cb, [](double c) { return c; }), 0, "unbounded");
  }
}

// ---- straight_through -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(straight_through_of_arrays, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    // round forward, identity backward
    auto [v, g] = tad::grad(tad::sum(tad::straight_through(tad::round(x), x)), x);
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return std::nearbyint(a); })), grad_test::tol<T>(), "value");
    grad_test::expect_all(g, std::vector<double>(n, 1.0), 0, "identity");
    // sign forward, clipped identity backward: d/dx sum(st^2) = 2 sign(x) [|x| <= 1]
    const auto st = tad::straight_through(tad::sign(x), tad::clamp(x, -1.0, 1.0));
    const auto want = grad_test::map(xb, [](double a) { return std::abs(a) <= 1 ? 2.0 * (a > 0 ? 1 : a < 0 ? -1 : 0) : 0.0; });
    auto [v2, g2] = tad::grad(tad::sum(tad::square(st)), x);
    grad_test::expect_all(g2, want, 0, "clipped identity");
    // The trick b + stop_gradient(f - b): the same gradient, the same value up to rounding.
    const auto b = tad::clamp(x, -1.0, 1.0);
    auto [v3, g3] = tad::grad(tad::sum(tad::square(b + tad::stop_gradient(tad::sign(x) - b))), x);
    grad_test::expect(v3, v2, grad_test::tol<T>(), "trick value");
    grad_test::expect_all(g3, want, grad_test::tol<T>(), "trick gradient");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(straight_through_scalars_and_reductions, T, reals) {
  for (std::size_t n : lengths) {
    if (n == 0) continue;
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    T sv = T(2.25);
    auto s = tad::var<"s">(sv);
    // value floor(s) * sum(x), gradient as if s * sum(x); max forward with a mean's gradient.
    auto [v, gx, gs] = tad::grad(tad::straight_through(tad::floor(s), s) * tad::sum(x) +
                                     tad::straight_through(tad::max(x), tad::mean(x)), x, s);
    double mx = -1e300;
    for (std::size_t i = 0; i < n; ++i) mx = std::max(mx, double(xb[i]));
    grad_test::expect(v, 2 * grad_test::total(xb) + mx, grad_test::tol<T>(), "value");
    grad_test::expect(gs, grad_test::total(xb), grad_test::tol<T>(), "d/ds");
    grad_test::expect_all(gx, std::vector<double>(n, 2.0 + 1.0 / double(n)), grad_test::tol<T>(), "d/dx");
  }
}

// The trick with b made of variables only is built as straight_through: value f exactly.
using TrickX = tad::array_var<"x", double>;
static_assert(std::is_same_v<decltype(TrickX{} + tad::stop_gradient(tad::round(TrickX{}) - TrickX{})),
                             decltype(tad::straight_through(tad::round(TrickX{}), TrickX{}))>);
static_assert(std::is_same_v<decltype(tad::stop_gradient(tad::round(TrickX{}) - TrickX{}) + TrickX{}),
                             decltype(tad::straight_through(tad::round(TrickX{}), TrickX{}))>);

BOOST_AUTO_TEST_CASE_TEMPLATE(straight_through_trick_is_exact_for_variables, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -3, 3);
    if (n > 2) xb[2] = T(1e7);  // b + (f - b) would lose f's low bits here in float
    auto x = tad::var<"x">(xb.cspan());
    std::vector<T> out(n);
    tad::evaluate(x + tad::stop_gradient(tad::round(x) - x), out);
    grad_test::expect_all(out, grad_test::map(xb, [](double a) { return double(T(std::nearbyint(a))); }), 0, "value is round(x)");
    auto [v, g] = tad::grad(tad::sum(tad::square(tad::stop_gradient(tad::round(x) - x) + x)), x);
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return 2 * std::nearbyint(a); }), grad_test::tol<T>(), "2 round(x)");
  }
}
