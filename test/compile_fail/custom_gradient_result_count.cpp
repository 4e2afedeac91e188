// A custom gradient of two inputs whose backward rule returns one adjoint.
// TAD_EXPECT: tad::custom_gradient\(f, g\): g must return one adjoint per input
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> as{1, 2, 3}, bs{4, 5, 6};
  auto a = tad::var<"a">(as);
  auto b = tad::var<"b">(bs);
#ifdef TAD_SHOULD_FAIL
  auto cg = tad::custom_gradient([](auto x, auto y) { return x * y; },
                                 [](auto dy, auto, auto y, auto) { return dy * y; });
#else
  auto cg = tad::custom_gradient([](auto x, auto y) { return x * y; },
                                 [](auto dy, auto x, auto y, auto) { return tad::adjoints{dy * y, dy * x}; });
#endif
  return tad::value(tad::sum(cg(a, b))) > 0 ? 0 : 1;
}
