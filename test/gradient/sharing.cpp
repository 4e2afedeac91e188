// Shared subexpressions, tad::let<"z">(e) (tad/gradient/let.hpp, eval/let.hpp): every occurrence
// of one let name is one node whose rule runs once on the SUM of the adjoints of its
// occurrences. Expected values are derived by hand below from that definition (TensorFlow and
// PyTorch's answer); the unshared form, where each copy runs the rule on its own share, gives
// the old per-copy value, so each test shows the difference. Rules: clip_gradient, a
// custom_gradient whose rule is dy * dy, and an override rule clip(dy, -0.1, 0.1); used 2 and 3
// times; in the scalar code (x scalar) and inside one reduction's loop (arrays at lengths 0, 1,
// 3, 8, 17, 1000, unaligned, float and double); in the fused and multi-pass schedules. Lets of
// plain subexpressions against central differences; print strings; traits; override and strip.
#include <gradient/common.hpp>
#include <support/gradient_check.hpp>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace {

using grad_test::clip;
using grad_test::expect;
using grad_test::expect_all;
using tad_test::reals;
using tad_test::gradient_check::arr;
using tad_test::gradient_check::check_gradient;
using tad_test::gradient_check::scal;

const std::vector<std::size_t> sizes{0, 1, 3, 8, 17, 1000};

using grad_test::identity_clip;
using grad_test::squared_rule;

// ---- scalar code above the loops (x scalar) ----------------------------------------------------
// constexpr: c + c at x = 2 with c = let(clip_gradient(x, -1, 1)): clip(1 + 1) = 1.
constexpr double shared_at(double v) {
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  return std::get<1>(tad::grad(c + c, x));
}
static_assert(shared_at(2.0) == 1.0);
static_assert(shared_at(0.25) == 1.0);  // 2 is clipped to 1 whatever x
// c = clip_gradient(x, -1, 1) at x = 2: c + c sends 1 + 1 = 2 into c; shared, the rule runs
// once: clip(2) = 1 (TensorFlow, PyTorch). Unshared, each copy clips its 1: 1 + 1 = 2.
// c + c + c: shared clip(3) = 1, unshared 3.
BOOST_AUTO_TEST_CASE(scalar_clip_gradient_shared) {
  double v = 2;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  auto u = tad::per_use(tad::clip_gradient(x, -1.0, 1.0));
  expect(std::get<1>(tad::grad(c + c, x)), 1.0, 1e-15, "c + c, shared");
  expect(std::get<1>(tad::grad(u + u, x)), 2.0, 1e-15, "u + u, unshared");
  expect(std::get<1>(tad::grad(c + c + c, x)), 1.0, 1e-15, "c + c + c, shared");
  expect(std::get<1>(tad::grad(u + u + u, x)), 3.0, 1e-15, "u + u + u, unshared");
  expect(std::get<0>(tad::grad(c + c + c, x)), 6.0, 1e-15, "c + c + c, value");
  // 0.25 c + 0.25 c: the sum 0.5 is inside [-1, 1]: 0.5 both ways.
  expect(std::get<1>(tad::grad(0.25 * c + 0.25 * c, x)), 0.5, 1e-15, "0.25 c + 0.25 c, shared");
  // c * c at x = 2: each occurrence gets dy * other = 2, sum 4, clipped once: 1 (unshared 2).
  expect(std::get<1>(tad::grad(c * c, x)), 1.0, 1e-15, "c * c, shared");
  expect(std::get<1>(tad::grad(u * u, x)), 2.0, 1e-15, "u * u, unshared");
}

// Rule dy * dy: c + c gives (1 + 1)^2 = 4 shared, 1^2 + 1^2 = 2 unshared; three uses: 9 and 3.
// With 0.5 c + 0.5 c: (0.5 + 0.5)^2 = 1 shared, 0.25 + 0.25 = 0.5 unshared.
BOOST_AUTO_TEST_CASE(scalar_custom_gradient_shared) {
  double v = 0.7;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(squared_rule(x));
  auto u = tad::per_use(squared_rule(x));
  expect(std::get<1>(tad::grad(c + c, x)), 4.0, 1e-15, "custom c + c, shared");
  expect(std::get<1>(tad::grad(u + u, x)), 2.0, 1e-15, "custom u + u, unshared");
  expect(std::get<1>(tad::grad(c + c + c, x)), 9.0, 1e-15, "custom c + c + c, shared");
  expect(std::get<1>(tad::grad(u + u + u, x)), 3.0, 1e-15, "custom u + u + u, unshared");
  expect(std::get<1>(tad::grad(0.5 * c + 0.5 * c, x)), 1.0, 1e-15, "custom 0.5 c + 0.5 c, shared");
  expect(std::get<1>(tad::grad(0.5 * u + 0.5 * u, x)), 0.5, 1e-15, "custom 0.5 u + 0.5 u, unshared");
}

