// A Gaussian mixture fitted by gradient descent (doc/loops.md): K = 3 components in 2-D, each
// with a weight, a mean and a precision factor Q_k (lower triangular, positive diagonal), the
// log-likelihood GradBench's gmm objective computes (without its constant), plus its Wishart
// prior. The per-component terms are one tad::map over the components' rows and blocks of
// rows, not an unrolled sum: K is a run-time number. Adam on the negative log-likelihood per
// point; one line per 25 steps; checks that the fitted means find the three clusters' centres
// and that the likelihood rose, and returns 1 if not.
#include <tad/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

constexpr std::size_t K = 3, D = 2, N = 300, steps = 300;
constexpr double centres[K][D] = {{-2.0, 0.0}, {2.0, 1.0}, {0.0, -2.5}};

}  // namespace

int main() {
  lcg g{5};
  std::vector<double> x(N * D);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < D; ++j) x[i * D + j] = centres[i % K][j] + 0.5 * g.normal();
  // Parameters: weights (log), means (row k), factors (rows k D .. k D + D - 1; their diagonal
  // is the log of Q_k's).
  std::vector<double> alpha(K), mu(K * D), p(K * D * D);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < D; ++j) mu[k * D + j] = x[(7 * k + 1) * D + j];  // three data points
  // Masks of one D x D block, and of K blocks stacked.
  std::vector<double> lower(D * D), eye(D * D), lower_all(K * D * D), eye_all(K * D * D);
  for (std::size_t r = 0; r < K * D; ++r)
    for (std::size_t c = 0; c < D; ++c) {
      lower_all[r * D + c] = c < r % D ? 1 : 0;
      eye_all[r * D + c] = c == r % D ? 1 : 0;
      if (r < D) lower[r * D + c] = lower_all[r * D + c], eye[r * D + c] = eye_all[r * D + c];
    }

  auto Alpha = tad::var<"alpha">(alpha);
  auto Mu = tad::var<"mu">(mu.data(), K, D);       // component k's mean: row k
  auto P = tad::var<"P">(p.data(), K * D, D);      // component k's factor: rows k D .. k D + D - 1
  auto X = tad::constant(x.data(), N, D);
  auto L = tad::constant(lower.data(), D, D);
  auto I = tad::constant(eye.data(), D, D);
  // alpha_k + log det Q_k - |Q_k (x_i - mu_k)|^2 / 2 for every component k and point i: K x N.
  auto terms = tad::map(K, [&](auto a, auto m, auto pk) {
    auto q = pk * L + tad::exp(pk) * I;            // lower triangular, positive diagonal
    auto z = tad::matmul(X - m, tad::transpose(q));
    return a + tad::sum(pk * I) - 0.5 * tad::sum(tad::square(z), tad::axis<1>);
  }, tad::each_element(Alpha), tad::each_row(Mu), tad::each_block(P));
  auto loglik = tad::sum(tad::logsumexp(terms, tad::axis<0>)) - N * tad::logsumexp(Alpha);

  // GradBench's Wishart prior (gamma = 1, m = 0): sum_k |Q_k|_F^2 / 2, on all blocks at once.
  auto Lall = tad::constant(lower_all.data(), K * D, D);
  auto Iall = tad::constant(eye_all.data(), K * D, D);
  auto prior = 0.5 * tad::sum(tad::square(P * Lall) + tad::square(tad::exp(P) * Iall));
  const tad::program objective(-(loglik - prior) / N);

  tad::parameter_set params(Alpha, Mu, P);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.05);
  double first = 0, last = 0;
  for (std::size_t step = 1; step <= steps; ++step) {
    last = tad::train_step(objective, params, grads, tad::identity_transform{}, opt);
    if (step == 1) first = last;
    if (step % 25 == 0) std::printf("step %3zu  negative log-likelihood (+ prior) per point %.4f\n", step, last);
  }
  // Each centre has a fitted mean near it.
  double worst = 0;
  for (const auto& c : centres) {
    double nearest = INFINITY;
    for (std::size_t k = 0; k < K; ++k) nearest = std::min(nearest, std::hypot(mu[k * D] - c[0], mu[k * D + 1] - c[1]));
    worst = std::max(worst, nearest);
  }
  for (std::size_t k = 0; k < K; ++k)
    std::printf("component %zu: mean (%6.3f, %6.3f)\n", k, mu[k * D], mu[k * D + 1]);
  const bool ok = worst < 0.25 && last < first - 0.5;
  std::printf("every centre within 0.25 of a fitted mean (worst %.3f), objective %.3f -> %.3f: %s\n", worst, first,
              last, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
