// A column (`as_column(b)`) broadcast across a matrix's columns (issue 15; doc/shapes.md): three
// losses at every shape, one with a per-row loop invariant (exp of the column), with the
// column's own nest written first and second; then the arithmetic ops and the modifiers of
// test/property/broadcast_cases.hpp (pow, max, min and where run the same elementwise code
// with a column as with a row: broadcast_ops.cpp has them). In test/property (the gcc stage
// only, for the CI budget); test/eval/columns.cpp keeps per-row invariants, the API and the
// errors for the other stages.
#include "broadcast_cases.hpp"

#include <boost/test/unit_test.hpp>

using tad_test::reals;
using namespace tad_test::matrix_check;
namespace cases = tad_test::broadcast_cases;

BOOST_AUTO_TEST_SUITE(column_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_column_at_every_shape, T, reals) {
  // exp(X) * c: d/dc_r = sum_j k_rj exp(x_rj). With a penalty 0.5 |c|^2 in both orders, so c's
  // gradient is first written by the row nest (then added to by c's own nest) and the other way
  // round. X * exp(c): exp(c_r) is a loop invariant of the row, computed once per row.
  const domain any{-2, 2};
  check_broadcast<T, form::column>("exp(X) * column(c)", [](auto X, auto c) { return tad::exp(X) * c; },
                                    [](double x, double y) { return std::exp(x) * y; }, nullptr, nullptr, any, any);
  check_broadcast<T, form::column>("column(c) - tanh(X) with a penalty", [](auto X, auto c) { return c - tad::tanh(X); },
                                    [](double x, double y) { return y - std::tanh(x); }, nullptr, nullptr, any, any,
                                    penalty{0.5});
  check_broadcast<T, form::column>("X * exp(column(c)) with a penalty", [](auto X, auto c) { return X * tad::exp(c); },
                                    [](double x, double y) { return x * std::exp(y); }, nullptr, nullptr, any, any,
                                    penalty{0.25});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(arithmetic_both_orders, T, reals) { cases::arithmetic_both_orders<T, form::column>(); }
BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers_on_a_broadcast, T, reals) { cases::modifiers_on_a_broadcast<T, form::column>(); }

BOOST_AUTO_TEST_SUITE_END()
