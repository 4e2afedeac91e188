// A chain of n linear ODEs integrated by RK4 through tad::scan, each element driven by the one
// before it: y_0' = x_0, y_i' = x_i y_{i-1}, y(0) = 0 (GradBench's ode, after cmpad's an_ode).
// The step reads y one element on: tad::shift(y) is (0, y_0, ..., y_{n-2}) (doc/loops.md,
// "shift"). Its exact solution is y_i(t) = x_0 ... x_i t^(i+1) / (i+1)!, so the last element's
// gradient is y_{n-1} / x_j: the example checks tad's value and gradient against it and returns
// 1 if either is off by more than 1e-7 relative (RK4's error here is about 4e-9).
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

int main() {
  const std::size_t n = 6, steps = 200;
  const double t_end = 2, h = t_end / steps;
  std::vector<double> x{0.9, 0.35, 0.7, 0.55, 0.8, 0.45};
  std::vector<double> e0(n, 0.0), last(n, 0.0), y0(n, 0.0), none;
  e0[0] = 1, last[n - 1] = 1;

  auto X = tad::var<"x">(x);
  auto rk4 = [&](auto y, auto) {
    auto f = [&](const auto& v) { return X * (tad::shift(v) + tad::constant(e0)); };  // f(y)_i = x_i y_{i-1}
    auto k1 = f(y);
    auto k2 = f(y + (h / 2) * k1);
    auto k3 = f(y + (h / 2) * k2);
    auto k4 = f(y + h * k3);
    return y + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  };
  auto y_end = tad::scan(rk4, tad::constant(y0), tad::constant(none.data(), steps, 0));  // no input per step
  const tad::program end(tad::sum(y_end * tad::constant(last)));  // y_{n-1}(t_end)
  auto [value, dx] = end.grad(X);

  double exact = 1;  // x_0 ... x_{n-1} t^n / n!
  for (std::size_t i = 0; i < n; ++i) exact *= x[i] * t_end / static_cast<double>(i + 1);
  bool ok = std::abs(value - exact) <= 1e-7 * exact;
  std::printf("y_%zu(%.0f) = %.10f (exact %.10f)\n", n - 1, t_end, value, exact);
  for (std::size_t j = 0; j < n; ++j) {
    const double want = exact / x[j];
    ok = ok && std::abs(dx[j] - want) <= 1e-7 * want;
    std::printf("d y_%zu / d x_%zu = %.10f (exact %.10f)\n", n - 1, j, dx[j], want);
  }
  std::printf("value and gradient within 1e-7 of the exact solution: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
