// grad with respect to one variable listed twice; the error names it ('w'), with clang++ too.
// TAD_EXPECT: tad::grad\(e, x\.\.\.\): a variable is listed twice.*variable_name<'w'>|variable_name<'w'>.*tad::grad\(e, x\.\.\.\): a variable is listed twice
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  double wv = 2;
  auto x = tad::var<"x">(xs);
  auto w = tad::var<"w">(wv);
#ifdef TAD_SHOULD_FAIL
  auto [v, gx, gw] = tad::grad(tad::sum(x * w), x, w, w);
#else
  auto [v, gx, gw] = tad::grad(tad::sum(x * w), x, w);
#endif
  return v == 12 && gx.size() == 3 && gw == 6 ? 0 : 1;
}
