// A scan inside a scan's body is not supported yet: the error says so.
// TAD_EXPECT: a scan inside a scan's body is not supported yet
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> h(3, 0.0), x(4 * 3, 0.5), w(3 * 3, 0.1);
  const auto h0 = tad::var<"h0">(h.data(), 3);
  const auto X = tad::constant(x.data(), 4, 3);
  const auto W = tad::var<"W">(w.data(), 3, 3);
  const auto inner = [&](auto c, auto xt) { return tad::tanh(tad::matmul(c, W) + xt); };
#ifdef TAD_SHOULD_FAIL
  const auto s = tad::scan([&](auto c, auto) { return tad::scan(inner, c, X); }, h0, X);
#else
  const auto s = tad::scan(inner, h0, X);
#endif
  auto [v, g] = tad::program(tad::sum(s)).grad(W);
  return v == v && g.size() == 9 ? 0 : 1;
}
