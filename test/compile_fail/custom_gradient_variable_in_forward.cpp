// A custom gradient whose forward captures a variable (its gradient would be lost).
// TAD_EXPECT: tad::custom_gradient\(f, g\): f may combine only its inputs and numbers
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> as{1, 2, 3};
  double wv = 2;
  auto a = tad::var<"a">(as);
  auto w = tad::var<"w">(wv);
#ifdef TAD_SHOULD_FAIL
  auto cg = tad::custom_gradient([&](auto x) { return x * w; }, [](auto dy, auto, auto) { return dy; });
  auto e = tad::sum(cg(a));
#else
  auto cg = tad::custom_gradient([](auto x, auto s) { return x * s; },
                                 [](auto dy, auto x, auto s, auto) { return tad::adjoints{dy * s, dy * x}; });
  auto e = tad::sum(cg(a, w));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
