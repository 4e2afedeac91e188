// A vector under clip_gradient broadcast across a matrix's rows is a stage (its rule runs once
// on the column sums, as in TensorFlow: decisions.md 56), which a tad::program evaluates; the
// program is <tad/linalg.hpp>'s. Without it, the error names the header (the .ok half has it).
// TAD_EXPECT: or a stage .*include <tad/linalg.hpp>
#ifdef TAD_SHOULD_FAIL
#include <tad/tad.hpp>
#else
#include <tad/linalg.hpp>
#endif

#include <tuple>
#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3, 4}, bs{0.5, -0.5};
  auto X = tad::constant(xs.data(), 2, 2);
  auto b = tad::var<"b">(bs);
  auto g = std::get<1>(tad::grad(tad::sum(X * tad::clip_gradient(b, -2.5, 2.5)), b));
  // Column sums 4 and 6, clipped once: [2.5, 2.5].
  return g[0] == 2.5 && g[1] == 2.5 ? 0 : 1;
}
