#pragma once
/// `+ - * /` and unary `-` on expressions; a plain number on either side becomes a constant.

#include <tad/core/expression.hpp>
#include <tad/ops/make.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/simd/batch.hpp>

#include <string_view>

namespace tad {

struct add_op {
  static constexpr std::string_view name = "+";
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a + b; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto, auto) { return adjoints{dy, dy}; }
};

struct sub_op {
  static constexpr std::string_view name = "-";
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a - b; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto, auto) { return adjoints{dy, simd::neg(dy)}; }
};

struct mul_op {
  static constexpr std::string_view name = "*";
  static constexpr linearity linear = linearity::product;
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a * b; }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto) { return adjoints{dy * b, dy * a}; }
};

struct div_op {
  static constexpr std::string_view name = "/";
  static constexpr linearity linear = linearity::quotient;
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a / b; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto b, auto y) {
    auto q = dy / b;
    return adjoints{q, simd::neg(q * y)};
  }
};

/// `1 / x`. Dividing an array by a scalar multiplies by this reciprocal, computed once per
/// evaluation (see doc/decisions.md).
struct reciprocal_op {
  static constexpr std::string_view name = "reciprocal";
  TAD_INLINE static constexpr auto forward(auto x) { return simd::splat<decltype(x)>(1) / x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto y) { return simd::neg(dy * y * y); }
};

/// `identity(e)`: the value of e, gradient dy. An op of its own so that a gradient can be
/// overridden on it (TensorFlow's `tf.identity` under `gradient_override_map`).
struct identity_op {
  static constexpr std::string_view name = "identity";
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto a) { return a; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

struct neg_op {
  static constexpr std::string_view name = "neg";
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto a) { return simd::neg(a); }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return simd::neg(dy); }
};

namespace detail {
template <class L, class R>
concept binary_operands = operand<L> && operand<R> && (expression<L> || expression<R>);
}

template <class L, class R>
  requires detail::binary_operands<L, R>
constexpr auto operator+(const L& l, const R& r) {
  return detail::make_from<add_op>(l, r);
}
template <class L, class R>
  requires detail::binary_operands<L, R>
constexpr auto operator-(const L& l, const R& r) {
  return detail::make_from<sub_op>(l, r);
}
template <class L, class R>
  requires detail::binary_operands<L, R>
constexpr auto operator*(const L& l, const R& r) {
  return detail::make_from<mul_op>(l, r);
}
/// `l / r`; an array divided by a scalar is `l * (1 / r)`: one division per evaluation
/// instead of one per element (as a hand-written loop does; it may differ in the last bit).
template <class L, class R>
  requires detail::binary_operands<L, R>
constexpr auto operator/(const L& l, const R& r) {
  using LE = detail::as_expr_t<L>;
  using RE = detail::as_expr_t<R>;
  if constexpr (detail::props<LE>::is_array && !detail::props<RE>::is_array) {
    return detail::make<mul_op>(detail::as_expr(l), detail::make<reciprocal_op>(detail::as_expr(r)));
  } else {
    return detail::make_from<div_op>(l, r);
  }
}
/// `e * data` with data that is not a tad expression or a number (a std::vector, say): one
/// error saying to wrap it, instead of every operator* the compiler knows as candidates.
TAD_DETAIL_REJECT_DATA_OPERAND(+)
TAD_DETAIL_REJECT_DATA_OPERAND(-)
TAD_DETAIL_REJECT_DATA_OPERAND(*)
TAD_DETAIL_REJECT_DATA_OPERAND(/)

/// `identity(e)`: the value of e as a node of its own (see identity_op).
template <class E>
constexpr auto identity(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::identity(e): e must be a tad expression");
    return detail::invalid_expression{};
  } else {
    return detail::make<identity_op>(e);
  }
}
template <expression E>
constexpr auto operator-(const E& e) {
  return detail::make<neg_op>(e);
}

}  // namespace tad
