// A let named like a variable of the expression: one error (a name identifies one variable or
// one shared subexpression).
// TAD_EXPECT: variable_name<'x'>.*a let has the name of a variable of the expression|a let has the name of a variable of the expression.*variable_name<'x'>
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3}, ys{4, 5, 6};
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
#ifdef TAD_SHOULD_FAIL
  auto c = tad::let<"x">(tad::exp(y));
#else
  auto c = tad::let<"c">(tad::exp(y));
#endif
  return tad::value(tad::sum(c + x)) > 0 ? 0 : 1;
}
