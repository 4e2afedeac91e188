// grad with respect to a scalar variable named like the expression's array variable: the
// engine finds variables by name, so this once returned the array's summed gradient (12)
// without an error. The error names the variable ('x'), with clang++ too.
// TAD_EXPECT: tad::grad\(e, x\.\.\.\): an x has the name of a variable of e but is another variable.*variable_name<'x'>|variable_name<'x'>.*tad::grad\(e, x\.\.\.\): an x has the name of a variable of e but is another variable
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::square(x));
#ifdef TAD_SHOULD_FAIL
  double sv = 2;
  auto s = tad::var<"x">(sv);
  auto [v, g] = tad::grad(e, s);
  return v == 14 && g == 12 ? 0 : 1;
#else
  auto [v, g] = tad::grad(e, x);
  return v == 14 && g.size() == 3 ? 0 : 1;
#endif
}
