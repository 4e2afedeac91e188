// GradBench's ode (cmpad's an_ode): y' = f(x, y) with f_0 = x_0 and f_i = x_i y_{i-1}, from
// y(0) = 0 to t = 2 by s steps of classical Runge-Kutta; "primal" is y(2) (n values), "gradient"
// the gradient of its last element with respect to x.
//
// tad: one tad::scan over s steps (the steps read no input: a s x 0 matrix of inputs) whose carry
// is y and whose body is one RK4 step, f written as `x * (shift(v) + e0)` (tad::shift: v one
// element on, a zero first; e0 = (1, 0, ..., 0)). The programs are built once, in "prepare":
// y(2) for "primal", `sum(y(2) * e_last)` for "gradient"; a call allocates nothing.
#include "tool.hpp"

#include <tad/linalg.hpp>

#include <cstddef>
#include <vector>

namespace {

auto rk4(const std::vector<double>& x, const std::vector<double>& e0, double h) {
  const auto X = tad::var<"x">(x);
  return [X, &e0, h](auto y, auto) {
    const auto f = [&](const auto& v) { return X * (tad::shift(v) + tad::constant(e0)); };
    auto k1 = f(y);
    auto k2 = f(y + (h / 2) * k1);
    auto k3 = f(y + (h / 2) * k2);
    auto k4 = f(y + h * k3);
    return y + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  };
}

auto final_y(const std::vector<double>& x, const std::vector<double>& e0, const std::vector<double>& y0,
             const std::vector<double>& none, std::size_t s) {
  return tad::scan(rk4(x, e0, 2.0 / static_cast<double>(s)), tad::constant(y0), tad::constant(none.data(), s, 0));
}

/// n values, 1 at i (none if n = 0).
std::vector<double> unit(std::size_t n, std::size_t i) {
  std::vector<double> v(n, 0.0);
  if (i < n) v[i] = 1;
  return v;
}

struct state {
  std::size_t n, s;
  std::vector<double> x, e0, last, y0, none, y, g;
  using primal_program = tad::program<decltype(final_y(x, e0, y0, none, 0))>;
  using gradient_program = tad::program<decltype(tad::sum(final_y(x, e0, y0, none, 0) * tad::constant(last)))>;
  primal_program primal_prog;
  gradient_program gradient_prog;
  explicit state(const tad_gradbench::json& in)
      : n(in["x"].size()), s(in["s"].get<std::size_t>()), x(in["x"].get<std::vector<double>>()), e0(unit(n, 0)),
        last(unit(n, n - 1)), y0(n, 0.0), y(n), g(n), primal_prog(final_y(x, e0, y0, none, s)),
        gradient_prog(tad::sum(final_y(x, e0, y0, none, s) * tad::constant(last))) {}
  void primal() { primal_prog.evaluate(y); }
  void gradient() { gradient_prog.grad_into(tad::wrt(tad::var<"x">(x), g)); }
  tad_gradbench::json primal_output() const { return y; }
  tad_gradbench::json gradient_output() const { return g; }
};

}  // namespace

int main(int argc, char** argv) { return tad_gradbench::serve<state>(argc, argv, "primal", "gradient"); }
