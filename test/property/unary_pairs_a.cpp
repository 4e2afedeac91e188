// f(g(x)) for every outer op f in the first half of the unary table and every inner op g
// (common.hpp). Split in two TUs so that both halves compile in parallel.
#include "common.hpp"

namespace {
template <std::size_t... I>
using indices = std::tuple<std::integral_constant<std::size_t, I>...>;
using outer_ops = indices<0, 1, 2, 3, 4, 5, 6, 7, 8, 9>;
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(outer_op_of_every_unary_op, I, outer_ops) {
  tad_prop::check_outer<I::value>();
}
