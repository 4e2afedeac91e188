// A reduction down the columns (axis 0) combined elementwise with one along the rows (axis 1) of
// another matrix is not built: their sweeps run in loops of different shapes (engine::down_loop,
// engine::point_loop). The message says so and how to write it.
// TAD_EXPECT: tad: a reduction along axis 0 \(tad::sum\(e, tad::axis<0>\)\) meets a reduction along axis 1 or a column \(tad::as_column\) in one loop
#include <tad/tad.hpp>

#include <tuple>

int main() {
  tad::matrix<double> xs(2, 3, 0.5), ys(3, 2, 0.25);
  auto X = tad::var<"X">(xs);
  auto Y = tad::var<"Y">(ys);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::mean(X, tad::axis<0>) * tad::sum(Y, tad::axis<1>));
#else
  auto e = tad::sum(tad::mean(X, tad::axis<0>)) * tad::sum(tad::sum(Y, tad::axis<1>));
#endif
  return std::get<0>(tad::grad(e, X, Y)) > 0 ? 0 : 1;
}
