#pragma once
/// `apply<Op>(x...)`: a node of any op, built-in or defined by the user, on one to three
/// operands. This is how a new primitive (TensorFlow's op + `RegisterGradient`) joins tad: define
/// the op once as a type with `forward(x...)` and `backward(dy, x..., y)` written for scalars and
/// SIMD batches alike, and it runs in the same fused loops as the built-in ops
/// (doc/gradient-surgery.md, "New primitives").

#include <tad/core/expression.hpp>
#include <tad/gradient/rules.hpp>
#include <tad/ops/make.hpp>

#include <cstddef>
#include <type_traits>

namespace tad {

namespace detail {
/// An op's static backward as a rule object, to check it like a user rule.
template <class Op>
struct op_backward {
  template <class... A>
  constexpr auto operator()(const A&... a) const -> decltype(Op{}.backward(a...)) {
    return Op{}.backward(a...);
  }
};

template <class Op, std::size_t N, std::size_t... K>
constexpr bool forward_callable(std::index_sequence<K...>) {
  return requires(const Op& op) { op.forward((static_cast<void>(K), 0.0)...); };
}
}  // namespace detail

/// `apply<Op>(x...)`: the node `Op(x...)`. Op must be default-constructible and provide
/// `forward(x...)`; unless it declares `differentiable = false`, also `backward(dy, x..., y)`
/// returning one adjoint per input (see tad/gradient/rules.hpp).
template <class Op, class... X>
constexpr auto apply(const X&... x) {
  constexpr std::size_t N = sizeof...(X);
  constexpr bool args = N >= 1 && N <= 3 && (operand<X> && ...) && (expression<X> || ...);
  if constexpr (detail::poisoned_v<X...>) {
    return detail::invalid_expression{};
  } else if constexpr (!args) {
    static_assert(args, "tad::apply<Op>(x...): one to three arguments, each a tad expression or a "
                        "number, at least one of them an expression");
    return detail::invalid_expression{};
  } else {
    constexpr bool fwd = detail::forward_callable<Op, N>(std::make_index_sequence<N>{});
    constexpr bool diff = detail::op_differentiable<Op>();
    using R = detail::op_backward<Op>;
    constexpr bool callable = !diff || detail::rule_callable_v<R, N>;
    constexpr bool count = !diff || detail::rule_returns_count_v<R, N>;
    constexpr bool numbers = !diff || detail::rule_returns_numbers_v<R, N>;
    if constexpr (!fwd) {
      static_assert(fwd, "tad::apply<Op>(x...): Op needs forward(x...) taking one value per argument");
      return detail::invalid_expression{};
    } else if constexpr (!callable) {
      static_assert(callable, "tad::apply<Op>(x...): Op needs backward(dy, x..., y), or differentiable = false");
      return detail::invalid_expression{};
    } else if constexpr (!count) {
      static_assert(count, "tad::apply<Op>(x...): Op::backward must return one adjoint per input (a value "
                           "for one input, tad::adjoints{...} for several)");
      return detail::invalid_expression{};
    } else if constexpr (!numbers) {
      static_assert(numbers, "tad::apply<Op>(x...): Op::backward must return numbers, SIMD batches or "
                             "tad::zero");
      return detail::invalid_expression{};
    } else {
      return detail::make_from<Op>(x...);
    }
  }
}

}  // namespace tad
