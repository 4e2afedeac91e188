// as_column of a scan's carry (or input, or a map's slice) inside the body is not supported:
// the error names it, where the body would otherwise not compile. The .ok half takes as_column
// of a vector the body captures, which is supported.
// TAD_EXPECT: as_column of the carry or of the input inside the body is not supported yet
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> h(3, 0.1), x(4 * 3, 0.5), m(3 * 3, 0.1), g(3, 0.5);
  const auto H0 = tad::var<"h0">(h);
  const auto X = tad::constant(x.data(), 4, 3);
  const auto M = tad::var<"M">(m.data(), 3, 3);
  const auto G = tad::var<"g">(g);
#ifdef TAD_SHOULD_FAIL
  const auto step = [&](auto c, auto xt) { return tad::tanh(tad::matmul(xt, M * tad::as_column(c))); };
#else
  const auto step = [&](auto c, auto xt) { return tad::tanh(tad::matmul(xt, M * tad::as_column(G)) + c); };
#endif
  const auto r = tad::scan(step, H0, X);
  auto [v, gm] = tad::program(tad::sum(r)).grad(M);
  return v == v && gm.size() == 9 ? 0 : 1;
}