// Override rule clip(dy, -0.1, 0.1) on identity: c + c: clip(2) = 0.1 shared, 0.2 unshared;
// three uses: 0.1 and 0.3. Two ways: the let around an overridden body, and
// override_gradients applied to an expression with a let (every copy rewritten alike).
BOOST_AUTO_TEST_CASE(scalar_override_rule_shared) {
  double v = 1.5;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::override_gradients(tad::identity(x), identity_clip));
  auto u = tad::per_use(tad::override_gradients(tad::identity(x), identity_clip));
  expect(std::get<1>(tad::grad(c + c, x)), 0.1, 1e-15, "override c + c, shared");
  expect(std::get<1>(tad::grad(u + u, x)), 0.2, 1e-15, "override u + u, unshared");
  expect(std::get<1>(tad::grad(c + c + c, x)), 0.1, 1e-15, "override c + c + c, shared");
  expect(std::get<1>(tad::grad(u + u + u, x)), 0.3, 1e-15, "override u + u + u, unshared");
  auto d = tad::let<"d">(tad::identity(x));
  auto od = tad::override_gradients(d + d + d, identity_clip);
  expect(std::get<1>(tad::grad(od, x)), 0.1, 1e-15, "override_gradients(d + d + d), shared");
}

// ---- inside one reduction's loop (arrays) --------------------------------------------------------
// c = clip_gradient(x, -0.5, 0.5), sum(0.3 c + 0.3 c + 0.3 c): 0.9 reaches c per element,
// clipped once: 0.5 (unshared: 0.3 each, 0.9). Two uses: sum(0.3 c + 0.3 c): clip(0.6) = 0.5,
// unshared 0.6. sum(x * c + c): c's adjoint is x_i + 1, the rule runs once on it, x's own
// adjoint is c_i = x_i: g_i = x_i + clip(x_i + 1); unshared x_i + clip(x_i) + clip(1).
BOOST_AUTO_TEST_CASE_TEMPLATE(array_clip_gradient_shared, T, reals) {
  for (std::size_t n : sizes) {
    auto d = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(d.span());
    auto c = tad::let<"c">(tad::clip_gradient(x, -0.5, 0.5));
    auto u = tad::per_use(tad::clip_gradient(x, -0.5, 0.5));
    const std::vector<double> half(n, 0.5), p9(n, 0.9), p6(n, 0.6);
    const double tol = grad_test::tol<T>();
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * c + 0.3 * c + 0.3 * c), x)), half, tol, "3 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u + 0.3 * u + 0.3 * u), x)), p9, tol, "3 uses, unshared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * c + 0.3 * c), x)), half, tol, "2 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u + 0.3 * u), x)), p6, tol, "2 uses, unshared");
    expect_all(std::get<1>(tad::grad(tad::sum(x * c + c), x)),
               grad_test::map(d, [](double xi) { return xi + clip(xi + 1, -0.5, 0.5); }), tol, "x * c + c, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(x * u + u), x)),
               grad_test::map(d, [](double xi) { return xi + clip(xi, -0.5, 0.5) + 0.5; }), tol, "x * u + u, unshared");
    // The value: sum(x * x + x).
    expect(double(std::get<0>(tad::grad(tad::sum(x * c + c), x))),
           grad_test::total(grad_test::map(d, [](double xi) { return xi * xi + xi; })), 10 * tol * double(n + 1),
           "value of sum(x * c + c)");
  }
}

// Rule dy * dy per element: sum(0.3 c + 0.3 c + 0.3 c): (0.9)^2 = 0.81 shared, 3 * 0.09 = 0.27
// unshared; two uses: 0.36 and 0.18. Override clip(dy, -0.1, 0.1): 0.1 shared, 0.3 / 0.2 unshared.
BOOST_AUTO_TEST_CASE_TEMPLATE(array_custom_and_override_shared, T, reals) {
  for (std::size_t n : sizes) {
    auto d = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(d.span());
    const double tol = grad_test::tol<T>();
    auto c = tad::let<"c">(squared_rule(x));
    auto u = tad::per_use(squared_rule(x));
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * c + 0.3 * c + 0.3 * c), x)), std::vector<double>(n, 0.81), tol, "custom 3 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u + 0.3 * u + 0.3 * u), x)), std::vector<double>(n, 0.27), tol, "custom 3 uses, unshared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * c + 0.3 * c), x)), std::vector<double>(n, 0.36), tol, "custom 2 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u + 0.3 * u), x)), std::vector<double>(n, 0.18), tol, "custom 2 uses, unshared");
    auto o = tad::let<"o">(tad::override_gradients(tad::identity(x), identity_clip));
    auto w = tad::per_use(tad::override_gradients(tad::identity(x), identity_clip));
    expect_all(std::get<1>(tad::grad(tad::sum(o + o + o), x)), std::vector<double>(n, 0.1), tol, "override 3 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(w + w + w), x)), std::vector<double>(n, 0.3), tol, "override 3 uses, unshared");
    expect_all(std::get<1>(tad::grad(tad::sum(o + o), x)), std::vector<double>(n, 0.1), tol, "override 2 uses, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(w + w), x)), std::vector<double>(n, 0.2), tol, "override 2 uses, unshared");
  }
}

