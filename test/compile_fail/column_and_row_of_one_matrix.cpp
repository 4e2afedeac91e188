// One vector variable as a row and as a column of one matrix computation (`X * b + column(b)`,
// X square): the engine keeps one gradient accumulator per variable and loop, so this is a
// compile error naming the problem, not a wrong gradient.
// TAD_EXPECT: a vector variable is used both as a row \(b\) and as a column \(tad::as_column\(b\)\)
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 2, 0.5);
  std::vector<double> bs{1, 2}, cs{3, 4};
  auto X = tad::var<"X">(xs);
  auto b = tad::var<"b">(bs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(X * b + tad::as_column(b));
#else
  auto e = tad::sum(X * b + tad::as_column(tad::var<"c">(cs)));
#endif
  auto [v, gX, gb] = tad::grad(e, X, b);
  return v > 0 && gX.size() == 4 && gb.size() == 2 ? 0 : 1;
}
