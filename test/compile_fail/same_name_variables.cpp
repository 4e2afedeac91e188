// Two different variables named "x" in one expression: an array and a scalar.
// TAD_EXPECT: tad: two different variables have the same name in one expression
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  double s = 2;
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::var<"x">(xs) * tad::var<"x">(s));
#else
  auto e = tad::sum(tad::var<"x">(xs) * tad::var<"s">(s));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
