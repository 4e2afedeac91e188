// Reductions down the columns (axis 0) are not built yet: the message says which axis works.
// TAD_EXPECT: tad::mean\(e, axis<0>\): reductions down the columns are not supported yet, only along the rows \(axis<1>\)
#include <tad/tad.hpp>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  auto X = tad::var<"X">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::mean(X, tad::axis<0>);
#else
  auto e = tad::mean(X, tad::axis<1>);
#endif
  return tad::value(tad::sum(e)) > 0 ? 0 : 1;
}
