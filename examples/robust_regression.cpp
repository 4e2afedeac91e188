// Robust regression (doc/training.md): fit y = w x + b by mini-batch SGD on data with 10%
// gross outliers, once with each sample's residual gradient clipped by tad::clip_gradient
// (the gradient of the Huber loss) and once without (least squares). One line per epoch;
// checks that the clipped fit finds the true slope and the plain one does not, and returns 1
// if a check fails.
#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

namespace {

/// A small deterministic generator (64-bit LCG), so the data are the same everywhere.
struct lcg {
  std::uint64_t s;
  double uniform() {  // in [0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
};

constexpr std::size_t n = 200;           // samples
constexpr std::size_t batch = 20;        // mini-batch size
constexpr std::size_t epochs = 30;
constexpr std::size_t steps_per_epoch = n / batch;
constexpr double true_w = 2, true_b = 1;
constexpr double delta = 0.2;  // residuals beyond +-delta contribute a gradient of fixed size

struct data_set {
  std::vector<double> x, y;
  std::vector<bool> outlier;
};

/// y = 2x + 1 + noise (uniform in [-0.1, 0.1]) for x in [-1, 1]; every 10th sample is a gross
/// outlier (a broken reading near -15, at large x, where it pulls the slope down most).
data_set make_data() {
  lcg g{42};
  data_set d;
  for (std::size_t i = 0; i < n; ++i) {
    const bool out = i % 10 == 3;
    const double x = out ? 0.6 + 0.4 * g.uniform() : -1 + 2 * g.uniform();
    const double y = out ? -15 + g.uniform() : true_w * x + true_b + 0.2 * (g.uniform() - 0.5);
    d.x.push_back(x);
    d.y.push_back(y);
    d.outlier.push_back(out);
  }
  return d;
}

struct fit_result {
  double w, b, inlier_rmse;
};

/// Root mean square residual on the inliers only.
double inlier_rmse(const data_set& d, double w, double b) {
  double s = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!d.outlier[i]) {
      const double r = w * d.x[i] + b - d.y[i];
      s += r * r;
      ++k;
    }
  return std::sqrt(s / static_cast<double>(k));
}

/// Mini-batch SGD on the loss that make_loss(w, b, x, y) builds; x and y view the batch buffers.
template <class MakeLoss>
fit_result fit(const char* title, const data_set& d, MakeLoss make_loss) {
  std::printf("%s\n", title);
  std::vector<double> xb(batch), yb(batch);  // the current mini-batch
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  lcg shuffle{7};
  // [robust regression sgd]
  double w_value = 0, b_value = 0;
  auto w = tad::var<"w">(w_value);
  auto b = tad::var<"b">(b_value);
  auto loss = make_loss(w, b, tad::constant(xb), tad::constant(yb));  // built once, views xb and yb
  tad::parameter_set params(w, b);
  tad::gradient_set grads(params);
  tad::identity_transform no_transform;
  tad::sgd opt(params, tad::cosine_decay{.init = 0.5, .total_steps = epochs * steps_per_epoch, .alpha = 0.05});
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    for (std::size_t i = n - 1; i > 0; --i)  // shuffle (Fisher-Yates)
      std::swap(order[i], order[static_cast<std::size_t>(shuffle.uniform() * static_cast<double>(i + 1))]);
    double epoch_loss = 0;
    for (std::size_t s = 0; s < steps_per_epoch; ++s) {
      for (std::size_t j = 0; j < batch; ++j) {  // copy the batch into the buffers the loss views
        xb[j] = d.x[order[s * batch + j]];
        yb[j] = d.y[order[s * batch + j]];
      }
      epoch_loss += tad::train_step(loss, params, grads, no_transform, opt) / steps_per_epoch;
    }
    std::printf("  epoch %2zu  loss %9.4f  w %8.4f  b %8.4f  inlier rmse %7.4f\n", epoch, epoch_loss, w_value,
                b_value, inlier_rmse(d, w_value, b_value));
  }
  // [robust regression sgd]
  return {w_value, b_value, inlier_rmse(d, w_value, b_value)};
}

int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-62s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const data_set d = make_data();
  // [robust regression losses]
  // Each sample's residual r_i = w x_i + b - y_i reaches the loss as 0.5 r_i^2 / batch, so its
  // adjoint is r_i / batch: clipping it to +-delta / batch gives the gradient of the Huber loss,
  // and an outlier pulls no harder than a sample with residual delta.
  auto clipped = [](auto w, auto b, auto x, auto y) {
    constexpr double c = delta / batch;
    return tad::mean(0.5 * tad::square(tad::clip_gradient(w * x + b - y, -c, c)));
  };
  auto plain = [](auto w, auto b, auto x, auto y) { return tad::mean(0.5 * tad::square(w * x + b - y)); };
  // [robust regression losses]
  const fit_result r_clip = fit("SGD, per-sample residual gradient clipped to +-0.2 (clip_gradient):", d, clipped);
  const fit_result r_plain = fit("SGD, least squares (no clipping):", d, plain);

  std::printf("true      w %.4f  b %.4f\n", true_w, true_b);
  std::printf("clipped   w %.4f  b %.4f  inlier rmse %.4f\n", r_clip.w, r_clip.b, r_clip.inlier_rmse);
  std::printf("unclipped w %.4f  b %.4f  inlier rmse %.4f\n", r_plain.w, r_plain.b, r_plain.inlier_rmse);
  check("clipped fit: |w - 2| < 0.1", std::abs(r_clip.w - true_w) < 0.1);
  check("clipped fit: |b - 1| < 0.1", std::abs(r_clip.b - true_b) < 0.1);
  check("unclipped fit: |w - 2| > 1 (pulled by the outliers)", std::abs(r_plain.w - true_w) > 1);
  check("clipped fit: inlier rmse < 0.1, 5x below the unclipped one",
        r_clip.inlier_rmse < 0.1 && 5 * r_clip.inlier_rmse < r_plain.inlier_rmse);
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
