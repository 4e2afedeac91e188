// Mixing float and double arrays in one expression is ambiguous.
// TAD_EXPECT: tad: an expression mixes float and double variables or arrays
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
#ifdef TAD_SHOULD_FAIL
  std::vector<float> ys{1, 2, 3};
#else
  std::vector<double> ys{1, 2, 3};
#endif
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
  return tad::value(tad::sum(x * y)) > 0 ? 0 : 1;
}
