// Compile-time checks (doc/compile-time-checks.md): gradients verified in static_assert,
// structural traits, printing and the runtime gradcheck. Checks its own results; returns 1 if
// one is wrong.
#include <tad/tad.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

// [static gradient check]
// A new primitive: log(1 + e^x), stable for large |x|, with its derivative sigmoid(x).
struct log1pexp_op {
  static constexpr std::string_view name = "log1pexp";
  static constexpr auto forward(auto x) {
    using V = decltype(x);
    return tad::math::max(x, V(0)) + tad::math::log1p(tad::math::exp(-tad::math::abs(x)));
  }
  static constexpr auto backward(auto dy, auto x, auto /*y*/) { return dy * tad::math::sigmoid(x); }
};
constexpr auto log1pexp = [](auto x) { return tad::apply<log1pexp_op>(x); };

// The compiler checks the rule against central differences of the forward, at these points.
static_assert(tad::gradient_check(log1pexp, std::array{-4.0, -0.5, 0.0, 1.5, 6.0}),
              "log1pexp's backward is the derivative of its forward");
// Two variables: points are std::array<double, 2>; tolerances are the caller's.
static_assert(tad::gradient_check([](auto x, auto y) { return tad::sin(x) * tad::exp(y); },
                                  std::array{std::array{0.3, -1.0}, std::array{2.0, 0.5}},
                                  {.rel = 1e-8, .abs = 1e-10}));
// [static gradient check]

// [static check of a modifier]
// A modifier departs from the derivative on purpose: check it against its declared rule, or
// check that it is the only departure (strip_modifiers compares the stripped expression).
constexpr auto clipped_square = [](auto x) { return tad::clip_gradient(x * x, -0.1, 0.1); };
static_assert(!tad::gradient_check(clipped_square, std::array{3.0}));
static_assert(tad::gradient_check(clipped_square, std::array{3.0}, {.strip_modifiers = true}));
static_assert(tad::gradient_check_against(clipped_square, [](double x) { return 2 * x * 0.1; },
                                          std::array{3.0, -2.0}));
// [static check of a modifier]

// [structural traits]
using X = tad::array_var<"x", double>;
using W = tad::scalar_var<"w", double>;
using Loss = decltype(tad::sum(tad::square(tad::clip_gradient(W{} * X{}, -0.1, 0.1) - tad::stop_gradient(X{}))));
static_assert(tad::depends_on_v<Loss, W> && !tad::gradient_is_zero_v<Loss, W>);
static_assert(tad::depends_on_v<Loss, X> && !tad::gradient_is_zero_v<Loss, X>);  // through w * x
static_assert(tad::contains_op_v<Loss, tad::clip_gradient_op>);
static_assert(tad::modifiers_of<Loss>() == std::array<std::string_view, 2>{"clip_gradient", "stop_gradient"});
static_assert(tad::passes_v<Loss, W> == 1);  // the loss and its gradient fuse into one loop
static_assert(tad::passes_v<decltype(tad::logsumexp(X{})), X> == 3);
// [structural traits]

namespace {
int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-52s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}
}  // namespace

int main() {
  {
    // [print]
    std::vector<double> xs{0.5, -1.0, 2.0};
    double wv = 0.3;
    auto x = tad::var<"x">(xs);
    auto w = tad::var<"w">(wv);
    auto loss = tad::sum(tad::square(tad::clip_gradient(w * x, -0.1, 0.1) - 1.0));
    tad::print(loss);                    // sum(square(clip_gradient(w * x, -0.1, 0.1) - 1))
    std::string text = tad::to_string(tad::logsumexp(x) / w);
    // [print]
    check("print: the tree as text",
          tad::to_string(loss) == "sum(square(clip_gradient(w * x, -0.1, 0.1) - 1))");
    check("print: logsumexp is shifted by its maximum",
          text == "(lse_shift(x) + log(sum(exp(x - lse_shift(x))))) / w");
  }
  {
    // [gradcheck]
    // A custom gradient with a wrong rule (x where the derivative of x^2 is 2x)...
    auto half_square = tad::custom_gradient([](auto a) { return a * a; },
                                            [](auto dy, auto a, auto /*y*/) { return dy * a; });
    std::vector<double> xs{0.5, -1.0, 2.0};
    double wv = 0.3;
    auto x = tad::var<"x">(xs);
    auto w = tad::var<"w">(wv);
    auto result = tad::gradcheck(tad::sum(half_square(x) * w), x, w);
    std::printf("%s\n", result.report().c_str());
    // tad::gradcheck: sum(custom_gradient[$0 * $0](x)) * w: FAILED
    //   d/dx (3 elements): max abs error 0.6, max rel error 0.5; 3 outside the tolerance, first [0]: tad 0.15, numeric 0.3
    //   d/dw (1 element): max abs error ..., max rel error ...
    // ...and a right one.
    auto good = tad::gradcheck(tad::sum(tad::exp(x) * w), x, w);  // good.ok
    // [gradcheck]
    check("gradcheck: catches the wrong rule", !result.ok && result.variables[0].failures == 3);
    check("gradcheck: d/dw is right", result.variables[1].failures == 0);
    check("gradcheck: passes the right one", good.ok);
  }
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
