// softmax without an axis is one distribution over a vector's elements; of a matrix it would be
// ambiguous (PyTorch requires dim), and the error names the row-wise form.
// TAD_EXPECT: tad::softmax\(e\): e must be a vector expression .*tad::softmax\(e, tad::axis<1>\)
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(3, 3, 0.5);
  auto X = tad::var<"X">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::softmax(X));
#else
  auto e = tad::sum(tad::softmax(X, tad::axis<1>));
#endif
  return tad::value(e) > 2.9 ? 0 : 1;
}
