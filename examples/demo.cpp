// tad demo: values and gradients of a few expressions, printed. Run by tools/demo.sh.
#include <tad/tad.hpp>

#include <cstdio>
#include <numbers>
#include <vector>

int main() {
  // [demo-gaussian]
  // Log-likelihood of data y under N(mu, sigma): gradient w.r.t. the data and both parameters.
  std::vector<double> ys{1.2, 0.7, 2.5, 1.9, 0.3, 1.1, 1.6, 2.2, 0.9};
  double mu_v = 1.0, sigma_v = 0.8;
  auto y = tad::var<"y">(ys);
  auto mu = tad::var<"mu">(mu_v);
  auto sigma = tad::var<"sigma">(sigma_v);
  auto loglik = tad::sum(-0.5 * tad::square((y - mu) / sigma) - tad::log(sigma) -
                         0.5 * std::log(2 * std::numbers::pi));
  auto [ll, g_mu, g_sigma, g_y] = tad::grad(loglik, mu, sigma, y);
  std::printf("log-likelihood %.6f  d/dmu %.6f  d/dsigma %.6f  d/dy[0] %.6f\n", ll, g_mu, g_sigma, g_y[0]);
  // [demo-gaussian]

  // [demo-update]
  // Variables view the caller's data: a gradient step changes what the expression sees.
  mu_v += 0.1 * g_mu;
  sigma_v += 0.1 * g_sigma;
  std::printf("after one ascent step: log-likelihood %.6f (mu %.4f, sigma %.4f)\n", tad::value(loglik), mu_v,
              sigma_v);
  // [demo-update]

  // [demo-logsumexp]
  // A multi-pass reduction: stable logsumexp; its gradient is the softmax.
  std::vector<float> logits{1000.f, 1001.f, 999.f, 1000.5f};
  auto z = tad::var<"z">(logits);
  auto [lse, softmax] = tad::grad(tad::logsumexp(z), z);
  std::printf("logsumexp %.4f  softmax [%.4f %.4f %.4f %.4f]\n", lse, softmax[0], softmax[1], softmax[2],
              softmax[3]);
  // [demo-logsumexp]

  // [demo-constexpr]
  // Scalar expressions differentiate at compile time.
  constexpr auto g = [] {
    auto x = tad::var<"x">(2.0);
    return std::get<1>(tad::grad(tad::square(x) * x + 3.0 * x, x));  // 3x^2 + 3
  }();
  static_assert(g == 15.0);
  std::printf("d/dx (x^3 + 3x) at 2 = %.1f (checked at compile time)\n", g);
  // [demo-constexpr]
  return 0;
}
