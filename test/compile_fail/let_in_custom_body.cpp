// A let inside custom_gradient's f (evaluated one element at a time): one error.
// TAD_EXPECT: tad::let<name>\(e\): not inside custom_gradient's f
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
#ifdef TAD_SHOULD_FAIL
  auto f = tad::custom_gradient([](auto a) { return tad::let<"z">(a * a); }, [](auto dy, auto a, auto) { return 2 * dy * a; });
#else
  auto f = tad::custom_gradient([](auto a) { return a * a; }, [](auto dy, auto a, auto) { return 2 * dy * a; });
#endif
  return std::get<0>(tad::grad(tad::sum(f(x)), x)) > 0 ? 0 : 1;
}
