// custom_gradient and apply<Op> (tad/gradient/custom.hpp, tad/ops/primitive.hpp): rules equal
// to the true derivative against central differences (arrays at every length, scalars, float
// and double, unaligned), modified rules against their formulas, rules that read x and y,
// multi-input rules with a structural zero, nesting, custom gradients inside reductions,
// multi-pass expressions and loop invariants, runtime parameters captured by reference, and
// constexpr gradients.
#include <gradient/common.hpp>
#include <support/gradient_check.hpp>

#include <cmath>
#include <type_traits>

namespace {

using tad_test::lengths;
using tad_test::reals;
using tad_test::gradient_check::arr;
using tad_test::gradient_check::check_gradient;
using tad_test::gradient_check::check_scalar;
using tad_test::gradient_check::scal;

// log(1 + e^x), stable for large |x|, with the rule sigmoid(x) written through y: 1 - e^-y.
constexpr auto log1pexp = tad::custom_gradient(
    [](auto x) { return tad::max(x, 0.0) + tad::log1p(tad::exp(-tad::abs(x))); },
    [](auto dy, auto, auto y) { return dy * -tad::math::expm1(-y); });

// a * sin(b) with both adjoints.
constexpr auto a_sin_b = tad::custom_gradient(
    [](auto a, auto b) { return a * tad::sin(b); },
    [](auto dy, auto a, auto b, auto) { return tad::adjoints{dy * tad::math::sin(b), dy * a * tad::math::cos(b)}; });

// a * b + c, where c gets no gradient (a structural zero).
constexpr auto fma_no_c = tad::custom_gradient(
    [](auto a, auto b, auto c) { return a * b + c; },
    [](auto dy, auto a, auto b, auto, auto) { return tad::adjoints{dy * b, dy * a, tad::zero{}}; });

// The identity whose backward is 5 dy, and one whose backward is clip(dy, -0.1, 0.1).
constexpr auto times5 = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) { return 5 * dy; });
constexpr auto clipped = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) {
  using D = decltype(dy);
  const D c = D(1) / D(10);  // 0.1 in dy's precision
  return tad::simd::select(dy < -c, -c, tad::simd::select(dy > c, c, dy));
});

// A user primitive through apply<Op>: the same log1pexp as an op type.
struct log1pexp_op {
  static constexpr std::string_view name = "log1pexp";
  static constexpr auto forward(auto x) {
    using V = decltype(x);
    return tad::math::max(x, V(0)) + tad::math::log1p(tad::math::exp(-tad::math::abs(x)));
  }
  static constexpr auto backward(auto dy, auto x, auto) { return dy * tad::math::sigmoid(x); }
};
static_assert(log1pexp_op::name == "log1pexp");
template <class X>
constexpr auto log1pexp_p(const X& x) {
  return tad::apply<log1pexp_op>(x);
}

// ---- structure and constexpr -----------------------------------------------------------------
using XA = tad::array_var<"x", double>;
using YA = tad::array_var<"y", double>;
using ZA = tad::array_var<"z", double>;
using FMA = decltype(fma_no_c(XA{}, YA{}, ZA{}));
static_assert(!tad::gradient_is_zero_v<FMA, XA>);
static_assert(!tad::gradient_is_zero_v<FMA, YA>);
static_assert(tad::gradient_is_zero_v<FMA, ZA>);
static_assert(tad::depends_on_v<FMA, ZA>);
static_assert(tad::is_array_v<FMA>);

constexpr auto grad_at(auto cg, double v) {
  auto x = tad::var<"x">(v);
  return tad::grad(cg(x), x);
}
static_assert(std::get<0>(grad_at(times5, 3.0)) == 3.0);
static_assert(std::get<1>(grad_at(times5, 3.0)) == 5.0);
static_assert(std::get<1>(grad_at(clipped, 3.0)) == 0.1);
static_assert(times5(3.0) == 3.0);  // applied to numbers: the forward value

