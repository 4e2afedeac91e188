// tad::shift moves a vector one element on; a matrix (or a scalar) is refused with a message
// that names the op and what it takes. The .ok half shifts a vector.
// TAD_EXPECT: tad::shift\(v\): v must be a vector expression
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> m{1, 2, 3, 4}, v{1, 2};
  const auto M = tad::var<"M">(m.data(), 2, 2);
  const auto V = tad::var<"v">(v);
#ifdef TAD_SHOULD_FAIL
  const auto s = tad::shift(M);
#else
  const auto s = tad::shift(V) + 0.0 * tad::sum(M);
#endif
  auto [val, gv] = tad::program(tad::sum(s * V)).grad(V);
  // sum((0, v0) * v) = v0 v1: 2; its gradient (v1, v0).
  return val == 2 && gv[0] == 2 && gv[1] == 1 ? 0 : 1;
}
