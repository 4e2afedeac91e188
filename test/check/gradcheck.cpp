// gradcheck (tad/check/gradcheck.hpp): passes right gradients (arrays at every length, scalars,
// float and double, unaligned), catches wrong rules (custom gradients, primitives) and reports
// the worst errors, the first failing index and the expression; caller data is left untouched.
#include <support/check.hpp>

#include <tad/tad.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

using tad_test::lengths;
using tad_test::reals;

// A wrong rule: d/dx x^2 declared as x (half the true derivative).
constexpr auto half_square = tad::custom_gradient([](auto a) { return a * a; }, [](auto dy, auto a, auto) { return dy * a; });

struct wrong_exp_op {  // a primitive whose backward forgets the chain rule's dy
  static constexpr std::string_view name = "wrong_exp";
  static constexpr auto forward(auto x) { return tad::math::exp(x); }
  static constexpr auto backward(auto, auto, auto y) { return y; }
};

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(gradcheck_passes_right_gradients, T, reals) {
  for (std::size_t n : lengths) {
    tad_test::buffer<T> xb(n), yb(n);
    tad_test::fill_uniform(xb, -2, 2, 3);
    tad_test::fill_uniform(yb, 0.5, 2, 5);
    T sv = T(0.7);
    auto x = tad::var<"x">(xb.cspan());
    auto y = tad::constant(yb.cspan());
    auto s = tad::var<"s">(sv);
    const auto before = std::vector<T>(xb.cspan().begin(), xb.cspan().end());
    const auto r = tad::gradcheck(tad::sum(tad::exp(tad::sin(x)) * s + tad::square(x - y) / y), x, s);
    BOOST_TEST(r.ok, r.report());
    BOOST_TEST_REQUIRE(r.variables.size() == 2u);
    BOOST_TEST(r.variables[0].name == "x");
    BOOST_TEST(r.variables[0].size == n);
    BOOST_TEST(r.variables[1].name == "s");
    BOOST_TEST(r.variables[0].failures == 0u);
    BOOST_TEST(r.variables[0].max_abs_error < 1e-3);
    BOOST_TEST((std::vector<T>(xb.cspan().begin(), xb.cspan().end()) == before), "caller data untouched");
    if (n > 0) {
      const auto r2 = tad::gradcheck(tad::logsumexp(x * s), x, s);
      BOOST_TEST(r2.ok, r2.report());
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(gradcheck_catches_wrong_rules, T, reals) {
  for (std::size_t n : lengths) {
    if (n == 0) continue;
    tad_test::buffer<T> xb(n);
    tad_test::fill_uniform(xb, 0.5, 2, 3);  // away from 0, where x and 2x agree
    auto x = tad::var<"x">(xb.cspan());
    const auto r = tad::gradcheck(tad::sum(half_square(x)), x);
    BOOST_TEST(!r.ok);
    BOOST_TEST_REQUIRE(r.variables.size() == 1u);
    const auto& v = r.variables[0];
    BOOST_TEST(v.failures == n);
    BOOST_TEST(v.first_failure == 0u);
    BOOST_TEST(tad_test::close(v.tad_value, double(xb[0]), 1e-6));            // the rule: x
    BOOST_TEST(tad_test::close(v.numeric_value, 2 * double(xb[0]), 1e-4));    // the truth: 2x
    BOOST_TEST(tad_test::close(v.max_rel_error, 0.5, 1e-3));                  // x vs 2x
    const std::string rep = r.report();
    BOOST_TEST(rep.find("sum(custom_gradient[$0 * $0](x)): FAILED") != std::string::npos, rep);
    BOOST_TEST(rep.find("first [0]") != std::string::npos, rep);
    // The same rule checked through strip_gradient_modifiers passes: the forward is right.
    BOOST_TEST(tad::gradcheck(tad::strip_gradient_modifiers(tad::sum(half_square(x))), x).ok);
    // A primitive whose rule ignores dy: caught once dy differs from 1.
    T sv = T(3);
    auto s = tad::var<"s">(sv);
    const auto r3 = tad::gradcheck(tad::sum(tad::apply<wrong_exp_op>(x)) * s, x, s);
    BOOST_TEST(!r3.ok);
    BOOST_TEST(r3.variables[0].failures == n);
    BOOST_TEST(r3.variables[1].failures == 0u);  // d/ds = sum(exp(x)) is right
    BOOST_TEST(tad::gradcheck(tad::sum(tad::apply<wrong_exp_op>(x)), x).ok);  // dy = 1 hides it
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_options_and_special_values) {
  std::vector<double> xb{0.5, 1.5};
  auto x = tad::var<"x">(xb);
  // A tolerance loose enough to accept the wrong rule: x vs 2x, relative error 0.5.
  BOOST_TEST(tad::gradcheck(tad::gradcheck_options{.eps = 1e-6, .atol = 0, .rtol = 0.6}, tad::sum(half_square(x)), x).ok);
  BOOST_TEST(!tad::gradcheck(tad::gradcheck_options{.eps = 1e-6, .atol = 0, .rtol = 0.4}, tad::sum(half_square(x)), x).ok);
  // A variable that the expression does not contain: zero gradient, zero differences.
  std::vector<double> zb{1, 2, 3};
  auto z = tad::var<"z">(zb);
  const auto r = tad::gradcheck(tad::sum(tad::exp(x)), x, z);
  BOOST_TEST(r.ok, r.report());
  BOOST_TEST(r.variables[1].size == 3u);
  // A NaN gradient agrees with NaN differences (sqrt of a negative number)...
  std::vector<double> nb{-1};
  auto xn = tad::var<"x">(nb);
  const auto rn = tad::gradcheck(tad::sum(tad::sqrt(xn)), xn);
  BOOST_TEST(rn.ok, rn.report());
  // ...but a NaN value makes every difference NaN, so the right gradient 1/4 at x = 4 fails.
  std::vector<double> mb{-1, 4};
  auto xm = tad::var<"x">(mb);
  const auto rm = tad::gradcheck(tad::sum(tad::sqrt(xm)), xm);
  BOOST_TEST(!rm.ok);
  BOOST_TEST(rm.variables[0].failures == 1u);
  BOOST_TEST(rm.variables[0].first_failure == 1u);
  BOOST_TEST(rm.variables[0].tad_value == 0.25);
}
