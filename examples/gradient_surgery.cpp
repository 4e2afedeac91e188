// Gradient surgery: modifiers whose backward differs from the derivative of their forward
// (doc/gradient-surgery.md). Checks its own numbers; returns 1 if one is wrong.
#include <tad/tad.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {
int failures = 0;
void check(const char* what, double got, double want) {
  const bool ok = std::abs(got - want) <= 1e-12 * (1 + std::abs(want));
  std::printf("%-44s %12.9f  %s\n", what, got, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}
}  // namespace

int main() {
  {
    // [stop_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(x * tad::stop_gradient(x), x);  // x^2, but only one factor is differentiated
    // v == 9, g == 3
    // [stop_gradient]
    check("stop_gradient: value of x * stop(x)", v, 9.0);
    check("stop_gradient: gradient", g, 3.0);
  }
  {
    // [scale_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::scale_gradient(x, 5.0), x);  // identity; backward 5 * dy
    // v == 3, g == 5
    // [scale_gradient]
    check("scale_gradient: value", v, 3.0);
    check("scale_gradient: gradient", g, 5.0);
  }
  {
    // [clip_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::clip_gradient(x, -0.1, 0.1), x);  // backward clip(dy, -0.1, 0.1)
    auto [v1, g1] = tad::grad(1.0 * x, x);                           // without it
    // v == 3, g == 0.1; g1 == 1
    // [clip_gradient]
    check("clip_gradient: value", v, 3.0);
    check("clip_gradient: gradient", g, 0.1);
    check("without clip_gradient: value", v1, 3.0);
    check("without clip_gradient: gradient", g1, 1.0);
  }
  {
    // [scale with stop_gradient]
    // The identity with gradient l, written with stop_gradient alone:
    auto shrink_gradient = [](auto x, double l) { return tad::stop_gradient(x * (1 - l)) + x * l; };
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(shrink_gradient(x, 0.25), x);
    // v == 3, g == 0.25
    // [scale with stop_gradient]
    check("stop_gradient(x * (1 - l)) + x * l: value", v, 3.0);
    check("stop_gradient(x * (1 - l)) + x * l: gradient", g, 0.25);
  }
  {
    // [straight_through]
    double xv = 2.7;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::straight_through(tad::round(x), x), x);  // round forward, identity backward
    // v == 3, g == 1
    // [straight_through]
    check("straight_through(round(x), x): value", v, 3.0);
    check("straight_through(round(x), x): gradient", g, 1.0);
  }
  {
    // [reverse_gradient]
    std::vector<double> features{0.5, -1.0, 2.0};
    auto f = tad::var<"f">(features);
    double lambda = 0;
    // Built once; lambda is re-read at every evaluation.
    auto loss = tad::sum(tad::square(tad::reverse_gradient(f, tad::constant_ref(lambda))));
    for (double p : {0.0, 0.25, 0.5, 1.0}) {
      lambda = tad::reversal_strength(p);  // 2 / (1 + exp(-10 p)) - 1
      auto [v, df] = tad::grad(loss, f);   // df[i] == -lambda * 2 * features[i]
      std::printf("p = %.2f  lambda = %.9f  loss = %.4f  df[2] = %.9f\n", p, lambda, v, df[2]);
      check("  loss", v, 0.25 + 1.0 + 4.0);
      check("  df[2] = -lambda * 2 * 2", df[2], -4.0 * std::tanh(5.0 * p));
    }
    // [reverse_gradient]
    check("reversal_strength(0)", tad::reversal_strength(0.0), 0.0);
    check("reversal_strength(0.25)", tad::reversal_strength(0.25), 0.848283639957513);
    check("reversal_strength(0.5)", tad::reversal_strength(0.5), 0.986614298151430);
    check("reversal_strength(1)", tad::reversal_strength(1.0), 0.999909204262595);
  }
  std::printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
