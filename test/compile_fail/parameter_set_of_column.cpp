// A training step updates parameters in place as contiguous storage: a column of a matrix
// (elements cols apart) is refused with a message that says so.
// TAD_EXPECT: tad::parameter_set\(x...\): a parameter must be contiguous storage; a column of a matrix
#include <tad/tad.hpp>

#include <vector>

int main() {
  tad::matrix<double> m(4, 5, 0.5);
  std::vector<double> v(4, 0.5);
#ifdef TAD_SHOULD_FAIL
  auto c = tad::var<"c">(tad::column_of(m, 2));
#else
  auto c = tad::var<"c">(v);
#endif
  tad::parameter_set params(c);
  return params.size == 1 ? 0 : 1;
}
