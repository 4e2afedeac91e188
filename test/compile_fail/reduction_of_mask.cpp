// A reduction of a mask (a comparison) says to reduce where(mask, 1.0, 0.0), whole or along rows
// (it was a raw "no matching function ... accumulate(..., batch_bool)" deep in the engine).
// TAD_EXPECT: tad::sum\(e, axis<K>\): e is a mask \(a comparison such as X > 0\), not numbers; to count or sum where it holds, reduce tad::where\(mask, 1.0, 0.0\)
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, -2, 3};
  tad::matrix<double> ms(2, 3, 0.5);
  auto x = tad::var<"x">(xs);
  auto X = tad::var<"X">(ms);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::where(x > 0.0, 1.0, 0.0)) + tad::sum(tad::sum(X > 0.0, tad::axis<1>));
#else
  auto e = tad::sum(tad::where(x > 0.0, 1.0, 0.0)) + tad::sum(tad::sum(tad::where(X > 0.0, 1.0, 0.0), tad::axis<1>));
#endif
  return tad::value(e) == 8.0 ? 0 : 1;
}
