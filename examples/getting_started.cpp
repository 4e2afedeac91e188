// The README's example.
#include <tad/tad.hpp>

#include <cstdio>
#include <vector>

int main() {
  // [readme]
  std::vector<double> data{0.5, -1.0, 2.0, 0.25};
  double w_value = 0.3;
  auto x = tad::var<"x">(data);     // an array variable: views `data`, no copy
  auto w = tad::var<"w">(w_value);  // a scalar variable: reads `w_value` at each evaluation

  // The expression is a type; its gradient runs as one fused SIMD loop, with no tape.
  auto loss = tad::sum(tad::square(tad::tanh(w * x) - 0.5));

  auto [value, dx, dw] = tad::grad(loss, x, w);  // value, then gradients in argument order
  std::printf("loss %.6f  d/dw %.6f  d/dx[0] %.6f\n", value, dw, dx[0]);
  // [readme]
  return 0;
}
