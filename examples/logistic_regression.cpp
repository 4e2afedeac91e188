// Logistic regression over a 10,000 x 100 feature matrix (doc/shapes.md, "Reductions along an
// axis"): the logits are `z = sum(X * w, axis<1>)` (X w, one value per row), the loss
// `mean(softplus(z) - y * z)` with an L2 penalty, and one
// gradient is one pass over X. Trained with Adam after clip_by_global_norm; then the same with
// clipped logits (`clip_gradient` on z, shared by a let). Prints the loss and the accuracy per
// epoch and checks that the fit reaches the accuracy of the true weights (within 1 point) and
// points the same way as they do; returns 1 if a check fails.
#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

/// A small deterministic generator (64-bit LCG), so the data are the same everywhere.
struct lcg {
  std::uint64_t s;
  double uniform() {  // in [0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
  double normal() {  // Box-Muller
    const double u = 1 - uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

constexpr std::size_t n = 10000, d = 100;

struct data_set {
  tad::matrix<double> X{n, d};
  std::vector<double> y = std::vector<double>(n), true_w = std::vector<double>(d);
};

/// Features N(0, 1); true weights N(0, 1) / sqrt(d) * 3 (logits of spread about 3); labels
/// drawn from sigmoid(X w_true).
data_set make_data() {
  lcg g{7};
  data_set s;
  for (double& w : s.true_w) w = 3 * g.normal() / std::sqrt(double(d));
  for (std::size_t r = 0; r < n; ++r) {
    double z = 0;
    for (std::size_t j = 0; j < d; ++j) z += (s.X(r, j) = g.normal()) * s.true_w[j];
    s.y[r] = g.uniform() < 1 / (1 + std::exp(-z)) ? 1.0 : 0.0;
  }
  return s;
}

/// The fraction of rows whose label the sign of X w predicts.
double accuracy(const data_set& s, const std::vector<double>& w) {
  std::size_t right = 0;
  for (std::size_t r = 0; r < n; ++r) {
    double z = 0;
    for (std::size_t j = 0; j < d; ++j) z += s.X(r, j) * w[j];
    if ((z > 0) == (s.y[r] > 0.5)) ++right;
  }
  return double(right) / double(n);
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t j = 0; j < a.size(); ++j) ab += a[j] * b[j], aa += a[j] * a[j], bb += b[j] * b[j];
  return ab / std::sqrt(aa * bb);
}

}  // namespace

int main() {
  const data_set s = make_data();
  const double best = accuracy(s, s.true_w);
  std::printf("accuracy of the true weights: %.4f\n", best);
  bool ok = true;

  // The logits z = X w: one value per row (NumPy's (X * w).sum(axis=1)). The loss is the mean
  // logistic loss plus an L2 penalty; its gradient X^T (sigmoid(z) - y) / N + 2e-4 w is one loop
  // over X's rows (each row's dot product, then its gradient term while the row is in cache)
  // and one over w.
  std::vector<double> weights(d, 0.0);
  auto w = tad::var<"w">(weights);
  auto X = tad::constant(s.X);
  auto y = tad::constant(s.y);
  auto z = tad::let<"z">(tad::sum(X * w, tad::axis<1>));
  auto loss = tad::mean(tad::softplus(z) - y * z) + 1e-4 * tad::squared_norm(w);
  static_assert(tad::passes_v<decltype(loss), decltype(w)> == 2);
  tad::parameter_set params(w);
  tad::gradient_set grads(params);
  constexpr std::size_t epochs = 6, steps_per_epoch = 25;
  tad::adam opt(params, 0.05);
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    double l = 0;
    for (std::size_t step = 0; step < steps_per_epoch; ++step)
      l = tad::train_step(loss, params, grads, tad::clip_by_global_norm(1.0), opt);
    std::printf("epoch %zu  loss %.4f  accuracy %.4f\n", epoch, l, accuracy(s, weights));
  }
  const double acc = accuracy(s, weights), cos = cosine(weights, s.true_w);
  std::printf("fit: accuracy %.4f, cosine to the true weights %.4f\n", acc, cos);
  if (acc < best - 0.01 || cos < 0.95) {
    std::printf("FAILED: the fit is worse than expected\n");
    ok = false;
  }

  // Clipped logits: each row's gradient through z is clipped to [-1e-5, 1e-5] (1 / N = 1e-4 is
  // the largest it can be), so confidently wrong rows pull no harder than borderline ones. The
  // let makes z one node: the clip runs once per row, on the summed adjoint of both uses.
  std::vector<double> clipped_weights(d, 0.0);
  auto wc = tad::var<"wc">(clipped_weights);
  auto zc = tad::let<"zc">(tad::clip_gradient(tad::sum(X * wc, tad::axis<1>), -1e-5, 1e-5));
  auto clipped_loss = tad::mean(tad::softplus(zc) - y * zc);
  tad::parameter_set params2(wc);
  tad::gradient_set grads2(params2);
  tad::adam opt2(params2, 0.05);
  for (std::size_t step = 0; step < epochs * steps_per_epoch; ++step)
    tad::train_step(clipped_loss, params2, grads2, tad::clip_by_global_norm(1.0), opt2);
  const double acc2 = accuracy(s, clipped_weights);
  std::printf("clipped logits: accuracy %.4f, cosine to the true weights %.4f\n", acc2,
              cosine(clipped_weights, s.true_w));
  if (acc2 < best - 0.02) {
    std::printf("FAILED: the clipped fit is worse than expected\n");
    ok = false;
  }
  return ok ? 0 : 1;
}
