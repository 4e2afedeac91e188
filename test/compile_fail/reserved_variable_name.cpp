// A variable name beginning with '@' is tad's own (a matrix product's result is the leaf
// `@prod000` of the expression around it; an operand's variables are renamed `@v00001`, ...):
// a user's variable so named could take a product's gradient, so tad::var refuses it.
// TAD_EXPECT: tad::var<name>: a name beginning with '@' is reserved for tad's own leaves
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs(4, 0.5);
#ifdef TAD_SHOULD_FAIL
  auto x = tad::var<"@prod000">(xs);
#else
  auto x = tad::var<"prod000">(xs);
#endif
  return tad::value(tad::sum(x)) > 0 ? 0 : 1;
}
