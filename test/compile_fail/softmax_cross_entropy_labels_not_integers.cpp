// softmax_cross_entropy(Z, labels) of a matrix takes integer class indices; labels stored as
// doubles are neither labels nor probability targets (a matrix): one message saying so, not the
// matrix-and-vector one.
// TAD_EXPECT: softmax_cross_entropy\(z, labels\): z is a matrix and labels are not a tad expression: labels must be contiguous storage of integers
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> zs(2, 3, 0.5);
  auto Z = tad::var<"Z">(zs);
#ifdef TAD_SHOULD_FAIL
  std::vector<double> labels{0, 2};
#else
  std::vector<int> labels{0, 2};
#endif
  auto e = tad::mean(tad::softmax_cross_entropy(Z, labels));
  return tad::value(e) > 0 ? 0 : 1;
}
