// Smoke test of the test harness; removed once real test folders exist.
#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE(one_plus_one) { BOOST_TEST(1 + 1 == 2); }
