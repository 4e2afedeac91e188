// A custom gradient whose backward rule returns something that is not a number.
// TAD_EXPECT: tad::custom_gradient\(f, g\): g must return numbers, SIMD batches or tad::zero
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> as{1, 2, 3};
  auto a = tad::var<"a">(as);
#ifdef TAD_SHOULD_FAIL
  auto cg = tad::custom_gradient([](auto x) { return x; }, [](auto, auto, auto) { return "dy"; });
#else
  auto cg = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) { return dy; });
#endif
  return tad::value(tad::sum(cg(a))) > 0 ? 0 : 1;
}
