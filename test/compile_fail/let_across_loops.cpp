// A let whose body's rule is not linear in the adjoint (clip_gradient) and holds a reduction,
// used in the scalar code above the loops and in a loop (a loop invariant): its rule would have
// to run after the loop that uses it and before the backward pass of the reduction in its body;
// not supported, one error naming the let. (A let of scalars used so is supported, and so is one
// used in the arguments of several whole-array reductions: test/gradient/sharing_loops.cpp.)
// TAD_EXPECT: variable_name<'c'>.*is used in more than one loop or loop invariant.*supported only where|is used in more than one loop or loop invariant.*supported only where.*variable_name<'c'>
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  double sv = 0.5;
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"s">(sv);
#ifdef TAD_SHOULD_FAIL
  auto c = tad::let<"c">(tad::clip_gradient(s * tad::sum(x), -0.5, 0.5));
#else
  auto c = tad::let<"c">(tad::clip_gradient(s * s, -0.5, 0.5));  // scalars only: deferred to the end
#endif
  auto e = c + tad::sum(tad::exp(x * c));
  return std::get<0>(tad::grad(e, x, s)) > 0 ? 0 : 1;
}
