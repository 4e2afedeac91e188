// A custom gradient with several outputs of scalar inputs only: its outputs are stages of a
// program, which holds arrays (not yet scalars).
// TAD_EXPECT: tad::custom_gradient\(f, g\)\(x\.\.\.\): f returns several outputs, so at least one input must be a vector or a matrix
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  double s = 2;
  auto scaled = tad::custom_gradient([](auto a, auto b) { return std::tuple{a * b, a / b}; },
                                     [](auto d0, auto d1, auto a, auto b, auto, auto) {
                                       return tad::adjoints{d0 * b + d1 / b, d0 * a - d1 * a / (b * b)};
                                     });
#ifdef TAD_SHOULD_FAIL
  auto [p, q] = scaled(tad::var<"s">(s), tad::var<"t">(s));
#else
  auto [p, q] = scaled(tad::var<"x">(xs), tad::var<"s">(s));
#endif
  return tad::rank_v<decltype(p + q)> <= 1 ? 0 : 1;
}
