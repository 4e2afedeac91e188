#pragma once
/// Building nodes: operand conversion and the checks every op constructor shares.

#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/node.hpp>
#include <tad/core/value_type.hpp>

#include <type_traits>

namespace tad {

/// Anything an op accepts as an argument: an expression or an arithmetic value (a constant).
template <class X>
concept operand = expression<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;

namespace detail {

template <class X>
constexpr auto as_expr(const X& x) noexcept {
  if constexpr (expression<X>) {
    return x;
  } else {
    return scalar_constant<X>{x};
  }
}
template <class X>
using as_expr_t = decltype(as_expr(std::declval<const X&>()));

/// `node<Op, C...>{c...}` after checking that the children agree on their element type.
template <class Op, class... C>
constexpr node<Op, C...> make(const C&... c) noexcept {
  using N = node<Op, C...>;
  static_assert(!mixes_precisions_v<N>,
                "tad: an expression mixes float and double variables or arrays, so its element "
                "type is ambiguous; convert the data to one precision");
  return N{c...};
}

template <class Op, class... X>
constexpr auto make_from(const X&... x) noexcept {
  return make<Op>(as_expr(x)...);
}

}  // namespace detail
}  // namespace tad
