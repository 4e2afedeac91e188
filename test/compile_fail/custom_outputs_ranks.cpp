// A custom gradient with several outputs of a vector and a matrix: its array inputs must be
// of one shape (a scalar is broadcast; a vector across a matrix's rows is not).
// TAD_EXPECT: tad::custom_gradient\(f, g\)\(x\.\.\.\): f returns several outputs, so the array inputs must all be vectors or all matrices
#include <tad/tad.hpp>

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3}, ms{1, 2, 3, 4, 5, 6};
  auto f = tad::custom_gradient([](auto a, auto b) { return std::tuple{a * b, a + b}; },
                                [](auto d0, auto d1, auto a, auto b, auto, auto) {
                                  return tad::adjoints{d0 * b + d1, d0 * a + d1};
                                });
#ifdef TAD_SHOULD_FAIL
  auto [p, q] = f(tad::var<"x">(xs), tad::var<"m">(ms.data(), 2, 3));
#else
  auto [p, q] = f(tad::var<"x">(xs), tad::var<"y">(xs));
#endif
  return tad::rank_v<decltype(p + q)> >= 1 ? 0 : 1;
}
