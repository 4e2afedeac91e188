// A column with no matrix at the top of an expression (not inside a reduction) is named by
// every entry point's shape check.
// TAD_EXPECT: tad: a column \(tad::as_column\) is combined with no matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> cs{1, 2};
  auto X = tad::var<"X">(xs);
  auto c = tad::var<"c">(cs);
#ifdef TAD_SHOULD_FAIL
  auto v = tad::value(tad::as_column(c) + 1.0);
#else
  auto v = tad::value(tad::as_column(c) + X);
#endif
  return v.rows() == 2 ? 0 : 1;
}
