// Binding a variable to a temporary container would dangle.
// TAD_EXPECT: tad::var<name>\(r\): r is a temporary container
#include <tad/tad.hpp>

#include <vector>

int main() {
#ifdef TAD_SHOULD_FAIL
  auto x = tad::var<"x">(std::vector<double>{1, 2, 3});
#else
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
#endif
  return tad::value(tad::sum(x)) > 0 ? 0 : 1;
}
