// softmax_cross_entropy of a matrix reads its logits twice in each row (logsumexp and the
// target term); a clip_gradient in the logits would run once per read, not once on the summed
// adjoint as in TensorFlow: refused until the engine sums them (a vector's is supported).
// TAD_EXPECT: softmax_cross_entropy of a matrix: its argument holds a gradient rule not linear
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> zs{1, -0.5, 2, 0.3, 0.1, 0.7}, ts{0, 0, 1, 0, 1, 0};
  auto Z = tad::var<"Z">(zs.data(), 2, 3);
  auto T = tad::constant(ts.data(), 2, 3);
#ifdef TAD_SHOULD_FAIL
  auto logits = tad::clip_gradient(Z, -0.2, 0.2);
#else
  auto logits = tad::scale_gradient(Z, 0.5);
#endif
  auto [v, g] = tad::grad(tad::sum(tad::softmax_cross_entropy(logits, T)), Z);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
