// A let whose body's rule is not linear in the adjoint (clip_gradient), used in the scalar code
// above the loops and in a loop (a loop invariant): not supported, one error naming the let.
// (Used in the arguments of several whole-array reductions it is: test/gradient/sharing_loops.cpp.)
// TAD_EXPECT: variable_name<'c'>.*is used in more than one loop or loop invariant.*supported only where|is used in more than one loop or loop invariant.*supported only where.*variable_name<'c'>
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  double sv = 0.5;
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"s">(sv);
  auto c = tad::let<"c">(tad::clip_gradient(s * s, -0.5, 0.5));
#ifdef TAD_SHOULD_FAIL
  auto e = c + tad::sum(tad::exp(x * c));
#else
  auto e = c + tad::sum(tad::exp(x * tad::clip_gradient(s * s, -0.5, 0.5)));
#endif
  return std::get<0>(tad::grad(e, x, s)) > 0 ? 0 : 1;
}
