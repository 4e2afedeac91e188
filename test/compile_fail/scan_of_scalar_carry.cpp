// A scan's carry is a vector or a matrix (a batch, one carry per row); a scalar is refused by
// name.
// TAD_EXPECT: the carry h0 must be a vector or a matrix
#include <tad/linalg.hpp>

#include <vector>

int main() {
  std::vector<double> h(1, 0.0), x(4 * 1, 0.5);
  double a = 0.5;
  const auto k = tad::var<"k">(a);
  const auto X = tad::constant(x.data(), 4, 1);
#ifdef TAD_SHOULD_FAIL
  const auto s = tad::scan([&](auto c, auto xt) { return c * k + xt; }, tad::var<"h0">(0.0), X);
#else
  const auto s = tad::scan([&](auto c, auto xt) { return c * k + xt; }, tad::var<"h0">(h.data(), 1), X);
#endif
  auto [v, g] = tad::program(tad::sum(s)).grad(k);
  return v == v && g == g ? 0 : 1;
}
