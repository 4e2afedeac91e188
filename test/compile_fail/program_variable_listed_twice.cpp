// tad::program::grad_into checks its arguments at compile time as tad::grad_into does (the
// engine sees only the expression around the products): one variable listed twice is named.
// TAD_EXPECT: tad::grad_into\(e, wrt\(x, buffer\)\.\.\.\): a variable is listed twice.*variable_name<'W'>|variable_name<'W'>.*tad::grad_into\(e, wrt\(x, buffer\)\.\.\.\): a variable is listed twice
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> xs(6, 0.5), ws(6, 0.25), g1(6), g2(6);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 3, 2);
  const tad::program p(tad::sum(tad::tanh(tad::matmul(X, W))));
#ifdef TAD_SHOULD_FAIL
  const double v = p.grad_into(tad::wrt(W, g1), tad::wrt(W, g2));
#else
  const double v = p.grad_into(tad::wrt(W, g1));
#endif
  return v > 0 ? 0 : 1;
}
