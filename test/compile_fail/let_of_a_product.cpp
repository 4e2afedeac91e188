// A let whose body holds a product is not supported yet: the program would have to materialize
// the shared value (doc/linear-algebra.md); the error says to use the product twice.
// TAD_EXPECT: a let whose body holds a matrix product is not supported yet
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> xs(6, 0.5), ws(6, 0.25);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 3, 2);
#ifdef TAD_SHOULD_FAIL
  auto h = tad::let<"h">(tad::tanh(tad::matmul(X, W)));
#else
  auto h = tad::tanh(tad::matmul(X, W));
#endif
  auto [v, g] = tad::grad(tad::sum(h * h) + tad::sum(h), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
