// Consumer test: a project using tad through tad::tad computes a gradient and checks it.
#include <tad/tad.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  std::vector<double> xs{0.5, -1.0, 2.0, 0.25, 1.5};
  double w = 0.75;
  auto x = tad::var<"x">(xs);
  auto s = tad::var<"w">(w);
  // d/dw sum(w x_i)^2 = 2 w sum(x_i^2); d/dx_i = 2 w^2 x_i.
  auto [v, gx, gw] = tad::grad(tad::sum(tad::square(s * x)), x, s);
  double sx2 = 0;
  for (double xi : xs) sx2 += xi * xi;
  bool ok = std::abs(v - w * w * sx2) < 1e-12 && std::abs(gw - 2 * w * sx2) < 1e-12;
  for (std::size_t i = 0; i < xs.size(); ++i) ok = ok && std::abs(gx[i] - 2 * w * w * xs[i]) < 1e-12;
  std::printf("consumer: value %g, d/dw %g: %s\n", v, gw, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
