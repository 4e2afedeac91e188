// A transpose is an operand of a product only (for now): elementwise it is refused by name.
// TAD_EXPECT: a transpose is an operand of tad::matmul only
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> xs(6, 0.5), ys(6, 0.25);
  auto X = tad::var<"X">(xs.data(), 2, 3);
  auto Y = tad::constant(ys.data(), 3, 2);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::transpose(X) * Y);
#else
  auto e = tad::sum(tad::matmul(tad::transpose(X), tad::transpose(Y)));
#endif
  auto [v, g] = tad::grad(e, X);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
