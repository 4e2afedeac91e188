// as_column takes a vector leaf: a matrix (or a scalar, or an expression) is named as the problem.
// TAD_EXPECT: tad::as_column\(v\): v must be a vector
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> cs{1, 2};
  auto X = tad::var<"X">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(X * tad::as_column(X));
#else
  auto e = tad::sum(X * tad::as_column(tad::var<"c">(cs)));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
