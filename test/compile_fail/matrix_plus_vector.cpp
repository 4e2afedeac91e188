// A vector and a matrix combined elementwise: broadcasting between ranks is not built yet.
// TAD_EXPECT: broadcasting a vector across a matrix's rows or columns is not supported yet
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> xs(2, 3, 1.0);
  std::vector<double> bs{1, 2, 3};
  auto X = tad::var<"X">(xs);
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(X + tad::var<"b">(bs));
#else
  auto e = tad::sum(X) + tad::sum(tad::var<"b">(bs));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
