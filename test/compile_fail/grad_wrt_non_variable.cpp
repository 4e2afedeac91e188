// grad with respect to an expression that is not a variable.
// TAD_EXPECT: tad::grad\(e, x\.\.\.\): every x must be a variable made by tad::var
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::exp(x));
#ifdef TAD_SHOULD_FAIL
  auto [v, g] = tad::grad(e, tad::exp(x));
#else
  auto [v, g] = tad::grad(e, x);
#endif
  return v > 0 && g.size() == 3 ? 0 : 1;
}
