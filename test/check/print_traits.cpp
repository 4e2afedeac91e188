// to_string / print (tad/check/print.hpp) with exact expected strings, and the structural
// traits of tad/check/traits.hpp as static_asserts.
#include <support/check.hpp>

#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace hana = boost::hana;
using X = tad::array_var<"x", double>;
using Y = tad::array_var<"y", double>;
using S = tad::scalar_var<"s", double>;

// ---- traits ----------------------------------------------------------------------------------
using Clipped = decltype(tad::sum(tad::clip_gradient(tad::exp(X{}) * S{}, -1.0, 1.0) + tad::stop_gradient(Y{})));
static_assert(tad::contains_op_v<Clipped, tad::clip_gradient_op>);
static_assert(tad::contains_op_v<Clipped, tad::exp_op>);
static_assert(!tad::contains_op_v<Clipped, tad::scale_gradient_op>);
static_assert(tad::count_op_v<decltype(tad::exp(X{}) + tad::exp(Y{})), tad::exp_op> == 2);
static_assert(tad::modifier_count_v<Clipped> == 2);
static_assert(tad::modifiers_of<Clipped>() == std::array<std::string_view, 2>{"clip_gradient", "stop_gradient"});
static_assert(tad::modifier_count_v<decltype(tad::sum(X{} * S{}))> == 0);
static_assert(tad::depends_on_v<Clipped, Y> && tad::gradient_is_zero_v<Clipped, Y>);
static_assert(!tad::depends_on_v<Clipped, tad::array_var<"z", double>>);
// Overridden ops and custom gradients are modifiers; the overridden op still counts as its op.
constexpr auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::exp_op>, [](auto dy, auto, auto y) { return dy * y; }));
using Overridden = decltype(tad::override_gradients(tad::exp(X{}) * tad::sin(X{}), rules));
static_assert(tad::contains_op_v<Overridden, tad::exp_op>);
static_assert(tad::modifiers_of<Overridden>() == std::array<std::string_view, 1>{"exp"});
constexpr auto cg = tad::custom_gradient([](auto a) { return a; }, [](auto dy, auto, auto) { return dy; });
static_assert(tad::modifiers_of<decltype(cg(X{}) * tad::scale_gradient(S{}, 2.0))>() ==
              std::array<std::string_view, 2>{"custom_gradient", "scale_gradient"});
// Node count: sum(x) * s + n * 3 after the rewrite of sum(x * s + 3) (see print below).
static_assert(tad::node_count_v<decltype(X{} + S{})> == 3);
static_assert(tad::node_count_v<decltype(tad::sum(X{} * S{} + 3.0))> == 8);  // + * sum x s length* n 3
// Passes: a loss that fuses into one loop, logsumexp's three, a centred sum of squares's three
// (the mean's adjoint is known only after the loop that needs the mean), a value alone.
static_assert(tad::passes_v<Clipped, X, S> == 1);
static_assert(tad::passes_v<decltype(tad::logsumexp(X{})), X> == 3);
static_assert(tad::passes_v<decltype(tad::sum(tad::square(X{} - tad::mean(X{})))), X> == 3);  // mean; sum + backward; mean's backward
static_assert(tad::passes_v<decltype(tad::sum(X{}))> == 1);
static_assert(tad::passes_v<decltype(S{} * S{}), S> == 0);

}  // namespace

