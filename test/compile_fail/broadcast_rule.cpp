// A vector under clip_gradient broadcast across a matrix's rows: tad would clip each element's
// share of the adjoint and sum them, TensorFlow clips the column sums once. Refused (not a
// silently different number); a column (as_column) is fine (the .ok half).
// TAD_EXPECT: is broadcast across the rows of a matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3, 4}, bs{0.5, -0.5};
  auto X = tad::constant(xs.data(), 2, 2);
  auto b = tad::var<"b">(bs);
#ifdef TAD_SHOULD_FAIL
  auto r = tad::clip_gradient(b, -2.5, 2.5);
#else
  auto r = tad::clip_gradient(tad::as_column(b), -2.5, 2.5);
#endif
  auto [v, g] = tad::grad(tad::sum(X * r), b);
  return g.size() == 2 && v > -100 ? 0 : 1;
}
