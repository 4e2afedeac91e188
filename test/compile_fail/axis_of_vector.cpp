// A reduction along an axis needs a matrix expression; of a vector it names the full reduction.
// TAD_EXPECT: tad::sum\(e, axis<K>\): e must be a matrix expression \(rank 2\)
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 0.5);
  std::vector<double> vs{1, 2, 3};
  auto X = tad::var<"X">(xs);
  auto v = tad::var<"v">(vs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(v * 2.0, tad::axis<1>);
#else
  auto e = tad::sum(X * v, tad::axis<1>);
#endif
  return tad::value(tad::sum(e)) > 0 ? 0 : 1;
}
