// A reduction needs an array expression.
// TAD_EXPECT: tad::sum\(e\): e must be an array expression, not a scalar
#include <tad/tad.hpp>

#include <vector>

int main() {
  double s = 2;
  std::vector<double> xs{1, 2, 3};
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::var<"s">(s));
#else
  auto e = tad::sum(tad::var<"s">(s) * tad::var<"x">(xs));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
