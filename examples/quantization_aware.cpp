// Quantization-aware training (doc/linear-algebra.md, doc/gradient-surgery.md): an MLP
// (2 -> 32 -> 3, tanh, softmax cross-entropy, Adam) on three spirals, once with float weights and
// once with every weight matrix quantized to multiples of 1/8 in the forward pass,
// `straight_through(round(W * 8) / 8, W)`: the forward sees the quantized weights, the gradient
// reaches the float weights as if rounding were the identity. One line per epoch for each run;
// checks that the quantized model's accuracy (with quantized weights) is within 2 points of the
// float model's and above 0.85; returns 1 if not.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <utility>
#include <vector>

namespace {

struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
};

constexpr std::size_t classes = 3, per_class = 150, n = classes * per_class;
constexpr std::size_t hidden = 32, batch = 45, epochs = 80;
constexpr float scale = 8;  // weights are multiples of 1 / scale in the quantized forward

void make_spirals(std::vector<float>& x, std::vector<int>& label) {
  lcg g{7};
  for (std::size_t c = 0; c < classes; ++c) {
    for (std::size_t i = 0; i < per_class; ++i) {
      const double t = static_cast<double>(i) / per_class;
      const double a = 3 * t + 2 * std::numbers::pi * static_cast<double>(c) / classes + 0.2 * (g.uniform() - 0.5);
      x.push_back(static_cast<float>(t * std::cos(a)));
      x.push_back(static_cast<float>(t * std::sin(a)));
      label.push_back(static_cast<int>(c));
    }
  }
}

/// Trains the MLP (quantized weights in the forward if Quantized) and returns its accuracy.
template <bool Quantized>
double train(const std::vector<float>& xs, const std::vector<int>& labels) {
  lcg g{42};
  const auto init = [&](std::size_t fan_in, std::size_t fan_out) {
    std::vector<float> w(fan_in * fan_out);
    const double r = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    for (float& v : w) v = static_cast<float>(r * (2 * g.uniform() - 1));
    return w;
  };
  std::vector<float> w1 = init(2, hidden), w2 = init(hidden, classes), b1(hidden), b2(classes);
  std::vector<float> xb(batch * 2);
  std::vector<int> yb(batch);
  auto W1 = tad::var<"W1">(w1.data(), 2, hidden);
  auto W2 = tad::var<"W2">(w2.data(), hidden, classes);
  auto B1 = tad::var<"b1">(b1);
  auto B2 = tad::var<"b2">(b2);
  // [quantized weights]
  const auto quantized = [](const auto& w) {
    if constexpr (Quantized) return tad::straight_through(tad::round(w * scale) / scale, w);
    else return w;
  };
  const auto network = [&](const auto& x) {
    return tad::matmul(tad::tanh(tad::matmul(x, quantized(W1)) + B1), quantized(W2)) + B2;
  };
  // [quantized weights]
  const tad::program loss(tad::mean(tad::softmax_cross_entropy(network(tad::constant(xb.data(), batch, 2)), yb)));
  tad::parameter_set params(W1, B1, W2, B2);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.02f);
  const auto all = network(tad::constant(xs.data(), n, 2));

  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
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
    const tad::matrix<float> z = tad::value(all);
    std::size_t right = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t best = 0;
      for (std::size_t c = 1; c < classes; ++c) best = z(i, c) > z(i, best) ? c : best;
      if (best == static_cast<std::size_t>(labels[i])) ++right;
    }
    accuracy = static_cast<double>(right) / static_cast<double>(n);
    const double steps = static_cast<double>(n) / static_cast<double>(batch);
    std::printf("  %s epoch %2zu  loss %.4f  accuracy %.3f\n", Quantized ? "quantized" : "float    ", epoch,
                epoch_loss / steps, accuracy);
  }
  return accuracy;
}

}  // namespace

int main() {
  std::vector<float> xs;
  std::vector<int> labels;
  make_spirals(xs, labels);
  const double plain = train<false>(xs, labels);
  const double quantized = train<true>(xs, labels);
  const bool ok = quantized > 0.85 && std::abs(plain - quantized) <= 0.02;
  std::printf("float accuracy %.3f, quantized (weights in steps of 1/8) %.3f: within 2 points: %s\n", plain, quantized,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
