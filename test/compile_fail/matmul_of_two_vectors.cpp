// matmul of two vectors would be ambiguous (inner or outer?): the error names both.
// TAD_EXPECT: both are vectors; their inner product is tad::dot\(a, b\), their outer product tad::outer\(a, b\)
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> us(3, 0.5), vs(3, 0.25);
  auto u = tad::var<"u">(us);
  auto v = tad::constant(vs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::matmul(u, v));
#else
  auto e = tad::sum(tad::outer(u, v));
#endif
  auto [val, g] = tad::grad(e, u);
  return val > 0 && g.size() == 3 ? 0 : 1;
}
