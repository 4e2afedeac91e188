// A dense layer h = tanh(X W + b) and a head h V, with the gradient reversed at the layer's
// output or clipped at the head's (doc/from-tensorflow.md, doc/linear-algebra.md): the reversed
// layer's gradients are -lambda times the plain ones, the head's unchanged; the head's product
// with its rule overridden (feedback alignment); and the layer shared by two heads under a clip
// (one node: the clip runs once on the heads' summed adjoint). Returns 1 if not.
#include <tad/linalg.hpp>

#include <Eigen/Core>
#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace {
/// A shared layer, its output clipped, feeding two heads: one node (a let holding a product, a
/// stage of the program), whose heads' adjoints are summed before the clip runs once. Returns
/// the largest difference of dW from the backward written by hand.
double shared_clipped_layer(std::vector<double>& xs, std::vector<double>& ws, std::vector<double>& bs,
                            std::vector<double>& vs, std::vector<double>& ys, std::size_t n, std::size_t d,
                            std::size_t h_dim, std::size_t out) {
  std::vector<double> v2s(h_dim * out);
  for (std::size_t i = 0; i < v2s.size(); ++i) v2s[i] = 0.4 * std::cos(0.6 * static_cast<double>(i));
  auto X = tad::constant(xs.data(), n, d);
  auto W = tad::var<"W">(ws.data(), d, h_dim);
  auto b = tad::var<"b">(bs);
  auto V1 = tad::var<"V">(vs.data(), h_dim, out);
  auto V2 = tad::var<"V2">(v2s.data(), h_dim, out);
  auto T = tad::constant(ys.data(), n, out);
  // [shared clipped layer]
  auto h = tad::let<"h">(tad::clip_gradient(tad::tanh(tad::matmul(X, W) + b), -0.3, 0.3));
  auto loss = tad::sum(tad::square(tad::matmul(h, V1))) + tad::sum(tad::matmul(h, V2) * T);
  auto [v, gW, gb, gV1, gV2] = tad::grad(loss, W, b, V1, V2);  // TensorFlow's numbers
  // [shared clipped layer]
  (void)v, (void)gb, (void)gV1, (void)gV2;
  // The backward by hand: dH = 2 (H V1) V1^T + T V2^T, clipped; dZ = dH (1 - H^2); dW = X^T dZ.
  using M = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto map = [](std::vector<double>& buf, std::size_t r, std::size_t c) {
    return Eigen::Map<M>(buf.data(), static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
  };
  M Z = map(xs, n, d) * map(ws, d, h_dim);
  Z.rowwise() += Eigen::Map<Eigen::RowVectorXd>(bs.data(), static_cast<Eigen::Index>(h_dim));
  const M H = Z.array().tanh().matrix();
  const M dH = (2 * H * map(vs, h_dim, out) * map(vs, h_dim, out).transpose() + map(ys, n, out) * map(v2s, h_dim, out).transpose())
                   .cwiseMax(-0.3)
                   .cwiseMin(0.3);
  const M dW = map(xs, n, d).transpose() * dH.cwiseProduct((1 - H.array().square()).matrix());
  double error = 0;
  for (std::size_t i = 0; i < gW.size(); ++i) error = std::max(error, std::abs(gW.data()[i] - dW.data()[i]));
  std::printf("shared clipped layer, two heads: dW as the backward by hand (max diff %.2e)\n", error);
  return error;
}
}  // namespace

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

  // [feedback alignment]
  // The head's product with its rule overridden: h's adjoint is dY R (a fixed random R in place
  // of V^T), V's gradient stays h^T dY. The scope covers every product in it: the layer's own
  // product keeps the true rule through an inner scope (an inner scope wins).
  Eigen::MatrixXd R = Eigen::MatrixXd::Random(out, h_dim);
  auto true_rule = [](const auto& dy, const auto& lhs, const auto& rhs, const auto& /*y*/) {
    return tad::adjoints{dy * rhs.transpose(), lhs.transpose() * dy};  // dA = dY B^T, dB = A^T dY
  };
  auto feedback = [&R](const auto& dy, const auto& lhs, const auto& /*rhs*/, const auto& /*y*/) {
    return tad::adjoints{dy * R, lhs.transpose() * dy};
  };
  namespace hana = boost::hana;
  auto own = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, true_rule));
  auto aligned = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, feedback));
  auto layer = tad::tanh(tad::override_gradients(tad::matmul(X, W), own) + b);
  auto head = tad::override_gradients(tad::matmul(layer, V), aligned);
  auto [fa_loss, fW, fb, fV] = tad::grad(tad::sum(tad::square(head - Y)), W, b, V);
  // [feedback alignment]
  // With R = V^T, feedback alignment is backpropagation.
  R = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(vs.data(), h_dim, out).transpose();
  auto [bp_loss, bW, bb, bV] = tad::grad(tad::sum(tad::square(head - Y)), W, b, V);
  double fa_head = 0, fa_layer = 0, bp_layer = 0;
  for (std::size_t i = 0; i < fV.size(); ++i) fa_head = std::max(fa_head, std::abs(fV.data()[i] - pV.data()[i]));
  for (std::size_t i = 0; i < fW.size(); ++i) fa_layer = std::max(fa_layer, std::abs(fW.data()[i] - pW.data()[i]));
  for (std::size_t i = 0; i < bW.size(); ++i) bp_layer = std::max(bp_layer, std::abs(bW.data()[i] - pW.data()[i]));
  for (std::size_t i = 0; i < bb.size(); ++i) bp_layer = std::max(bp_layer, std::abs(bb[i] - pb[i]));
  std::printf("feedback alignment: head's gradient as backprop (max diff %.2e), layer's differs by %.4f; "
              "with R = V^T the layer's matches (%.2e)\n",
              fa_head, fa_layer, bp_layer);

  double worst = std::abs(loss - plain_loss);
  for (std::size_t i = 0; i < gW.size(); ++i) worst = std::max(worst, std::abs(gW.data()[i] + lambda * pW.data()[i]));
  for (std::size_t i = 0; i < gb.size(); ++i) worst = std::max(worst, std::abs(gb[i] + lambda * pb[i]));
  for (std::size_t i = 0; i < gV.size(); ++i) worst = std::max(worst, std::abs(gV.data()[i] - pV.data()[i]));
  double clip_change = 0;
  for (std::size_t i = 0; i < cV.size(); ++i) clip_change = std::max(clip_change, std::abs(cV.data()[i] - pV.data()[i]));
  std::printf("loss %.6f (clipped head: same loss %.6f); reversed layer gradients = -%.1f x plain: max error %.2e\n",
              loss, clipped_loss, lambda, worst);
  std::printf("clipping dY at 0.5 changes the head's gradient by up to %.4f\n", clip_change);

  worst = std::max(worst, shared_clipped_layer(xs, ws, bs, vs, ys, n, d, h_dim, out));
  const bool ok = worst < 1e-12 && std::abs(clipped_loss - plain_loss) < 1e-12 && clip_change > 0 &&
                  std::abs(fa_loss - plain_loss) < 1e-12 && std::abs(bp_loss - plain_loss) < 1e-12 &&
                  fa_head < 1e-12 && fa_layer > 1e-3 && bp_layer < 1e-12;
  std::printf("%s\n", ok ? "all checks passed" : "FAILED");
  return ok ? 0 : 1;
}
