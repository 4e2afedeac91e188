// pick(z, labels) and the class-index cross-entropy take integer class indices; labels stored
// as doubles (probabilities, or indices read as floats) are rejected with one message.
// TAD_EXPECT: labels must be contiguous storage of integers, one class index per row of z
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
  auto e = tad::sum(tad::pick(Z, labels));
  return tad::value(e) > 0 ? 0 : 1;
}
