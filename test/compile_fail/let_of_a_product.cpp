// A let of an array whose body holds a product is a stage of the program (decisions.md 56); a
// let of a scalar holding one is not supported yet: the error says to let the product instead
// (the .ok half, whose value and gradient it checks).
// TAD_EXPECT: a let of a scalar whose body holds a matrix product .*is not supported yet
#include <tad/linalg.hpp>

#include <cmath>
#include <vector>

int main() {
  std::vector<double> xs(6, 0.5), ws(6, 0.25);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 3, 2);
#ifdef TAD_SHOULD_FAIL
  auto s = tad::let<"s">(tad::sum(tad::matmul(X, W)));
  auto [v, g] = tad::grad(s * s, W);
#else
  auto h = tad::let<"h">(tad::matmul(X, W));
  auto [v, g] = tad::grad(tad::sum(h) * tad::sum(h), W);
#endif
  // Each of the 4 elements of X W is 3 * 0.5 * 0.25 = 0.375: s = 1.5, v = 2.25, dW = 2 s X^T 1 = 3 * 2 * 0.5.
  return std::abs(v - 2.25) < 1e-12 && std::abs(g(0, 0) - 3.0) < 1e-12 ? 0 : 1;
}
