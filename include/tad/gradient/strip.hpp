#pragma once
/// `strip_gradient_modifiers(e)`: e with every gradient modifier replaced by its true derivative,
/// to compare a modified gradient with the unmodified one.
///
///   scale_gradient(a, k), reverse_gradient(a, l), clip_gradient(a, lo, hi)  ->  a
///   straight_through(f, b)                                                  ->  f
///   custom_gradient(f, g)(x...)                                             ->  f(x...)
///   a node under override_gradients                                        ->  the node with its op's own rule
///   stop_gradient(a)                                                        ->  a, or kept with `keep_stop_gradient`

#include <tad/core/expression.hpp>
#include <tad/core/node.hpp>
#include <tad/gradient/custom.hpp>
#include <tad/gradient/modifiers.hpp>
#include <tad/gradient/rules.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

template <class Op, class Rule>
struct overridden_op;  // tad/gradient/override.hpp (which needs Boost.Hana)

/// Tag for `strip_gradient_modifiers(e, keep_stop_gradient)`: stop_gradient nodes stay.
struct keep_stop_gradient_t {};
inline constexpr keep_stop_gradient_t keep_stop_gradient{};

namespace detail {

template <class Op>
inline constexpr bool pass_through_modifier_v =
    std::is_same_v<Op, scale_gradient_op> || std::is_same_v<Op, reverse_gradient_op> ||
    std::is_same_v<Op, clip_gradient_op> || std::is_same_v<Op, straight_through_op>;

template <class Op>
inline constexpr bool is_custom_op_v = false;
template <class Body, class G>
inline constexpr bool is_custom_op_v<custom_gradient_op<Body, G>> = true;

template <class Op>
inline constexpr bool is_overridden_op_v = false;
template <class Op, class Rule>
inline constexpr bool is_overridden_op_v<overridden_op<Op, Rule>> = true;

/// The body of a custom_gradient with its K-th input replaced by x[K].
template <class E, class... X>
constexpr auto substitute(const E& e, const X&... x) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { E::input_index; }) return pick<E::input_index>(x...); else return e;
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(e.op, substitute(child<K>(e), x...)...);
    }(std::make_index_sequence<E::arity>{});
  }
}

template <bool KeepStops, class E>
constexpr auto strip(const E& e) {
  if constexpr (is_leaf_v<E>) {
    return e;
  } else {
    using Op = typename E::op_type;
    const auto kids = [&](auto build) {
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return build(strip<KeepStops>(child<K>(e))...);
      }(std::make_index_sequence<E::arity>{});
    };
    if constexpr (pass_through_modifier_v<Op> || (std::is_same_v<Op, stop_gradient_op> && !KeepStops)) {
      return strip<KeepStops>(child<0>(e));
    } else if constexpr (requires { Op::is_custom_output; }) {
      return kids([&](const auto&... x) { return strip<KeepStops>(substitute(std::get<Op::output>(e.op.bodies), x...)); });
    } else if constexpr (is_custom_op_v<Op>) {
      return kids([&](const auto&... x) { return strip<KeepStops>(substitute(e.op.body, x...)); });
    } else if constexpr (is_overridden_op_v<Op>) {
      return kids([&](const auto&... x) { return rebuild(e.op.op, x...); });
    } else {
      return kids([&](const auto&... x) { return rebuild(e.op, x...); });
    }
  }
}

}  // namespace detail

/// `strip_gradient_modifiers(e)`: e with its true derivative everywhere (see above);
/// `strip_gradient_modifiers(e, keep_stop_gradient)`: the same, but stop_gradient stays.
template <class E, class... Keep>
  requires(sizeof...(Keep) <= 1 && (std::is_same_v<Keep, keep_stop_gradient_t> && ...))
constexpr auto strip_gradient_modifiers(const E& e, Keep...) {
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::strip_gradient_modifiers(e): e must be a tad expression");
    return detail::invalid_expression{};
  } else {
    return detail::strip<sizeof...(Keep) == 1>(e);
  }
}

}  // namespace tad
