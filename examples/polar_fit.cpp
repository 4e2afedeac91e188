// A custom gradient with two outputs: points in polar coordinates (r_i, th_i) fitted to target
// points (X_i, Y_i), two of them outliers. `polar` returns both Cartesian coordinates,
// x = r cos(th) and y = r sin(th), and its rule sees both upstream gradients at once, so it
// can clip each point's gradient (dx_i, dy_i) by its norm: the direction kept, the length at
// most `clip` (a rule per output could only clip dx and dy apart, turning the direction).
// The example checks the first gradient against the rule written by hand, trains with plain
// gradient descent (a progress line per 25 epochs) and returns 1 unless the inliers reach
// their targets and the outliers, slowed by the clip, are still on their way.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <tuple>
#include <vector>

int main() {
  const double clip = 0.5, lr = 0.2;
  const std::vector<double> tx{1.0, -0.5, 0.3, 40.0, 0.8, -30.0}, ty{0.5, 1.2, -0.9, 35.0, 0.1, -45.0};
  const std::size_t n = tx.size();
  std::vector<double> r(n, 1.0), th(n);
  for (std::size_t i = 0; i < n; ++i) th[i] = 0.5 * static_cast<double>(i);

  auto polar = tad::custom_gradient(
      [](auto radius, auto angle) { return std::tuple{radius * tad::cos(angle), radius * tad::sin(angle)}; },
      [clip](auto dx, auto dy, auto radius, auto angle, auto, auto) {
        using V = decltype(dx);
        const V norm = tad::math::sqrt(dx * dx + dy * dy), c = tad::simd::splat<V>(clip);
        const V scale = tad::simd::select(norm > c, c / norm, tad::simd::splat<V>(1.0));
        const V cx = scale * dx, cy = scale * dy;
        return tad::adjoints{cx * tad::math::cos(angle) + cy * tad::math::sin(angle),
                             radius * (cy * tad::math::cos(angle) - cx * tad::math::sin(angle))};
      });
  auto R = tad::var<"r">(r);
  auto TH = tad::var<"th">(th);
  auto [x, y] = polar(R, TH);
  const tad::program loss(tad::sum(tad::square(x - tad::constant(tx))) + tad::sum(tad::square(y - tad::constant(ty))));

  std::vector<double> gr(n), gt(n);
  bool ok = true;
  for (int epoch = 0; epoch <= 200; ++epoch) {
    const double value = loss.grad_into(tad::wrt(R, gr), tad::wrt(TH, gt));
    if (epoch == 0) {
      // The rule by hand: (dx, dy) = 2 (x - X, y - Y), clipped to norm `clip`, through the Jacobian.
      for (std::size_t i = 0; i < n; ++i) {
        const double c = std::cos(th[i]), s = std::sin(th[i]);
        double dx = 2 * (r[i] * c - tx[i]), dy = 2 * (r[i] * s - ty[i]);
        const double norm = std::hypot(dx, dy);
        if (norm > clip) dx *= clip / norm, dy *= clip / norm;
        ok = ok && std::abs(gr[i] - (dx * c + dy * s)) < 1e-12 && std::abs(gt[i] - r[i] * (dy * c - dx * s)) < 1e-12;
      }
      std::printf("first gradient equals the rule written by hand: %s\n", ok ? "yes" : "NO");
    }
    if (epoch % 25 == 0) std::printf("epoch %3d  loss %12.6f\n", epoch, value);
    for (std::size_t i = 0; i < n; ++i) r[i] -= lr * gr[i], th[i] -= lr * gt[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double dist = std::hypot(r[i] * std::cos(th[i]) - tx[i], r[i] * std::sin(th[i]) - ty[i]);
    const bool outlier = std::hypot(tx[i], ty[i]) > 10;
    std::printf("point %zu%s: distance to its target %.3g\n", i, outlier ? " (outlier)" : "", dist);
    ok = ok && (outlier ? dist > 1 : dist < 1e-6);
  }
  std::printf("inliers fitted, outliers slowed by the clip: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
