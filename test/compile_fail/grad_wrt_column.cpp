// The gradient of a column is its vector's: grad takes the vector, and says so when given the
// column.
// TAD_EXPECT: an x is a column \(tad::as_column\(v\)\); pass the vector v itself
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> cs{1, 2};
  auto X = tad::var<"X">(xs);
  auto c = tad::var<"c">(cs);
  auto col = tad::as_column(c);
  auto e = tad::sum(X * col);
#ifdef TAD_SHOULD_FAIL
  auto [v, g] = tad::grad(e, col);
#else
  auto [v, g] = tad::grad(e, c);
#endif
  return v > 0 && g.size() == 2 ? 0 : 1;
}
