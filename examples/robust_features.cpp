// Robust regression with features (doc/training.md): fit y = X w + b, X a 1,000 x 8 feature
// matrix, by mini-batch Adam on data of which every tenth sample is a gross outlier (a broken
// reading: minus four times the true response), once with each sample's residual gradient
// clipped by tad::clip_gradient (the gradient of the Huber loss) and once without (least
// squares). The residuals are one reduction along the rows of the batch's feature matrix,
// r = sum(X * w, axis<1>) + b - y; one line per epoch; checks that the clipped fit finds the true
// weights and the plain one does not, and returns 1 if a check fails.
#include <tad/tad.hpp>

#include <algorithm>
#include <array>
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

constexpr std::size_t n = 1000;          // samples
constexpr std::size_t d = 8;             // features
constexpr std::size_t batch = 50;        // mini-batch size
constexpr std::size_t epochs = 20;
constexpr std::size_t steps_per_epoch = n / batch;
constexpr std::array<double, d> true_w{1.0, -2.0, 0.5, 3.0, -1.0, 0.0, 2.0, -0.5};
constexpr double true_b = 0.5;
constexpr double delta = 0.2;  // residuals beyond +-delta contribute a gradient of fixed size

struct data_set {
  tad::matrix<double> X{n, d};
  std::vector<double> y;
  std::vector<bool> outlier;
};

/// y = X w + b + noise (uniform in [-0.1, 0.1]), features uniform in [-1, 1]; every 10th sample
/// is a broken reading, -4 times the true response.
data_set make_data() {
  lcg g{2026};
  data_set s;
  for (std::size_t i = 0; i < n; ++i) {
    double response = true_b;
    for (std::size_t j = 0; j < d; ++j) response += true_w[j] * (s.X(i, j) = -1 + 2 * g.uniform());
    const bool out = i % 10 == 7;
    s.y.push_back(out ? -4 * response : response + 0.2 * (g.uniform() - 0.5));
    s.outlier.push_back(out);
  }
  return s;
}

/// Root mean square residual on the inliers only.
double inlier_rmse(const data_set& s, const std::vector<double>& w, double b) {
  double sum = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!s.outlier[i]) {
      double r = b - s.y[i];
      for (std::size_t j = 0; j < d; ++j) r += s.X(i, j) * w[j];
      sum += r * r;
      ++k;
    }
  return std::sqrt(sum / static_cast<double>(k));
}

/// The largest |w_j - true w_j|.
double weight_error(const std::vector<double>& w) {
  double e = 0;
  for (std::size_t j = 0; j < d; ++j) e = std::max(e, std::abs(w[j] - true_w[j]));
  return e;
}

struct fit_result {
  std::vector<double> w;
  double b, inlier_rmse;
};

/// Mini-batch Adam on the loss that make_loss(w, b, X, y) builds; X and y view the batch buffers.
template <class MakeLoss>
fit_result fit(const char* title, const data_set& s, MakeLoss make_loss) {
  std::printf("%s\n", title);
  tad::matrix<double> xb(batch, d);  // the current mini-batch, refilled before each step
  std::vector<double> yb(batch);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  lcg shuffle{7};
  // [robust features adam]
  std::vector<double> w_value(d, 0.0);
  double b_value = 0;
  auto w = tad::var<"w">(w_value);
  auto b = tad::var<"b">(b_value);
  auto loss = make_loss(w, b, tad::constant(xb), tad::constant(yb));  // built once, views xb and yb
  static_assert(tad::passes_v<decltype(loss), decltype(w), decltype(b)> == 1);  // one pass over X
  tad::parameter_set params(w, b);
  tad::gradient_set grads(params);
  tad::identity_transform no_transform;
  tad::adam opt(params, tad::cosine_decay{.init = 0.1, .total_steps = epochs * steps_per_epoch, .alpha = 0.01});
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    for (std::size_t i = n - 1; i > 0; --i)  // shuffle (Fisher-Yates)
      std::swap(order[i], order[static_cast<std::size_t>(shuffle.uniform() * static_cast<double>(i + 1))]);
    double epoch_loss = 0;
    for (std::size_t step = 0; step < steps_per_epoch; ++step) {
      for (std::size_t k = 0; k < batch; ++k) {  // copy the batch into the buffers the loss views
        const std::size_t i = order[step * batch + k];
        std::copy(s.X.row(i).begin(), s.X.row(i).end(), xb.row(k).begin());
        yb[k] = s.y[i];
      }
      epoch_loss += tad::train_step(loss, params, grads, no_transform, opt) / steps_per_epoch;
    }
    std::printf("  epoch %2zu  loss %9.4f  max |w - true w| %7.4f  b %8.4f  inlier rmse %7.4f\n", epoch, epoch_loss,
                weight_error(w_value), b_value, inlier_rmse(s, w_value, b_value));
  }
  // [robust features adam]
  return {w_value, b_value, inlier_rmse(s, w_value, b_value)};
}

int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-70s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const data_set s = make_data();
  // [robust features losses]
  // Each sample's residual r_i = X_i . w + b - y_i (a reduction along the rows of the batch's
  // feature matrix) reaches the loss as 0.5 r_i^2 / batch, so its adjoint is r_i / batch:
  // clipping it to +-delta / batch gives the gradient of the Huber loss, and a broken reading
  // pulls on w and b no harder than a sample with residual delta.
  auto clipped = [](auto w, auto b, auto X, auto y) {
    constexpr double c = delta / batch;
    return tad::mean(0.5 * tad::square(tad::clip_gradient(tad::sum(X * w, tad::axis<1>) + b - y, -c, c)));
  };
  auto plain = [](auto w, auto b, auto X, auto y) {
    return tad::mean(0.5 * tad::square(tad::sum(X * w, tad::axis<1>) + b - y));
  };
  // [robust features losses]
  const fit_result r_clip = fit("Adam, per-sample residual gradient clipped to +-0.2 (clip_gradient):", s, clipped);
  const fit_result r_plain = fit("Adam, least squares (no clipping):", s, plain);

  std::printf("clipped   max |w - true w| %.4f  b %.4f (true %.4f)  inlier rmse %.4f\n", weight_error(r_clip.w),
              r_clip.b, true_b, r_clip.inlier_rmse);
  std::printf("unclipped max |w - true w| %.4f  b %.4f (true %.4f)  inlier rmse %.4f\n", weight_error(r_plain.w),
              r_plain.b, true_b, r_plain.inlier_rmse);
  check("clipped fit: every |w_j - true w_j| < 0.05", weight_error(r_clip.w) < 0.05);
  check("clipped fit: |b - true b| < 0.05", std::abs(r_clip.b - true_b) < 0.05);
  check("unclipped fit: some |w_j - true w_j| > 0.5 (pulled by the outliers)", weight_error(r_plain.w) > 0.5);
  check("clipped fit: inlier rmse < 0.1, 5x below the unclipped one",
        r_clip.inlier_rmse < 0.1 && 5 * r_clip.inlier_rmse < r_plain.inlier_rmse);
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
