// tad.hpp declares the products but only <tad/linalg.hpp> (which parses Eigen) evaluates them:
// an evaluation without it names the header.
// TAD_EXPECT: the expression holds a matrix product .*include <tad/linalg.hpp>
#ifdef TAD_SHOULD_FAIL
#include <tad/tad.hpp>
#else
#include <tad/linalg.hpp>
#endif

#include <vector>

int main() {
  std::vector<double> xs(6, 0.5), ws(6, 0.25);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 3, 2);
  auto [v, g] = tad::grad(tad::sum(tad::matmul(X, W)), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
