// The one Boost.Test main shared by every test.<area> executable (built once, no PCH:
// BOOST_TEST_MODULE changes what <boost/test/unit_test.hpp> expands to).
#define BOOST_TEST_MODULE tad
#ifndef BOOST_TEST_DYN_LINK  // CMake also passes -DBOOST_TEST_DYN_LINK
#define BOOST_TEST_DYN_LINK
#endif
#include <boost/test/unit_test.hpp>
