// softmax_cross_entropy of a matrix of logits and a vector of targets: one distribution per
// row, or one over a vector, not a mix.
// TAD_EXPECT: z and t must both be matrices \(one distribution per row\) or both vectors
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> zs(2, 3, 0.5), ts(2, 3, 1.0 / 3);
  std::vector<double> tv(3, 1.0 / 3);
  auto Z = tad::var<"Z">(zs);
  auto T = tad::constant(ts);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::softmax_cross_entropy(Z, tad::constant(tv)));
#else
  auto e = tad::sum(tad::softmax_cross_entropy(Z, T));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
