// One let name with two different bodies in one expression: one error, naming the let
// ('c' shows as variable_name<'c'> in the note that leads to it).
// TAD_EXPECT: variable_name<'c'>.*one let name has two different definitions in one expression|one let name has two different definitions in one expression.*variable_name<'c'>
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto a = tad::let<"c">(tad::exp(x));
#ifdef TAD_SHOULD_FAIL
  auto b = tad::let<"c">(tad::sin(x));
#else
  auto b = tad::let<"d">(tad::sin(x));
#endif
  return tad::value(tad::sum(a + b)) > 0 ? 0 : 1;
}
