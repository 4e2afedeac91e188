// A two-layer MLP classifier (2 -> 32 -> 32 -> 3, tanh, softmax cross-entropy, Adam) on three
// interleaved spirals (doc/linear-algebra.md). The model is one expression with three matrix
// products, evaluated by a tad::program: Eigen multiplies, tad's loops do the rest, and a
// training step allocates nothing. One line per epoch; checks that the training accuracy
// exceeds 0.9 and returns 1 if it does not.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <utility>
#include <vector>

namespace {

/// A small deterministic generator (64-bit LCG).
struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
};

constexpr std::size_t classes = 3, per_class = 200, n = classes * per_class;
constexpr std::size_t hidden = 32, batch = 60, epochs = 60;

/// Three spirals: class c's points at radius t and angle 4 t + 2 pi c / 3 (plus noise).
void make_spirals(std::vector<float>& x, std::vector<int>& label) {
  lcg g{7};
  for (std::size_t c = 0; c < classes; ++c) {
    for (std::size_t i = 0; i < per_class; ++i) {
      const double t = static_cast<double>(i) / per_class;
      const double a = 4 * t + 2 * std::numbers::pi * static_cast<double>(c) / classes + 0.2 * (g.uniform() - 0.5);
      x.push_back(static_cast<float>(t * std::cos(a)));
      x.push_back(static_cast<float>(t * std::sin(a)));
      label.push_back(static_cast<int>(c));
    }
  }
}

/// Glorot-uniform weights.
std::vector<float> glorot(std::size_t fan_in, std::size_t fan_out, lcg& g) {
  std::vector<float> w(fan_in * fan_out);
  const double r = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (float& v : w) v = static_cast<float>(r * (2 * g.uniform() - 1));
  return w;
}

}  // namespace

int main() {
  std::vector<float> xs;
  std::vector<int> labels;
  make_spirals(xs, labels);
  lcg g{42};
  std::vector<float> w1 = glorot(2, hidden, g), w2 = glorot(hidden, hidden, g), w3 = glorot(hidden, classes, g);
  std::vector<float> b1(hidden), b2(hidden), b3(classes);

  // [mlp]
  std::vector<float> xb(batch * 2);  // the current batch, rewritten before every step
  std::vector<int> yb(batch);
  auto X = tad::constant(xb.data(), batch, 2);
  auto W1 = tad::var<"W1">(w1.data(), 2, hidden);
  auto W2 = tad::var<"W2">(w2.data(), hidden, hidden);
  auto W3 = tad::var<"W3">(w3.data(), hidden, classes);
  auto B1 = tad::var<"b1">(b1);
  auto B2 = tad::var<"b2">(b2);
  auto B3 = tad::var<"b3">(b3);
  auto h1 = tad::tanh(tad::matmul(X, W1) + B1);  // b1 is added to every row
  auto h2 = tad::tanh(tad::matmul(h1, W2) + B2);
  auto logits = tad::matmul(h2, W3) + B3;
  const tad::program loss(tad::mean(tad::softmax_cross_entropy(logits, yb)));  // buffers allocated here

  tad::parameter_set params(W1, B1, W2, B2, W3, B3);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.01f);
  // [mlp]

  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  auto Xall = tad::constant(xs.data(), n, 2);
  auto all_logits = tad::matmul(tad::tanh(tad::matmul(tad::tanh(tad::matmul(Xall, W1) + B1), W2) + B2), W3) + B3;
  double accuracy = 0;
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[static_cast<std::size_t>(g.uniform() * static_cast<double>(i + 1))]);
    double epoch_loss = 0;
    for (std::size_t s = 0; s < n / batch; ++s) {
      for (std::size_t j = 0; j < batch; ++j) {
        const std::size_t k = order[s * batch + j];
        xb[2 * j] = xs[2 * k], xb[2 * j + 1] = xs[2 * k + 1], yb[j] = labels[k];
      }
      epoch_loss += tad::train_step(loss, params, grads, tad::identity_transform{}, opt);
    }
    const tad::matrix<float> z = tad::value(all_logits);
    std::size_t right = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t best = 0;
      for (std::size_t c = 1; c < classes; ++c) best = z(i, c) > z(i, best) ? c : best;
      if (best == static_cast<std::size_t>(labels[i])) ++right;
    }
    accuracy = static_cast<double>(right) / n;
    const double steps = static_cast<double>(n) / static_cast<double>(batch);
    std::printf("epoch %2zu  loss %.4f  accuracy %.3f\n", epoch, epoch_loss / steps, accuracy);
  }
  const bool ok = accuracy > 0.9;
  std::printf("training accuracy %.3f > 0.9: %s\n", accuracy, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
