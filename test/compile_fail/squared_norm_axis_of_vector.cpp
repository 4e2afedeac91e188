// squared_norm along an axis needs a matrix expression, and says so in its own name (it is
// sum(square(e), axis<1>), whose message named sum).
// TAD_EXPECT: tad::squared_norm\(e, axis<K>\): e must be a matrix expression \(rank 2\); for a vector or a scalar, reduce it whole: tad::squared_norm\(e\)
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> vs{1, 2, 3};
  auto X = tad::var<"X">(xs);
  auto v = tad::var<"v">(vs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::squared_norm(v, tad::axis<1>);
#else
  auto e = tad::squared_norm(X * v, tad::axis<1>);
#endif
  return tad::value(tad::sum(e)) > 0 ? 0 : 1;
}
