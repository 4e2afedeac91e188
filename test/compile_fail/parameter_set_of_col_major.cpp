// A training step applies a gradient (dense row-major) to its parameter's storage element by
// element: a column-major view is refused, with the row-major view of the same storage named.
// TAD_EXPECT: a column-major view \(tad::var<name>\(tad::col_major\(p, rows, cols\)\)\) cannot be one
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> w(12, 0.5);
#ifdef TAD_SHOULD_FAIL
  auto W = tad::var<"W">(tad::col_major(w.data(), 3, 4));
#else
  auto W = tad::var<"W">(w.data(), 4, 3);  // the same storage as the transposed row-major matrix
#endif
  tad::parameter_set params(W);
  return params.size == 1 ? 0 : 1;
}
