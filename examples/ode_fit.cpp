// Fitting an ODE's parameters through its integrator (doc/loops.md): a damped oscillator
// x'' = -w^2 x - 2 z w x', integrated by classical Runge-Kutta (RK4) over 200 steps, whose
// frequency w and damping z are recovered from noisy observations of x. The integrator is a
// tad::scan whose body is one RK4 step of the state (x, x') written with the system's matrix,
// which is an expression of the two scalar parameters; the loss reads every step's state.
// Adam on w and z; one line per 50 steps; checks that both are recovered within 2 % and
// returns 1 if not.
#include <tad/linalg.hpp>

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

constexpr std::size_t T = 200, iterations = 400;
constexpr double dt = 0.05, true_w = 2.0, true_z = 0.15;

}  // namespace

int main() {
  // Observations: the true oscillator's x at every step (the closed-form solution), plus noise.
  lcg g{11};
  std::vector<double> obs(T * 2, 0.0);  // row t: (x(t + 1), 0): only x is observed
  const double wd = true_w * std::sqrt(1 - true_z * true_z);
  for (std::size_t t = 0; t < T; ++t) {
    const double s = dt * static_cast<double>(t + 1);
    obs[t * 2] = std::exp(-true_z * true_w * s) * (std::cos(wd * s) + true_z * true_w / wd * std::sin(wd * s)) +
                 0.05 * g.normal();
  }
  std::vector<double> start{1.0, 0.0}, mask{1.0, 0.0};
  // The system's matrix, as a row state times A: (x, v) A = (v, -w^2 x - 2 z w v).
  std::vector<double> e1{0, -1, 0, 0}, e2{0, 0, 0, -2}, e3{0, 0, 1, 0};
  double w = 1.5, z = 0.4;  // the initial guesses

  auto W = tad::var<"w">(w);
  auto Z = tad::var<"z">(z);
  auto A = tad::square(W) * tad::constant(e1.data(), 2, 2) + (Z * W) * tad::constant(e2.data(), 2, 2) +
           tad::constant(e3.data(), 2, 2);
  auto rk4 = [&](auto h, auto) {
    auto k1 = tad::matmul(h, A);
    auto k2 = tad::matmul(h + (dt / 2) * k1, A);
    auto k3 = tad::matmul(h + (dt / 2) * k2, A);
    auto k4 = tad::matmul(h + dt * k3, A);
    return h + (dt / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  };
  std::vector<double> none;  // the steps read no input: a T x 0 matrix
  auto states = tad::scan(rk4, tad::constant(start), tad::constant(none.data(), T, 0), tad::every_step);
  auto residual = (states - tad::constant(obs.data(), T, 2)) * tad::constant(mask);  // x only
  const tad::program loss(tad::mean(tad::square(residual)) * 2.0);

  tad::parameter_set params(W, Z);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.02);
  double l = 0;
  for (std::size_t it = 1; it <= iterations; ++it) {
    l = tad::train_step(loss, params, grads, tad::identity_transform{}, opt);
    if (it % 50 == 0) std::printf("iteration %3zu  mean squared error %.5f  w %.4f  z %.4f\n", it, l, w, z);
  }
  const bool ok = std::abs(w - true_w) < 0.02 * true_w && std::abs(z - true_z) < 0.02 * true_z;
  std::printf("w %.4f (true %.2f), z %.4f (true %.2f), both within 2 %%: %s\n", w, true_w, z, true_z,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
