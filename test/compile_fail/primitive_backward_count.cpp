// A user primitive of two inputs whose backward returns one adjoint.
// TAD_EXPECT: tad::apply<Op>\(x\.\.\.\): Op::backward must return one adjoint per input
#include <tad/tad.hpp>

#include <vector>

struct hypot_op {
  static constexpr auto forward(auto a, auto b) { return tad::math::sqrt(a * a + b * b); }
#ifdef TAD_SHOULD_FAIL
  static constexpr auto backward(auto dy, auto a, auto, auto y) { return dy * a / y; }
#else
  static constexpr auto backward(auto dy, auto a, auto b, auto y) { return tad::adjoints{dy * a / y, dy * b / y}; }
#endif
};

int main() {
  std::vector<double> as{3, 5}, bs{4, 12};
  auto e = tad::sum(tad::apply<hypot_op>(tad::var<"a">(as), tad::var<"b">(bs)));
  return tad::value(e) == 18 ? 0 : 1;
}