// Other schedules. log(sum(exp(c) + exp(c))) with the rule dy * dy: S = 2 sum_j e^{x_j}, c's
// adjoint 2 e^{x_i} / S, shared (2 e^{x_i} / S)^2, unshared 2 (e^{x_i} / S)^2.
// sum(square(c - mean(x)) + c) (mean first, then the sum's loop): c's adjoint 2 (x_i - m) + 1;
// x's adjoint through the mean is -2 sum_i (x_i - m) / n = 0; shared (2 (x_i - m) + 1)^2,
// unshared (2 (x_i - m))^2 + 1.
BOOST_AUTO_TEST_CASE_TEMPLATE(lets_in_multi_pass_schedules, T, reals) {
  for (std::size_t n : sizes) {
    if (n == 0) continue;  // log(0) and mean of nothing: not what this tests
    auto d = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(d.span());
    const double tol = grad_test::tol<T>() * 10;
    auto c = tad::let<"c">(squared_rule(x));
    auto u = tad::per_use(squared_rule(x));
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += 2 * std::exp(double(d[i]));
    expect_all(std::get<1>(tad::grad(tad::log(tad::sum(tad::exp(c) + tad::exp(c))), x)),
               grad_test::map(d, [&](double xi) { return std::pow(2 * std::exp(xi) / s, 2); }), tol, "lse, shared");
    expect_all(std::get<1>(tad::grad(tad::log(tad::sum(tad::exp(u) + tad::exp(u))), x)),
               grad_test::map(d, [&](double xi) { return 2 * std::pow(std::exp(xi) / s, 2); }), tol, "lse, unshared");
    const double m = grad_test::total(d) / double(n);
    expect_all(std::get<1>(tad::grad(tad::sum(tad::square(c - tad::mean(x)) + c), x)),
               grad_test::map(d, [&](double xi) { return std::pow(2 * (xi - m) + 1, 2); }), tol, "mean, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(tad::square(u - tad::mean(x)) + u), x)),
               grad_test::map(d, [&](double xi) { return std::pow(2 * (xi - m), 2) + 1; }), tol, "mean, unshared");
  }
}

