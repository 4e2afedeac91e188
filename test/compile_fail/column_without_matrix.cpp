// A column is one value per row of a matrix: a reduction of columns and vectors only (an outer
// product) is not supported yet, and the error says so instead of "not an array".
// TAD_EXPECT: tad::sum\(e\): e holds a column \(tad::as_column\) but no matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> cs{1, 2};
  auto X = tad::var<"X">(xs);
  auto c = tad::var<"c">(cs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::exp(tad::as_column(c)));
#else
  auto e = tad::sum(X * tad::exp(tad::as_column(c)));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
