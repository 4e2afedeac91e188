// grad of an array-valued expression needs a seed: the error names tad::vjp.
// TAD_EXPECT: tad::grad\(e, x\.\.\.\): e is array-valued.*tad::vjp
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
#ifdef TAD_SHOULD_FAIL
  auto r = tad::grad(tad::exp(x), x);
#else
  auto r = tad::grad(tad::sum(tad::exp(x)), x);
#endif
  return std::get<1>(r).size() == 3 ? 0 : 1;
}
