// Every binary op and the modifiers with a vector broadcast across a matrix's rows (issue 15; doc/shapes.md): the cases of
// test/property/broadcast_cases.hpp. In test/property (the gcc stage only, for the CI budget);
// test/eval/broadcast.cpp keeps one op in each order and the API for the other stages.
#include "broadcast_cases.hpp"

#include <boost/test/unit_test.hpp>

using tad_test::reals;
using tad_test::matrix_check::form;
namespace cases = tad_test::broadcast_cases;

BOOST_AUTO_TEST_SUITE(broadcast_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(arithmetic_both_orders, T, reals) { cases::arithmetic_both_orders<T, form::row>(); }
BOOST_AUTO_TEST_CASE_TEMPLATE(pow_max_min_where, T, reals) { cases::pow_max_min_where<T, form::row>(); }
BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers_on_a_broadcast, T, reals) { cases::modifiers_on_a_broadcast<T, form::row>(); }

BOOST_AUTO_TEST_SUITE_END()
