// grad_into with respect to a matrix variable named like the expression's array variable
// (the same six numbers viewed as 2 x 3): another variable, so a compile error naming 'x'.
// TAD_EXPECT: tad::grad_into\(e, wrt\(x, buffer\)\.\.\.\): an x has the name of a variable of e but is another variable.*variable_name<'x'>|variable_name<'x'>.*tad::grad_into\(e, wrt\(x, buffer\)\.\.\.\): an x has the name of a variable of e but is another variable
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3, 4, 5, 6};
  std::vector<double> g(6);
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::square(x));
#ifdef TAD_SHOULD_FAIL
  auto m = tad::var<"x">(xs.data(), 2, 3);
  double v = tad::grad_into(e, tad::wrt(m, g));
#else
  double v = tad::grad_into(e, tad::wrt(x, g));
#endif
  return v == 91 && g[5] == 12 ? 0 : 1;
}
