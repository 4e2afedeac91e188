// A custom gradient with two outputs whose backward rule is written for one output,
// g(dy, x..., y): it must take one upstream gradient and one value per output.
// TAD_EXPECT: tad::custom_gradient\(f, g\): f returns K outputs, so g must be callable as g\(dy_0, \.\.\., dy_\{K-1\}, x\.\.\., y_0, \.\.\., y_\{K-1\}\)
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto f = [](auto a) { return std::tuple{tad::exp(a), tad::exp(-a)}; };
#ifdef TAD_SHOULD_FAIL
  auto both = tad::custom_gradient(f, [](auto dy, auto, auto y) { return dy * y; });
#else
  auto both = tad::custom_gradient(f, [](auto d0, auto d1, auto, auto y0, auto y1) { return d0 * y0 - d1 * y1; });
#endif
  auto [p, m] = both(x);
  return tad::rank_v<decltype(p * m)> == 1 ? 0 : 1;
}
