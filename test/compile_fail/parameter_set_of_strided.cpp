// A training step updates parameters in place as contiguous storage: a strided view is refused
// with a message that says so.
// TAD_EXPECT: tad::parameter_set\(x...\): a parameter must be contiguous storage
#include <tad/tad.hpp>

int main() {
  tad::matrix<double> big(4, 5, 0.5);
#ifdef TAD_SHOULD_FAIL
  auto W = tad::var<"W">(big.data(), 2, 3, 5);
#else
  auto W = tad::var<"W">(big);
#endif
  tad::parameter_set params(W);
  return params.size == 1 ? 0 : 1;
}
