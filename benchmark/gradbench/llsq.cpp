// GradBench's llsq: least squares of a polynomial fit, `0.5 sum_i (s(t_i) - sum_j x_j t_i^j)^2`
// over n points t_i = -1 + 2 i / (n - 1), s the sign function; its value and its gradient with
// respect to the m coefficients x. tad: the n x m matrix of powers t_i^j and the signs are data
// (computed once, in "prepare"), and the loss is `0.5 sum(square(s - sum(V * x, axis<1>)))`, one
// expression: a row-wise dot product per point (x broadcast across the rows), then the sum.
#include "tool.hpp"

#include <tad/tad.hpp>

#include <cstddef>
#include <vector>

namespace {

struct state {
  std::size_t n, m;
  std::vector<double> x, v, s, g;
  double value = 0;
  explicit state(const tad_gradbench::json& in)
      : n(in["n"].get<std::size_t>()), m(in["x"].size()), x(in["x"].get<std::vector<double>>()), v(n * m), s(n), g(m) {
    for (std::size_t i = 0; i < n; ++i) {
      const double t = -1 + static_cast<double>(i) * 2 / static_cast<double>(n - 1);
      s[i] = t > 0 ? 1 : t < 0 ? -1 : 0;
      double p = 1;
      for (std::size_t j = 0; j < m; ++j) v[i * m + j] = p, p *= t;
    }
  }
  auto expression() const {
    const auto V = tad::constant(v.data(), n, m);
    return 0.5 * tad::sum(tad::square(tad::constant(s) - tad::sum(V * tad::var<"x">(x), tad::axis<1>)));
  }
  void primal() { value = tad::value(expression()); }
  void gradient() { value = tad::grad_into(expression(), tad::wrt(tad::var<"x">(x), g)); }
  tad_gradbench::json primal_output() const { return value; }
  tad_gradbench::json gradient_output() const { return g; }
};

}  // namespace

int main(int argc, char** argv) { return tad_gradbench::serve<state>(argc, argv, "primal", "gradient"); }
