// One name, one variable: two variables with the same name and type but bound to different
// data are rejected when the expression is built (std::invalid_argument); the same variable
// used twice, or equal copied scalars, are fine. (Different types: compile_fail/same_name_variables.)
#include <support/check.hpp>

#include <tad/tad.hpp>

#include <stdexcept>
#include <vector>

BOOST_AUTO_TEST_CASE(same_name_different_data_throws) {
  std::vector<double> a{1, 2, 3}, b{4, 5, 6};
  double s = 2, t = 2;
  BOOST_CHECK_THROW(tad::var<"x">(a) + tad::var<"x">(b), std::invalid_argument);
  BOOST_CHECK_THROW(tad::sum(tad::var<"x">(a) * tad::exp(tad::var<"x">(b))), std::invalid_argument);
  BOOST_CHECK_THROW(tad::var<"s">(s) * tad::var<"s">(t), std::invalid_argument);  // two lvalues
  BOOST_CHECK_THROW(tad::var<"s">(2.0) * tad::var<"s">(3.0), std::invalid_argument);  // two different copies
  BOOST_CHECK_THROW(tad::var<"x">(a.data(), 2) + tad::var<"x">(a), std::invalid_argument);  // other length
  // Deep inside both sides, and through a modifier and a custom gradient.
  const auto cg = tad::custom_gradient([](auto u) { return u; }, [](auto dy, auto, auto) { return dy; });
  BOOST_CHECK_THROW(tad::stop_gradient(tad::exp(tad::var<"x">(a))) - cg(tad::var<"x">(b) * 2.0), std::invalid_argument);
  try {
    (void)(tad::var<"x">(a) + tad::var<"x">(b));
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("'x'") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(same_variable_twice_is_fine) {
  std::vector<double> a{1, 2, 3};
  double s = 2;
  auto x = tad::var<"x">(a);
  auto w = tad::var<"w">(s);
  BOOST_CHECK_NO_THROW(tad::sum(x * tad::exp(x)) * w + w);
  BOOST_CHECK_NO_THROW(tad::var<"x">(a) + tad::var<"x">(a));  // same storage, another leaf object
  BOOST_CHECK_NO_THROW(tad::var<"s">(2.0) * tad::var<"s">(2.0));
  auto [v, g] = tad::grad(tad::sum(tad::var<"x">(a) * tad::var<"x">(a)), x);
  BOOST_TEST(v == 14.0);
  BOOST_TEST(g[2] == 6.0);
}
