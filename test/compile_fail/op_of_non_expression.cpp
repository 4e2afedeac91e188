// An op applied to something that is not a tad expression (a std::vector).
// TAD_EXPECT: tad::exp\(e\): e must be a tad expression
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::exp(xs) * 2.0);
#else
  auto e = tad::sum(tad::exp(tad::var<"x">(xs)) * 2.0);
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