// ---- lets of plain subexpressions: equal to the unshared form and to central differences --------
struct plain_let {
  auto operator()(auto x) const {
    auto z = tad::let<"z">(x * x + 1.0);
    return tad::sum(z * z + tad::sin(z));
  }
};
struct plain_unshared {
  auto operator()(auto x) const { return tad::sum((x * x + 1.0) * (x * x + 1.0) + tad::sin(x * x + 1.0)); }
};
struct scaled_let {  // the scaled schedule: the forward loop runs the backward with a unit adjoint
  auto operator()(auto x) const {
    auto z = tad::let<"z">(tad::sin(x) * x);
    return tad::log(tad::sum(tad::exp(z) + tad::exp(z)));
  }
};
struct nested_lets {  // b's body uses a; a is also used outside b
  auto operator()(auto x, auto y) const {
    auto a = tad::let<"a">(x * y);
    auto b = tad::let<"b">(a + tad::sin(a));
    return tad::sum(b * b + a * x);
  }
};
struct across_loops {  // a let of linear rules in two reductions and the scalar code: recomputed
  auto operator()(auto x, auto y) const {
    auto z = tad::let<"z">(tad::exp(x) * y);
    return tad::mean(z) * tad::mean(tad::sin(z)) + tad::log(tad::mean(tad::square(z)));
  }
};
struct scalar_let {  // a scalar let in the scalar code and as a loop invariant
  auto operator()(auto s, auto x) const {
    auto t = tad::let<"t">(s * s + tad::sin(s));
    return t * t + tad::sum(x * t) + t;
  }
};
struct let_of_reduction {  // the body is a reduction, used twice in the scalar code
  auto operator()(auto x) const {
    auto m = tad::let<"m">(tad::mean(tad::exp(x)));
    return m * m + tad::log(m);
  }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(plain_lets_match_central_differences, T, reals) {
  for (std::size_t n : sizes) {
    check_gradient<T>("let z = x * x + 1", n, plain_let{}, arr{-1.5, 1.5});
    if (n > 0) check_gradient<T>("let in a scaled pass", n, scaled_let{}, arr{-1.5, 1.5});
    check_gradient<T>("nested lets", n, nested_lets{}, arr{-1.5, 1.5}, arr{-1, 1});
    if (n > 0) check_gradient<T>("let across loops", n, across_loops{}, arr{-1, 1}, arr{0.5, 1.5});
    check_gradient<T>("scalar let", n, scalar_let{}, scal{-1, 1}, arr{-1, 1});
    if (n > 0) check_gradient<T>("let of a reduction", n, let_of_reduction{}, arr{-1, 1});
    // The let form and the unshared form: the same gradient (the rules are true derivatives).
    auto d = grad_test::data<T>(n, -1.5, 1.5);
    auto x = tad::var<"x">(d.span());
    const auto gl = std::get<1>(tad::grad(plain_let{}(x), x));
    const auto gu = std::get<1>(tad::grad(plain_unshared{}(x), x));
    std::vector<double> want(gu.begin(), gu.end());
    expect_all(gl, want, grad_test::tol<T>() * 10, "let z against unshared");
  }
}

// ---- print, traits, override and strip -------------------------------------------------------
BOOST_AUTO_TEST_CASE(print_shows_lets) {
  double v = 2;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  BOOST_TEST(tad::to_string(c + c) == "c + c where c = clip_gradient(x, -1, 1)");
  auto a = tad::let<"a">(x * x);
  auto b = tad::let<"b">(a + tad::sin(a));
  BOOST_TEST(tad::to_string(b * b + a) == "b * b + a where a = x * x, b = a + sin(a)");
}

BOOST_AUTO_TEST_CASE(traits_count_a_let_once) {
  double v = 2;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  auto u = tad::per_use(tad::clip_gradient(x, -1.0, 1.0));
  using S = decltype(c + c + c);
  using U = decltype(u + u + u);
  static_assert(tad::count_op_v<S, tad::clip_gradient_op> == 1);
  static_assert(tad::count_op_v<U, tad::clip_gradient_op> == 3);
  static_assert(tad::modifier_count_v<S> == 1);
  // c + c + c: two + nodes, three let occurrences, the body once (clip node, x, -1, 1): 9.
  static_assert(tad::node_count_v<S> == 9);
  static_assert(tad::node_count_v<U> == 17);  // 2 + 3 * 5 (per_use, clip node, x, -1, 1)
  static_assert(tad::depends_on_v<S, decltype(x)>);
  static_assert(!tad::gradient_is_zero_v<S, decltype(x)>);
  auto st = tad::let<"st">(tad::stop_gradient(x));
  static_assert(tad::depends_on_v<decltype(st + st), decltype(x)>);
  static_assert(tad::gradient_is_zero_v<decltype(st + st), decltype(x)>);
  BOOST_TEST(true);
}

// One name, one subexpression: two lets named c of one type but other parameters or data throw
// when combined (different types are a compile error: test/compile_fail/let_two_definitions.cpp).
BOOST_AUTO_TEST_CASE(same_let_name_other_data_throws) {
  double v = 2;
  auto x = tad::var<"x">(v);
  auto c1 = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  auto c2 = tad::let<"c">(tad::clip_gradient(x, -2.0, 2.0));
  BOOST_CHECK_THROW((void)(c1 + c2), std::invalid_argument);
  BOOST_CHECK_NO_THROW((void)(c1 + c1));
  const std::vector<double> a{1, 2, 3}, b{1, 2, 3};
  auto z1 = tad::let<"z">(tad::exp(tad::constant(a)));
  auto z2 = tad::let<"z">(tad::exp(tad::constant(b)));
  BOOST_CHECK_THROW((void)tad::sum(z1 * z2), std::invalid_argument);
  BOOST_CHECK_NO_THROW((void)tad::sum(z1 * z1));
}

// strip_gradient_modifiers rewrites every copy of c alike: still one let, whose body is x now:
// gradient 2 (each of the two occurrences sends 1).
BOOST_AUTO_TEST_CASE(strip_keeps_lets) {
  double v = 2;
  auto x = tad::var<"x">(v);
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  auto s = tad::strip_gradient_modifiers(c + c);
  BOOST_TEST(tad::to_string(s) == "c + c where c = x");
  expect(std::get<1>(tad::grad(s, x)), 2.0, 1e-15, "strip(c + c)");
  static_assert(tad::count_op_v<decltype(s), tad::let_op<"c">> == 2);
}

}  // namespace