constexpr auto both(double u, double v) {
  auto a = tad::var<"a">(u);
  auto b = tad::var<"b">(v);
  return tad::grad(fma_no_c(a, b, a * a), a, b);  // c = a^2 gets no gradient
}
static_assert(std::get<0>(both(2.0, 3.0)) == 10.0);
static_assert(std::get<1>(both(2.0, 3.0)) == 3.0);
static_assert(std::get<2>(both(2.0, 3.0)) == 2.0);

// Nested: a custom gradient inside another's forward (its rule is not used: the outer rule
// replaces the forward's derivative) and inside another's backward (as a function of numbers).
constexpr auto outer = tad::custom_gradient([](auto x) { return times5(x) * x; },
                                            [](auto dy, auto x, auto) { return dy * times5(x) * 3; });
static_assert(std::get<0>(grad_at(outer, 2.0)) == 4.0);
static_assert(std::get<1>(grad_at(outer, 2.0)) == 6.0);
// Chained: times5(times5(x)) = x with gradient 25.
constexpr double chained(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(times5(times5(x) * 2), x));
}
static_assert(chained(1.5) == 50.0);

constexpr double primitive_grad(double v) {
  auto x = tad::var<"x">(v);
  return std::get<1>(tad::grad(log1pexp_p(x), x));
}
static_assert(primitive_grad(0.0) == 0.5);

}  // namespace

// ---- rules equal to the true derivative: central differences ----------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(custom_gradient_matches_central_differences, T, reals) {
  check_scalar<T>("log1pexp", [](auto x) { return log1pexp(x); },
                  [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }, 8,
                  scal{-20, 20, false});
  check_scalar<T>("a sin b", [](auto a, auto b) { return a_sin_b(a, b); },
                  [](auto a, auto b) { return a * std::sin(b); }, 4, scal{-2, 2}, scal{-3, 3});
  check_scalar<T>("primitive log1pexp", [](auto x) { return log1pexp_p(x); },
                  [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }, 8,
                  scal{-20, 20, false});
  for (std::size_t n : lengths) {
    check_gradient<T>("sum(log1pexp(x))", n, [](auto x) { return tad::sum(log1pexp(x)); }, arr{-20, 20});
    check_gradient<T>("sum(a sin b)", n, [](auto a, auto b) { return tad::sum(a_sin_b(a, b)); }, arr{-2, 2}, arr{-3, 3});
    check_gradient<T>("sum(a sin b), scalar a", n, [](auto a, auto b) { return tad::sum(a_sin_b(a, b)); }, scal{-2, 2}, arr{-3, 3});
    check_gradient<T>("sum(a sin b), scalar b", n, [](auto a, auto b) { return tad::sum(a_sin_b(a, b)); }, arr{-2, 2}, scal{-3, 3});
    check_gradient<T>("sum(log1pexp primitive)", n, [](auto x) { return tad::sum(log1pexp_p(x)); }, arr{-20, 20});
    if (n == 0) continue;  // (the mean of no elements is NaN)
    check_gradient<T>("mean(log1pexp(x * y))", n, [](auto x, auto y) { return tad::mean(log1pexp(x * y)); },
                      arr{-3, 3}, scal{0.5, 2});
    // Multi-pass: inside logsumexp, and a reduction as the input of a custom gradient.
    check_gradient<T>("logsumexp(log1pexp(x))", n, [](auto x) { return tad::logsumexp(log1pexp(x)); }, arr{-3, 3});
    check_gradient<T>("sum(a_sin_b(x, mean(x)))", n, [](auto x) { return tad::sum(a_sin_b(x, tad::mean(x))); }, arr{-2, 2});
    check_gradient<T>("log1pexp(sum(x)) * sum(x)", n, [](auto x) { return log1pexp(tad::sum(x) / 100) * tad::sum(x); },
                      arr{-2, 2});
  }
}

