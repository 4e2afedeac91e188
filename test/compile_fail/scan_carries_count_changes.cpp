// A scan of a tuple of carries (tad::carries) must return as many carries as h0 holds: here the
// step drops the cell state c, which the error names.
// TAD_EXPECT: step must return as many carries as h0 holds
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> h(3, 0.0), c(3, 0.0), x(4 * 3, 0.5), w(3 * 3, 0.1);
  const auto H0 = tad::var<"h0">(h);
  const auto C0 = tad::constant(c);
  const auto X = tad::constant(x.data(), 4, 3);
  const auto W = tad::var<"W">(w.data(), 3, 3);
#ifdef TAD_SHOULD_FAIL
  const auto step = [&](auto hs, auto cs, auto xt) {
    return tad::carries(tad::tanh(tad::matmul(hs, W) + xt + cs), cs, cs);
  };
#else
  const auto step = [&](auto hs, auto cs, auto xt) {
    return tad::carries(tad::tanh(tad::matmul(hs, W) + xt + cs), cs);
  };
#endif
  const auto s = tad::scan(step, tad::carries(H0, C0), X);
  auto [v, g] = tad::program(tad::sum(s)).grad(W);
  return v == v && g.size() == 9 ? 0 : 1;
}
