// A comparison of a variable with a container: one error saying to wrap the data.
// TAD_EXPECT: tad::operator<\(a, b\): a and b must be tad expressions or numbers. wrap data
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> xs{1, 2, 3};
  std::vector<double> cs{2, 2, 2};
  auto x = tad::var<"x">(xs);
  double wv = 1.5;
  auto w = tad::var<"w">(wv);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::where(w < cs, x, x));
#else
  auto e = tad::sum(tad::where(w < tad::constant(cs), x, x));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