BOOST_AUTO_TEST_CASE(to_string_of_leaves_and_ops) {
  std::vector<double> xs{1, 2, 3};
  double sv = 2, c = 0.5;
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(xs);
  auto s = tad::var<"s">(sv);
  BOOST_TEST(tad::to_string(x) == "x");
  BOOST_TEST(tad::to_string(x + 0.1) == "x + 0.1");
  BOOST_TEST(tad::to_string(tad::constant(xs) * -2.0) == "constant[3] * -2");
  BOOST_TEST(tad::to_string(x * tad::constant_ref(c)) == "x * constant_ref(0.5)");
  BOOST_TEST(tad::to_string(x * tad::lit<1, 2> + tad::lit<3>) == "x * lit<1, 2> + lit<3>");
  BOOST_TEST(tad::to_string(tad::exp(tad::sin(x)) * x + tad::square(tad::tanh(x))) == "exp(sin(x)) * x + square(tanh(x))");
  // Minimal parentheses: precedence, and left-to-right for - and /.
  BOOST_TEST(tad::to_string((x + y) * s - (x - y) - -x) == "(x + y) * s - (x - y) - -x");
  BOOST_TEST(tad::to_string(x - (y + s)) == "x - (y + s)");
  BOOST_TEST(tad::to_string(x + (y + s)) == "x + y + s");
  BOOST_TEST(tad::to_string(s / (s * s)) == "s / (s * s)");
  BOOST_TEST(tad::to_string(-(-s)) == "-(-s)");
  BOOST_TEST(tad::to_string(tad::pow(x, 2.0) + tad::max(x, y)) == "pow(x, 2) + max(x, y)");
  BOOST_TEST(tad::to_string(tad::where(x < s && !(y >= s), x, y)) == "where(x < s && !(y >= s), x, y)");
  // tad's rewrites show: a loop-free term leaves the sum, array / scalar is a reciprocal,
  // logsumexp is shifted by its maximum.
  BOOST_TEST(tad::to_string(tad::sum(x * s + 3.0)) == "sum(x) * s + n * 3");
  BOOST_TEST(tad::to_string(x / s) == "x * (1 / s)");
  BOOST_TEST(tad::to_string(tad::logsumexp(x)) == "lse_shift(x) + log(sum(exp(x - lse_shift(x))))");
  BOOST_TEST(tad::to_string(tad::mean(x) + tad::max(x)) == "mean(x) + max(x)");
}

BOOST_AUTO_TEST_CASE(to_string_of_modifiers) {
  std::vector<double> xs{1, 2, 3};
  double lo = -1;
  auto x = tad::var<"x">(xs);
  BOOST_TEST(tad::to_string(tad::clip_gradient(x, tad::constant_ref(lo), 0.25)) == "clip_gradient(x, constant_ref(-1), 0.25)");
  BOOST_TEST(tad::to_string(tad::stop_gradient(x) + tad::scale_gradient(x, 5.0)) == "stop_gradient(x) + scale_gradient(x, 5)");
  BOOST_TEST(tad::to_string(tad::reverse_gradient(x, tad::lit<1, 4>)) == "reverse_gradient(x, lit<1, 4>)");
  BOOST_TEST(tad::to_string(tad::straight_through(tad::round(x), x)) == "straight_through(round(x), x)");
  const auto prod = tad::custom_gradient([](auto a, auto b) { return a * b + 1; },
                                         [](auto dy, auto a, auto b, auto) { return tad::adjoints{dy * b, dy * a}; });
  BOOST_TEST(tad::to_string(prod(x, tad::exp(x))) == "custom_gradient[$0 * $1 + 1](x, exp(x))");
  BOOST_TEST(tad::to_string(tad::override_gradients(tad::exp(x) * tad::sin(x), rules)) == "exp[overridden](x) * sin(x)");
  BOOST_TEST(tad::to_string(tad::identity(x)) == "identity(x)");
}

BOOST_AUTO_TEST_CASE(print_writes_a_line) {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  std::FILE* f = std::tmpfile();
  BOOST_TEST_REQUIRE(f != nullptr);
  tad::print(tad::sum(tad::exp(x)), f);
  std::rewind(f);
  char buf[64] = {};
  BOOST_TEST_REQUIRE(std::fgets(buf, sizeof buf, f) != nullptr);
  std::fclose(f);
  BOOST_TEST(std::string(buf) == "sum(exp(x))\n");
}
