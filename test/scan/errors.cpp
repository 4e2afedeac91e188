// A scan's misuse found at run time: shapes that do not fit, each a tad::shape_error naming the
// shapes, thrown when the program is built (before any call writes a buffer).
#include "support/check.hpp"

#include <tad/linalg.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

BOOST_AUTO_TEST_SUITE(scan_errors)

BOOST_AUTO_TEST_CASE(a_batch_whose_inputs_are_not_whole_blocks_of_rows) {
  std::vector<double> h(2 * 3, 0.0), x(5 * 4, 0.5), w(3 * 3, 0.1), u(4 * 3, 0.1);
  const auto H0 = tad::var<"h0">(h.data(), 2, 3);
  const auto X = tad::constant(x.data(), 5, 4);
  const auto W = tad::var<"W">(w.data(), 3, 3);
  const auto U = tad::var<"U">(u.data(), 4, 3);
  const auto s = tad::scan([&](auto c, auto xt) { return tad::tanh(tad::matmul(c, W) + tad::matmul(xt, U)); }, H0, X);
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(s)); },
                               "tad::scan(step, h0, xs): h0 is 2 x 3, xs is 5 x 4: xs's rows must be a multiple of "
                               "h0's (a block of rows per step)",
                               2, 5);
}

BOOST_AUTO_TEST_CASE(a_step_that_changes_the_carrys_shape) {
  std::vector<double> h(3, 0.0), x(4 * 2, 0.5), w(3 * 5, 0.1), u(2 * 5, 0.1);
  const auto h0 = tad::var<"h0">(h.data(), 3);
  const auto X = tad::constant(x.data(), 4, 2);
  const auto W = tad::var<"W">(w.data(), 3, 5);
  const auto U = tad::var<"U">(u.data(), 2, 5);
  const auto s = tad::scan([&](auto c, auto xt) { return tad::tanh(tad::matmul(c, W) + tad::matmul(xt, U)); }, h0, X);
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(s)); },
                               "tad::scan(step, h0, xs): step(h, x) returns 5 x 1 for a carry h of 3 x 1: the new "
                               "carry must have h0's shape",
                               3, 5);
}

BOOST_AUTO_TEST_CASE(a_product_in_the_body_whose_extents_do_not_agree) {
  std::vector<double> h(3, 0.0), x(4 * 2, 0.5), w(3 * 3, 0.1), u(5 * 3, 0.1);
  const auto h0 = tad::var<"h0">(h.data(), 3);
  const auto X = tad::constant(x.data(), 4, 2);
  const auto W = tad::var<"W">(w.data(), 3, 3);
  const auto U = tad::var<"U">(u.data(), 5, 3);  // the inputs have 2 columns
  const auto s = tad::scan([&](auto c, auto xt) { return tad::tanh(tad::matmul(c, W) + tad::matmul(xt, U)); }, h0, X);
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(s)); },
                               "tad::matmul(a, b): a is 1 x 2, b is 5 x 3: a's columns must be b's rows", 2, 5);
}

BOOST_AUTO_TEST_SUITE_END()
