// A column of a reduction along the rows (as_column(sum(X, axis<1>))) is one value per row of
// the matrix it meets; combined with vectors only it has no matrix, and the error says so.
// TAD_EXPECT: tad: a column \(tad::as_column\) is combined with no matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(3, 3, 0.5);
  std::vector<double> ys{1, 2, 3};
  auto X = tad::var<"X">(xs);
  [[maybe_unused]] auto y = tad::constant(ys);  // used by the failing form only
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(y - tad::as_column(tad::sum(X, tad::axis<1>)));
#else
  auto e = tad::sum(X - tad::as_column(tad::sum(X, tad::axis<1>)));
#endif
  return tad::value(e) < 1 ? 0 : 1;
}
