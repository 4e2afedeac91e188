// Constant-evaluated gradient checks (tad/check/static_check.hpp): static_asserts that every
// built-in elementwise op, binary op and reduction-free combination, a user primitive and a
// custom gradient match central differences; that wrong rules fail; modifiers against their
// declared rules and, stripped, against the true derivative. Also run at run time, where the
// same functions must give the same answers.
#include <support/check.hpp>

#include <tad/tad.hpp>

#include <array>

namespace {

constexpr std::array pts{-1.3, -0.4, 0.3, 0.9, 2.1};
constexpr std::array pos{0.2, 0.7, 1.4, 3.5};  // for log, sqrt, pow's base
constexpr std::array small{-0.9, -0.2, 0.4, 1.1};  // for tan

// ---- every differentiable unary op --------------------------------------------------------------
static_assert(tad::gradient_check([](auto x) { return tad::exp(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::log(x); }, pos));
static_assert(tad::gradient_check([](auto x) { return tad::log1p(x); }, pos));
static_assert(tad::gradient_check([](auto x) { return tad::expm1(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::sin(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::cos(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::tan(x); }, small));
static_assert(tad::gradient_check([](auto x) { return tad::tanh(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::sigmoid(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::softplus(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::sqrt(x); }, pos));
static_assert(tad::gradient_check([](auto x) { return tad::square(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return tad::abs(x); }, pts));   // away from the kink
static_assert(tad::gradient_check([](auto x) { return tad::relu(x); }, pts));
static_assert(tad::gradient_check([](auto x) { return -x + tad::identity(x) * 2.0; }, pts));
static_assert(tad::gradient_check([](auto x) { return 1.0 / x; }, pos));
// Piecewise-constant ops: a zero gradient, away from their jumps.
constexpr std::array off_jumps{-1.3, -0.4, 0.3, 0.9, 2.1};
static_assert(tad::gradient_check([](auto x) { return tad::sign(x) + tad::round(x) + tad::floor(x) + tad::ceil(x); }, off_jumps));
// ---- binary ops, two variables ------------------------------------------------------------------
constexpr std::array pairs{std::array{0.7, -1.2}, std::array{1.9, 0.4}, std::array{0.3, 2.2}};
static_assert(tad::gradient_check([](auto x, auto y) { return x + y; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return x - y; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return x * y; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return x / y; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return tad::pow(x, y); }, pairs));  // x > 0
static_assert(tad::gradient_check([](auto x, auto y) { return tad::max(x, y) + tad::min(x, y) * 3.0; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return tad::where(x < y, x * x, y * x); }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return tad::clamp(x, -0.5, 1.0) * y; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return tad::exp(tad::sin(x) * y) / (1.0 + tad::square(y)); }, pairs));

// ---- a user primitive and a custom gradient -------------------------------------------------------
struct log1pexp_op {
  static constexpr auto forward(auto x) {
    using V = decltype(x);
    return tad::math::max(x, V(0)) + tad::math::log1p(tad::math::exp(-tad::math::abs(x)));
  }
  static constexpr auto backward(auto dy, auto x, auto) { return dy * tad::math::sigmoid(x); }
};
struct wrong_log1pexp_op : log1pexp_op {
  static constexpr auto backward(auto dy, auto x, auto) { return dy * tad::math::sigmoid(-x); }
};
static_assert(tad::gradient_check([](auto x) { return tad::apply<log1pexp_op>(x); }, pts));
static_assert(!tad::gradient_check([](auto x) { return tad::apply<wrong_log1pexp_op>(x); }, pts));
constexpr auto prod = tad::custom_gradient([](auto a, auto b) { return a * tad::sin(b); },
                                           [](auto dy, auto a, auto b, auto) {
                                             return tad::adjoints{dy * tad::math::sin(b), dy * a * tad::math::cos(b)};
                                           });
static_assert(tad::gradient_check([](auto x, auto y) { return prod(x, y); }, pairs));

// ---- modifiers: the declared rule, and the true derivative once stripped ----------------------------
static_assert(!tad::gradient_check([](auto x) { return tad::clip_gradient(x * x, -0.1, 0.1); }, pos));
static_assert(tad::gradient_check([](auto x) { return tad::clip_gradient(x * x, -0.1, 0.1); }, pos,
                                  {.strip_modifiers = true}));
static_assert(tad::gradient_check_against([](auto x) { return tad::clip_gradient(x * x, -0.1, 0.1); },
                                          [](double x) { return 0.1 * 2 * x; }, pos));
static_assert(tad::gradient_check_against([](auto x) { return tad::scale_gradient(tad::exp(x), 3.0); },
                                          [](double x) { return 3 * tad::math::exp(x); }, pts));
static_assert(tad::gradient_check_against([](auto x, auto y) { return tad::reverse_gradient(x * y, 0.5) + tad::stop_gradient(y); },
                                          [](double x, double y) { return std::array{-0.5 * y, -0.5 * x}; }, pairs));
static_assert(tad::gradient_check([](auto x, auto y) { return tad::reverse_gradient(x * y, 0.5) + tad::stop_gradient(y); },
                                  pairs, {.strip_modifiers = true}));
// Tolerances are the user's: the x vs 2x error of a wrong rule passes a 60% relative tolerance.
constexpr auto half = tad::custom_gradient([](auto a) { return a * a; }, [](auto dy, auto a, auto) { return dy * a; });
static_assert(!tad::gradient_check([](auto x) { return half(x); }, pos));
static_assert(tad::gradient_check([](auto x) { return half(x); }, pos, {.rel = 0.6}));

}  // namespace

BOOST_AUTO_TEST_CASE(static_checks_agree_at_run_time) {
  // The same calls, not constant-evaluated (runtime math paths).
  BOOST_TEST(tad::gradient_check([](auto x) { return tad::exp(tad::sin(x)) * tad::tanh(x); }, pts));
  BOOST_TEST(!tad::gradient_check([](auto x) { return half(x); }, pos));
  BOOST_TEST(tad::gradient_check_against([](auto x) { return tad::clip_gradient(x * x, -0.1, 0.1); },
                                         [](double x) { return 0.2 * x; }, pos));
}
