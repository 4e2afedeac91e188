// grad of a number where the expression goes.
// TAD_EXPECT: tad::grad\(e, x\.\.\.\): e must be a tad expression
#include <tad/tad.hpp>

int main() {
  double wv = 2;
  auto w = tad::var<"w">(wv);
#ifdef TAD_SHOULD_FAIL
  auto [v, g] = tad::grad(2.0, w);
#else
  auto [v, g] = tad::grad(2.0 * w, w);
#endif
  return v == 4 && g == 2 ? 0 : 1;
}
