// b(u(x), y) and b(x, u(y)) for the binary ops + - * / and every unary op (common.hpp).
#include "common.hpp"

namespace {
using binary_ops = std::tuple<tad_prop::b_add, tad_prop::b_sub, tad_prop::b_mul, tad_prop::b_div>;
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(binary_op_with_every_unary_op_on_either_side, B, binary_ops) {
  tad_prop::check_binary<B>(tad_prop::seed_of(B::name));
}
