#pragma once
/// Unary elementwise functions: exp, log, log1p, expm1, sin, cos, tan, tanh, sigmoid, softplus,
/// sqrt, square, abs, relu, and the piecewise-constant sign, round (half to even), floor, ceil.

#include <tad/core/expression.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>
#include <tad/simd/math.hpp>

#include <string_view>

namespace tad {

struct exp_op {
  static constexpr std::string_view name = "exp";
  TAD_INLINE static constexpr auto forward(auto x) { return math::exp(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) { return dy * y; }
};
struct log_op {
  static constexpr std::string_view name = "log";
  TAD_INLINE static constexpr auto forward(auto x) { return math::log(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return dy / x; }
};
struct log1p_op {
  static constexpr std::string_view name = "log1p";
  TAD_INLINE static constexpr auto forward(auto x) { return math::log1p(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return dy / (x + simd::splat<decltype(x)>(1)); }
};
struct expm1_op {
  static constexpr std::string_view name = "expm1";
  TAD_INLINE static constexpr auto forward(auto x) { return math::expm1(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) { return dy * (y + simd::splat<decltype(y)>(1)); }
};
struct sin_op {
  static constexpr std::string_view name = "sin";
  TAD_INLINE static constexpr auto forward(auto x) { return math::sin(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return dy * math::cos(x); }
};
struct cos_op {
  static constexpr std::string_view name = "cos";
  TAD_INLINE static constexpr auto forward(auto x) { return math::cos(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return simd::neg(dy * math::sin(x)); }
};
struct tan_op {
  static constexpr std::string_view name = "tan";
  TAD_INLINE static constexpr auto forward(auto x) { return math::tan(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) {
    return dy * (simd::splat<decltype(y)>(1) + y * y);
  }
};
struct tanh_op {
  static constexpr std::string_view name = "tanh";
  TAD_INLINE static constexpr auto forward(auto x) { return math::tanh(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) {
    return dy * (simd::splat<decltype(y)>(1) - y * y);
  }
};
struct sigmoid_op {
  static constexpr std::string_view name = "sigmoid";
  TAD_INLINE static constexpr auto forward(auto x) { return math::sigmoid(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) {
    return dy * (y * (simd::splat<decltype(y)>(1) - y));
  }
};
struct softplus_op {
  static constexpr std::string_view name = "softplus";
  TAD_INLINE static constexpr auto forward(auto x) { return math::softplus(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return dy * math::sigmoid(x); }
};
struct sqrt_op {
  static constexpr std::string_view name = "sqrt";
  TAD_INLINE static constexpr auto forward(auto x) { return math::sqrt(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) { return dy / (y + y); }
};
struct square_op {
  static constexpr std::string_view name = "square";
  TAD_INLINE static constexpr auto forward(auto x) { return x * x; }
  // (dy + dy) * x: dy is often loop-invariant. Also on plain numbers (a loop's tail, a scalar
  // expression): `dy * (x + x)` folds better there but gives NaN for dy = 0 at |x| > max / 2
  // (a masked sentinel), where this gives 0, and the tail would then disagree with the body
  // (decisions.md 70).
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return (dy + dy) * x; }
};
/// `abs'(0) = 0` (PyTorch).
struct abs_op {
  static constexpr std::string_view name = "abs";
  TAD_INLINE static constexpr auto forward(auto x) { return math::abs(x); }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto) { return dy * math::sign(x); }
};
/// `relu(x) = max(x, 0)`, NaN stays NaN. As PyTorch, the gradient masks on the result: 0 where
/// `relu(x) <= 0`, so `relu'(0) = 0` and `relu'(NaN) = 1`.
struct relu_op {
  static constexpr std::string_view name = "relu";
  TAD_INLINE static constexpr auto forward(auto x) {
    using V = decltype(x);
    return simd::select(x < V(0), V(0), x);
  }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) {
    using V = decltype(y);
    return simd::select(y <= V(0), V(0), dy);
  }
};

/// Piecewise-constant ops: their derivative is zero almost everywhere, so no gradient flows
/// through them (a structural zero, as PyTorch's zero gradient but with no code generated).
struct sign_op {
  static constexpr std::string_view name = "sign";
  static constexpr bool differentiable = false;
  TAD_INLINE static constexpr auto forward(auto x) { return math::sign(x); }
};
/// Round half to even.
struct round_op {
  static constexpr std::string_view name = "round";
  static constexpr bool differentiable = false;
  TAD_INLINE static constexpr auto forward(auto x) { return math::round_even(x); }
};
struct floor_op {
  static constexpr std::string_view name = "floor";
  static constexpr bool differentiable = false;
  TAD_INLINE static constexpr auto forward(auto x) { return math::floor(x); }
};
struct ceil_op {
  static constexpr std::string_view name = "ceil";
  static constexpr bool differentiable = false;
  TAD_INLINE static constexpr auto forward(auto x) { return math::ceil(x); }
};

/// One entry point per unary op. A misuse gives one error naming the function; its result
/// (detail::invalid_expression) passes through later calls silently.
#define TAD_UNARY_FUNCTION(fn, op)                                                              \
  template <class E>                                                                            \
  constexpr auto fn(const E& e) {                                                               \
    if constexpr (detail::poisoned_v<E>) {                                                      \
      return detail::invalid_expression{};                                                      \
    } else if constexpr (!expression<E>) {                                                      \
      static_assert(expression<E>, "tad::" #fn "(e): e must be a tad expression (a variable, "  \
                                   "a constant or an expression built from them)");             \
      return detail::invalid_expression{};                                                      \
    } else {                                                                                    \
      return detail::make<op>(e);                                                               \
    }                                                                                           \
  }

TAD_UNARY_FUNCTION(exp, exp_op)
TAD_UNARY_FUNCTION(log, log_op)
TAD_UNARY_FUNCTION(log1p, log1p_op)
TAD_UNARY_FUNCTION(expm1, expm1_op)
TAD_UNARY_FUNCTION(sin, sin_op)
TAD_UNARY_FUNCTION(cos, cos_op)
TAD_UNARY_FUNCTION(tan, tan_op)
TAD_UNARY_FUNCTION(tanh, tanh_op)
TAD_UNARY_FUNCTION(sigmoid, sigmoid_op)
TAD_UNARY_FUNCTION(softplus, softplus_op)
TAD_UNARY_FUNCTION(sqrt, sqrt_op)
TAD_UNARY_FUNCTION(square, square_op)
TAD_UNARY_FUNCTION(abs, abs_op)
TAD_UNARY_FUNCTION(relu, relu_op)
TAD_UNARY_FUNCTION(sign, sign_op)
TAD_UNARY_FUNCTION(round, round_op)
TAD_UNARY_FUNCTION(floor, floor_op)
TAD_UNARY_FUNCTION(ceil, ceil_op)

#undef TAD_UNARY_FUNCTION

}  // namespace tad
