// A user primitive whose backward does not match its forward, caught by a static gradient check.
// TAD_EXPECT: log1pexp's backward matches its forward
#include <tad/tad.hpp>

#include <array>

struct log1pexp_op {
  static constexpr auto forward(auto x) {
    using V = decltype(x);
    return tad::math::max(x, V(0)) + tad::math::log1p(tad::math::exp(-tad::math::abs(x)));
  }
#ifdef TAD_SHOULD_FAIL
  static constexpr auto backward(auto dy, auto x, auto) { return dy * tad::math::sigmoid(-x); }  // sign slip
#else
  static constexpr auto backward(auto dy, auto x, auto) { return dy * tad::math::sigmoid(x); }
#endif
};

static_assert(tad::gradient_check([](auto x) { return tad::apply<log1pexp_op>(x); }, std::array{-2.0, 0.5, 3.0}),
              "log1pexp's backward matches its forward");

int main() { return 0; }
