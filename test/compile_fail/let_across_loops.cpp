// A let whose body's rule is not linear in the adjoint (clip_gradient), used under two
// reductions (two loops): not supported yet, one error naming the let.
// TAD_EXPECT: variable_name<'c'>.*is used in more than one loop or loop invariant.*not supported yet|is used in more than one loop or loop invariant.*not supported yet.*variable_name<'c'>
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto c = tad::let<"c">(tad::clip_gradient(x, -0.5, 0.5));
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(c) + tad::max(c);
#else
  auto e = tad::sum(c + c);
#endif
  return std::get<0>(tad::grad(e, x)) > 0 ? 0 : 1;
}
