// Two copies of one clip_gradient node without a let: each would clip its own share of the
// adjoint (2 + 1 clipped apart), where TensorFlow clips the sum once. A compile error naming
// both spellings: a let for one node, per_use for one rule per use (the .ok half).
// TAD_EXPECT: occurs more than once in the expression.*tad::per_use
#include <tad/tad.hpp>

int main() {
  double xv = 2.0;
  auto x = tad::var<"x">(xv);
#ifdef TAD_SHOULD_FAIL
  auto c = tad::clip_gradient(x, -1.0, 1.0);
#else
  auto c = tad::per_use(tad::clip_gradient(x, -1.0, 1.0));
#endif
  auto [v, g] = tad::grad(c * c + c, x);
  return v == 6.0 && g == 3.0 ? 0 : 1;
}
