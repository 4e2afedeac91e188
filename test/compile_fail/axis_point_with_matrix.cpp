// A row sum (one value per row) combined with a matrix would be broadcast as one of its rows
// (NumPy), which the engine does not run yet: every entry point's shape check says so.
// TAD_EXPECT: tad: a reduction along an axis \(tad::sum\(e, tad::axis<1>\)\) is combined elementwise with a matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(3, 3, 0.5);
  std::vector<double> ys{1, 2, 3};
  auto X = tad::var<"X">(xs);
  auto y = tad::constant(ys);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(X - tad::sum(X, tad::axis<1>));
#else
  auto e = tad::sum(y - tad::sum(X, tad::axis<1>));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