// ---- modified rules: formulas -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(custom_rules_of_arrays, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto yb = grad_test::data<T>(n, 0.5, 2, 5);
    auto zb = grad_test::data<T>(n, -1, 1, 9);
    auto x = tad::var<"x">(xb.cspan());
    auto y = tad::var<"y">(yb.cspan());
    auto z = tad::var<"z">(zb.cspan());
    const double tol = grad_test::tol<T>();
    // sum(times5(x)^2): 2x, times 5.
    auto [v, g] = tad::grad(tad::sum(tad::square(times5(x))), x);
    grad_test::expect(v, grad_test::total(grad_test::map(xb, [](double a) { return a * a; })), tol, "value");
    grad_test::expect_all(g, grad_test::map(xb, [](double a) { return 10 * a; }), tol, "5 dy");
    // sum(clipped(x)^2): clip(2x, -0.1, 0.1).
    auto [v2, g2] = tad::grad(tad::sum(tad::square(clipped(x))), x);
    grad_test::expect_all(g2, grad_test::map(xb, [](double a) { return grad_test::clip(2 * a, -0.1, 0.1); }), tol, "clip(dy)");
    // A rule reading x and y: forward exp(x), backward dy * x * y (not the derivative).
    constexpr auto xy_rule = tad::custom_gradient([](auto a) { return tad::exp(a); },
                                                  [](auto dy, auto a, auto r) { return dy * a * r; });
    auto [v3, g3] = tad::grad(tad::sum(xy_rule(x)), x);
    grad_test::expect(v3, grad_test::total(grad_test::map(xb, [](double a) { return std::exp(a); })), tol, "exp value");
    grad_test::expect_all(g3, grad_test::map(xb, [](double a) { return a * std::exp(a); }), tol, "dy x y");
    // Three inputs, the third a structural zero: its buffer is left untouched.
    std::vector<T> gx(n, T(7)), gy(n, T(7)), gz(n, T(7));
    const T val = tad::grad_into(tad::sum(fma_no_c(x, y, z)), tad::wrt(x, gx), tad::wrt(y, gy));
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += double(xb[i]) * double(yb[i]) + double(zb[i]);
    grad_test::expect(val, want, tol, "fma value");
    grad_test::expect_all(gx, grad_test::map(yb, [](double b) { return b; }), tol, "d/da = b");
    grad_test::expect_all(gy, grad_test::map(xb, [](double a) { return a; }), tol, "d/db = a");
    auto [v4, gz4] = tad::grad(tad::sum(fma_no_c(x, y, z)), z);
    grad_test::expect_all(gz4, std::vector<double>(n, 0.0), 0, "d/dc is zero");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(custom_rules_with_scalars_and_runtime_parameters, T, reals) {
  for (std::size_t n : lengths) {
    auto xb = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(xb.cspan());
    T sv = T(0.75);
    auto s = tad::var<"s">(sv);
    // A loop invariant through a custom gradient: times5(s) * x, d/ds = 5 sum(x), d/dx = s.
    auto [v, gx, gs] = tad::grad(tad::sum(times5(s) * x), x, s);
    grad_test::expect(gs, 5 * grad_test::total(xb), grad_test::tol<T>(), "d/ds");
    grad_test::expect_all(gx, std::vector<double>(n, 0.75), grad_test::tol<T>(), "d/dx");
    // A rule that captures a runtime scale by reference: it can change between evaluations.
    double k = 2;
    const auto scaled = tad::custom_gradient([](auto a) { return a; }, [&k](auto dy, auto, auto) { return dy * static_cast<T>(k); });
    const auto e = tad::sum(scaled(x) * x);
    for (double kk : {2.0, -0.5, 0.0}) {
      k = kk;
      auto [v2, g2] = tad::grad(e, x);
      grad_test::expect_all(g2, grad_test::map(xb, [&](double a) { return (kk + 1) * a; }), grad_test::tol<T>(), "k dy");
    }
  }
}

BOOST_AUTO_TEST_CASE(custom_gradient_special_values) {
  // A rule that scales by 0 gives NaN for an infinite upstream adjoint (as IEEE and PyTorch).
  constexpr auto zero_scale = tad::custom_gradient([](auto a) { return a; }, [](auto dy, auto, auto) { return dy * 0; });
  std::vector<double> xb{1, 2, 3, 4, 5}, cb{1, std::numeric_limits<double>::infinity(), 3, 4, 5};
  auto x = tad::var<"x">(xb);
  auto [v, g] = tad::grad(tad::sum(zero_scale(x) * tad::constant(cb)), x);
  BOOST_TEST(g[0] == 0.0);
  BOOST_TEST(std::isnan(g[1]));
}
