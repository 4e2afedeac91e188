// Literal bounds of clamp with lo > hi: known at compile time, so a compile-time error (as
// clip_gradient's); number bounds throw std::invalid_argument (test/ops/special_values.cpp).
// TAD_EXPECT: tad::clamp\(x, lo, hi\): lo must not exceed hi
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::clamp(x, tad::lit<1>, tad::lit<-1>));
#else
  auto e = tad::sum(tad::clamp(x, tad::lit<-1>, tad::lit<1>));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
