// Softmax regression over 100 features and 10 classes (doc/linear-algebra.md): logits X W + b,
// mean softmax cross-entropy, Adam, minibatches of 100 from 2,000 samples whose labels come from
// a hidden linear model (argmax of X W* + noise). One line per epoch; checks that the training
// accuracy exceeds 0.9 and that the loss fell below half its start; returns 1 if not.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <vector>

namespace {

struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * std::numbers::pi * uniform()); }
};

constexpr std::size_t n = 2000, features = 100, classes = 10, batch = 100, epochs = 15;

}  // namespace

int main() {
  lcg g{11};
  std::vector<float> xs(n * features), truth(features * classes);
  std::vector<int> labels(n);
  for (float& v : xs) v = static_cast<float>(g.normal());
  for (float& v : truth) v = static_cast<float>(g.normal());
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t best = 0;
    double best_z = -1e300;
    for (std::size_t c = 0; c < classes; ++c) {
      double z = 0.5 * g.normal();
      for (std::size_t f = 0; f < features; ++f) z += xs[i * features + f] * truth[f * classes + c];
      if (z > best_z) best_z = z, best = c;
    }
    labels[i] = static_cast<int>(best);
  }

  // [softmax regression]
  std::vector<float> w(features * classes), b(classes);
  std::vector<float> xb(batch * features);
  std::vector<int> yb(batch);
  auto W = tad::var<"W">(w.data(), features, classes);
  auto B = tad::var<"b">(b);
  auto logits = tad::matmul(tad::constant(xb.data(), batch, features), W) + B;
  const tad::program loss(tad::mean(tad::softmax_cross_entropy(logits, yb)));
  tad::parameter_set params(W, B);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.02f);
  // [softmax regression]

  auto all_logits = tad::matmul(tad::constant(xs.data(), n, features), W) + B;
  double first_loss = 0, last_loss = 0, accuracy = 0;
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    double epoch_loss = 0;
    for (std::size_t s = 0; s < n / batch; ++s) {
      for (std::size_t j = 0; j < batch; ++j) {
        for (std::size_t f = 0; f < features; ++f) xb[j * features + f] = xs[(s * batch + j) * features + f];
        yb[j] = labels[s * batch + j];
      }
      epoch_loss += tad::train_step(loss, params, grads, tad::identity_transform{}, opt);
    }
    const double steps = static_cast<double>(n) / static_cast<double>(batch);
    epoch_loss /= steps;
    if (epoch == 1) first_loss = epoch_loss;
    last_loss = epoch_loss;
    const tad::matrix<float> z = tad::value(all_logits);
    std::size_t right = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t best = 0;
      for (std::size_t c = 1; c < classes; ++c) best = z(i, c) > z(i, best) ? c : best;
      if (best == static_cast<std::size_t>(labels[i])) ++right;
    }
    accuracy = static_cast<double>(right) / static_cast<double>(n);
    std::printf("epoch %2zu  loss %.4f  accuracy %.3f\n", epoch, epoch_loss, accuracy);
  }
  const bool ok = accuracy > 0.9 && last_loss < first_loss / 2;
  std::printf("accuracy %.3f > 0.9, loss %.4f < %.4f / 2: %s\n", accuracy, last_loss, first_loss, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
