// A scan's step must return the new carry, of the carry's rank: here a matrix carry becomes a
// vector (a reduction along the rows), which the error names.
// TAD_EXPECT: step\(carry, input\) must return the new carry: an expression of the carry's rank
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> h(2 * 3, 0.0), x(4 * 3, 0.5), w(3 * 3, 0.1);
  const auto H0 = tad::var<"h0">(h.data(), 2, 3);
  const auto X = tad::constant(x.data(), 4, 3);
  const auto W = tad::var<"W">(w.data(), 3, 3);
#ifdef TAD_SHOULD_FAIL
  const auto s = tad::scan([&](auto c, auto xt) { return tad::sum(tad::matmul(c, W) + xt, tad::axis<1>); }, H0, X);
#else
  const auto s = tad::scan([&](auto c, auto xt) { return tad::tanh(tad::matmul(c, W) + xt); }, H0, X);
#endif
  auto [v, g] = tad::program(tad::sum(s)).grad(W);
  return v == v && g.size() == 9 ? 0 : 1;
}
