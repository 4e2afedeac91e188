// A dense layer h = tanh(X W + b) and a head h V, with the gradient reversed at the layer's
// output or clipped at the head's (doc/from-tensorflow.md, doc/linear-algebra.md): the reversed
// layer's gradients are -lambda times the plain ones, the head's unchanged. Returns 1 if not.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

int main() {
  constexpr std::size_t n = 8, d = 4, h_dim = 6, out = 2;
  std::vector<double> xs(n * d), ws(d * h_dim), bs(h_dim), vs(h_dim * out), ys(n * out);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.7 * static_cast<double>(i));
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = 0.3 * std::cos(1.3 * static_cast<double>(i));
  for (std::size_t i = 0; i < vs.size(); ++i) vs[i] = 0.5 * std::sin(0.4 * static_cast<double>(i) + 1);
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = std::cos(0.9 * static_cast<double>(i));

  // [dense layer with a reversed gradient]
  auto X = tad::constant(xs.data(), n, d);
  auto W = tad::var<"W">(ws.data(), d, h_dim);
  auto b = tad::var<"b">(bs);
  auto V = tad::var<"V">(vs.data(), h_dim, out);
  auto Y = tad::constant(ys.data(), n, out);
  const double lambda = 0.3;
  auto h = tad::tanh(tad::matmul(X, W) + b);                    // the dense layer
  auto reversed = tad::matmul(tad::reverse_gradient(h, lambda), V);  // its gradient times -lambda
  auto [loss, gW, gb, gV] = tad::grad(tad::sum(tad::square(reversed - Y)), W, b, V);
  // [dense layer with a reversed gradient]

  auto [plain_loss, pW, pb, pV] = tad::grad(tad::sum(tad::square(tad::matmul(h, V) - Y)), W, b, V);
  // [clipped head]
  auto clipped = tad::clip_gradient(tad::matmul(h, V), -0.5, 0.5);  // dY clipped before both GEMMs
  auto [clipped_loss, cW, cb, cV] = tad::grad(tad::sum(tad::square(clipped - Y)), W, b, V);
  // [clipped head]

  double worst = std::abs(loss - plain_loss);
  for (std::size_t i = 0; i < gW.size(); ++i) worst = std::max(worst, std::abs(gW.data()[i] + lambda * pW.data()[i]));
  for (std::size_t i = 0; i < gb.size(); ++i) worst = std::max(worst, std::abs(gb[i] + lambda * pb[i]));
  for (std::size_t i = 0; i < gV.size(); ++i) worst = std::max(worst, std::abs(gV.data()[i] - pV.data()[i]));
  double clip_change = 0;
  for (std::size_t i = 0; i < cV.size(); ++i) clip_change = std::max(clip_change, std::abs(cV.data()[i] - pV.data()[i]));
  std::printf("loss %.6f (clipped head: same loss %.6f); reversed layer gradients = -%.1f x plain: max error %.2e\n",
              loss, clipped_loss, lambda, worst);
  std::printf("clipping dY at 0.5 changes the head's gradient by up to %.4f\n", clip_change);
  const bool ok = worst < 1e-12 && std::abs(clipped_loss - plain_loss) < 1e-12 && clip_change > 0;
  std::printf("%s\n", ok ? "all checks passed" : "FAILED");
  return ok ? 0 : 1;
}
