// GradBench's gmm: the log-posterior of a Gaussian mixture (K components in D dimensions, N
// points; weights alpha, means mu, and precision factors Q_k = diag(exp(q_k)) + the strictly
// lower triangle l_k) with a Wishart prior: "objective", and "jacobian" with respect to alpha,
// mu, q and l. tad: the per-component terms are one tad::map over the components (K at run
// time, nothing unrolled), reduced by a logsumexp down the components; the prior is one
// expression over all factors at once. Each component's q_k and l_k are one D x D block P_k of a
// (K D) x D matrix (q_k on the diagonal, l_k below it), so the map reads it as one slice; the
// masks I and L pick the diagonal and the lower triangle. The program is built once, in
// "prepare"; a call allocates nothing.
#include "tool.hpp"

#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <numbers>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using tad_gradbench::json;

/// log of the multivariate gamma function Gamma_p(a).
double log_multigamma(double a, int p) {
  double r = 0.25 * p * (p - 1) * std::log(std::numbers::pi);
  for (int j = 1; j <= p; ++j) r += std::lgamma(a + 0.5 * (1 - j));
  return r;
}

/// The input, as tad's leaves view it, and the gradient buffers.
struct data {
  std::size_t d, k, n;
  double gamma, m;
  std::vector<double> alpha, mu, p, x, lower, eye, lower_all, eye_all;
  std::vector<double> galpha, gmu, gp;
  double constant = 0, value = 0;

  explicit data(const json& in)
      : d(in["d"].get<std::size_t>()), k(in["k"].get<std::size_t>()), n(in["n"].get<std::size_t>()),
        gamma(in["gamma"].get<double>()), m(in["m"].get<double>()), alpha(in["alpha"].get<std::vector<double>>()),
        mu(k * d), p(k * d * d), x(n * d), lower(d * d), eye(d * d), lower_all(k * d * d), eye_all(k * d * d),
        galpha(k), gmu(k * d), gp(k * d * d) {
    for (std::size_t c = 0; c < k; ++c) {
      const auto& mc = in["mu"][c];
      const auto& qc = in["q"][c];
      const auto& lc = in["l"][c];
      for (std::size_t j = 0; j < d; ++j) mu[c * d + j] = mc[j].get<double>(), p[(c * d + j) * d + j] = qc[j].get<double>();
      std::size_t idx = 0;  // l_k, column by column below the diagonal: Q_k[j][i], i < j
      for (std::size_t i = 0; i < d; ++i)
        for (std::size_t j = i + 1; j < d; ++j) p[(c * d + j) * d + i] = lc[idx++].get<double>();
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < d; ++j) x[i * d + j] = in["x"][i][j].get<double>();
    for (std::size_t r = 0; r < k * d; ++r)
      for (std::size_t c = 0; c < d; ++c) {
        lower_all[r * d + c] = c < r % d ? 1 : 0;
        eye_all[r * d + c] = c == r % d ? 1 : 0;
      }
    for (std::size_t i = 0; i < d * d; ++i) lower[i] = lower_all[i], eye[i] = eye_all[i];
    const double dd = static_cast<double>(d), nn = dd + m + 1;
    constant = -static_cast<double>(n) * dd * 0.5 * std::log(2 * std::numbers::pi) +
               static_cast<double>(k) * (nn * dd * (std::log(gamma) - 0.5 * std::log(2.0)) -
                                         log_multigamma(0.5 * nn, static_cast<int>(d)));
  }

  auto variables() const {
    return std::tuple{tad::var<"alpha">(alpha), tad::var<"mu">(mu.data(), k, d), tad::var<"P">(p.data(), k * d, d)};
  }
  json jacobian() const {
    std::vector<std::vector<double>> jmu(k), jq(k), jl(k);
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < d; ++j) jmu[c].push_back(gmu[c * d + j]), jq[c].push_back(gp[(c * d + j) * d + j]);
      for (std::size_t i = 0; i < d; ++i)
        for (std::size_t j = i + 1; j < d; ++j) jl[c].push_back(gp[(c * d + j) * d + i]);
    }
    return json{{"alpha", galpha}, {"mu", jmu}, {"q", jq}, {"l", jl}};
  }
};

/// The log-posterior less its constants.
auto objective(const data& s) {
  const auto [Alpha, Mu, P] = s.variables();
  const std::size_t d = s.d, k = s.k, n = s.n;
  const auto X = tad::constant(s.x.data(), n, d);
  const auto L = tad::constant(s.lower.data(), d, d);
  const auto I = tad::constant(s.eye.data(), d, d);
  // alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2 for each component k and point i: K x N.
  const auto terms = tad::map(
      k,
      [=](auto a, auto mk, auto pk) {
        const auto q = pk * L + tad::exp(pk * I) * I;  // exp of the diagonal only
        const auto z = tad::matmul(X - mk, tad::transpose(q));
        return a + tad::sum(pk * I) - 0.5 * tad::sum(tad::square(z), tad::axis<1>);
      },
      tad::each_element(Alpha), tad::each_row(Mu), tad::each_block(P));
  const auto main_term = tad::sum(tad::logsumexp(terms, tad::axis<0>)) - static_cast<double>(n) * tad::logsumexp(Alpha);
  // The Wishart prior, less its constant: -(gamma^2 / 2 |Q_k|_F^2 - m sum(q_k)), summed over k.
  const auto Lall = tad::constant(s.lower_all.data(), k * d, d);
  const auto Iall = tad::constant(s.eye_all.data(), k * d, d);
  const auto frobenius = tad::sum(tad::square(tad::exp(P * Iall) * Iall) + tad::square(P * Lall));
  return main_term - (0.5 * s.gamma * s.gamma * frobenius - s.m * tad::sum(P * Iall));
}

struct state {
  data d;
  tad::program<decltype(objective(std::declval<const data&>()))> program;
  explicit state(const json& in) : d(in), program(objective(d)) {}
  void primal() { d.value = program.value() + d.constant; }
  void gradient() {
    const auto [Alpha, Mu, P] = d.variables();
    d.value = program.grad_into(tad::wrt(Alpha, d.galpha), tad::wrt(Mu, d.gmu), tad::wrt(P, d.gp));
  }
  json primal_output() const { return d.value; }
  json gradient_output() const { return d.jacobian(); }
};

}  // namespace

int main(int argc, char** argv) { return tad_gradbench::serve<state>(argc, argv, "objective", "jacobian"); }
