// The class-index cross-entropy needs a matrix of logits (one row per sample): of a vector, one
// message naming softmax_cross_entropy (it said logsumexp(e, axis<K>) and pick(z, labels)).
// TAD_EXPECT: tad::softmax_cross_entropy\(z, labels\): z must be a matrix expression \(rank 2\): one row per sample
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> zs(2, 3, 0.5);
  std::vector<double> vs{1, 2, 3};
  auto Z = tad::var<"Z">(zs);
  auto v = tad::var<"v">(vs);
  std::vector<int> labels{0, 2};
#ifdef TAD_SHOULD_FAIL
  auto e = tad::mean(tad::softmax_cross_entropy(v, labels));
#else
  auto e = tad::mean(tad::softmax_cross_entropy(Z + v, labels));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
