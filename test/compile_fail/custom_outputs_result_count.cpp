// A custom gradient with two inputs and two outputs whose backward rule returns one adjoint.
// TAD_EXPECT: tad::custom_gradient\(f, g\): g must return one adjoint per input \(a value for one input, tad::adjoints\{\.\.\.\} for several\), whatever the number of outputs
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> rs{1, 2, 3}, ts{4, 5, 6};
  auto r = tad::var<"r">(rs);
  auto t = tad::var<"t">(ts);
  auto f = [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; };
#ifdef TAD_SHOULD_FAIL
  auto polar = tad::custom_gradient(f, [](auto d0, auto d1, auto, auto b, auto, auto) {
    return d0 * tad::math::cos(b) + d1 * tad::math::sin(b);
  });
#else
  auto polar = tad::custom_gradient(f, [](auto d0, auto d1, auto a, auto b, auto, auto) {
    return tad::adjoints{d0 * tad::math::cos(b) + d1 * tad::math::sin(b),
                         a * (d1 * tad::math::cos(b) - d0 * tad::math::sin(b))};
  });
#endif
  auto [x, y] = polar(r, t);
  return tad::rank_v<decltype(x + y)> == 1 ? 0 : 1;
}
