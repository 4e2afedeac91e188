// clip_gradient with compile-time bounds lo > hi.
// TAD_EXPECT: tad::clip_gradient\(e, lo, hi\): lo must not exceed hi
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::clip_gradient(x, tad::lit<1, 2>, tad::lit<-1, 2>));
#else
  auto e = tad::sum(tad::clip_gradient(x, tad::lit<-1, 2>, tad::lit<1, 2>));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
