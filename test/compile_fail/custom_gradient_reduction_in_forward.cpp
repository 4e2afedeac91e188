// A reduction inside a custom gradient's forward f, which runs on one element at a time.
// TAD_EXPECT: tad::custom_gradient\(f, g\): f must not call tad::sum\(e\).*Compute the reduction outside and pass it
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> as{1, 2, 3};
  auto a = tad::var<"a">(as);
#ifdef TAD_SHOULD_FAIL
  auto cg = tad::custom_gradient([](auto x) { return x / tad::sum(x); }, [](auto dy, auto, auto) { return dy; });
  auto [v, g] = tad::grad(tad::sum(cg(a)), a);
#else
  // The reduction is computed outside f and passed in as the second input.
  auto cg = tad::custom_gradient([](auto x, auto s) { return x / s; },
                                 [](auto dy, auto, auto s, auto) { return tad::adjoints{dy / s, tad::zero{}}; });
  auto [v, g] = tad::grad(tad::sum(cg(a, tad::sum(a))), a);
#endif
  return v > 0 && g.size() == 3 ? 0 : 1;
}
