#pragma once
/// Backward rules supplied by users (custom_gradient, override_gradients, new primitives): how
/// their results are checked and brought to the adjoint's type.
///
/// A rule is called as `rule(dy, x..., y)` with scalars (in constexpr and tails) or SIMD batches
/// and returns one adjoint per input: a value for one input, `tad::adjoints{...}` for several.
/// Any entry may be `tad::zero{}` (a structural zero: no code is generated for that input).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/node.hpp>
#include <tad/core/zero.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/simd/batch.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// How many adjoints a rule's result R holds.
template <class R>
inline constexpr std::size_t adjoint_count_v = 1;
template <class... A>
inline constexpr std::size_t adjoint_count_v<adjoints<A...>> = sizeof...(A);

/// An adjoint a rule may return: a number, a SIMD batch or tad::zero.
template <class A>
inline constexpr bool adjoint_entry_v = std::is_arithmetic_v<A> || simd::is_batch_v<A> || is_zero_v<A>;
template <class R>
inline constexpr bool adjoint_entries_v = adjoint_entry_v<R>;
template <class... A>
inline constexpr bool adjoint_entries_v<adjoints<A...>> = (adjoint_entry_v<A> && ...);

/// The result type of `rule(dy, x..., y)` with N inputs, all of type V (void if not callable).
template <class Rule, class V, class Seq>
struct rule_result_impl;
template <class Rule, class V, std::size_t... K>
struct rule_result_impl<Rule, V, std::index_sequence<K...>> {
  template <std::size_t>
  using same = V;
  static constexpr bool callable = std::is_invocable_v<const Rule&, V, same<K>..., V>;
  using type = typename std::conditional_t<callable, std::invoke_result<const Rule&, V, same<K>..., V>,
                                           std::type_identity<void>>::type;
};
template <class Rule, std::size_t N, class V = double>
using rule_result_t = std::remove_cvref_t<typename rule_result_impl<Rule, V, std::make_index_sequence<N>>::type>;
template <class Rule, std::size_t N, class V = double>
inline constexpr bool rule_callable_v = rule_result_impl<Rule, V, std::make_index_sequence<N>>::callable;

/// Is a rule well formed for N inputs: callable as rule(dy, x..., y) with doubles, returning N
/// adjoints, each a number, a batch or tad::zero?
template <class Rule, std::size_t N>
inline constexpr bool rule_returns_count_v = [] {
  if constexpr (rule_callable_v<Rule, N>) return adjoint_count_v<rule_result_t<Rule, N>> == N;
  else return false;
}();
template <class Rule, std::size_t N>
inline constexpr bool rule_returns_numbers_v = [] {
  if constexpr (rule_callable_v<Rule, N>) return adjoint_entries_v<rule_result_t<Rule, N>>;
  else return false;
}();

/// Does the rule give the K-th of N inputs a structural zero? (Decided with doubles; a rule
/// must give the same inputs zeros for every argument type.)
template <class Rule, std::size_t N, std::size_t K>
inline constexpr bool rule_zero_at_v = [] {
  if constexpr (rule_returns_count_v<Rule, N>) {
    using R = rule_result_t<Rule, N>;
    return is_zero_v<std::remove_cvref_t<decltype(adjoint_at<K>(std::declval<const R&>()))>>;
  } else {
    return false;
  }
}();

/// An adjoint in the type D of dy: numbers are converted (a rule written `0.5 * dy` for float
/// dy yields double), batches pass through, tad::zero stays.
template <class D, class A>
constexpr auto to_adjoint(const A& a) noexcept {
  if constexpr (is_zero_v<A> || std::is_same_v<A, D>) {
    return a;
  } else {
    return simd::splat<D>(a);
  }
}

/// `rule(dy, xy...)` with N = sizeof(xy) - 1 inputs, as `adjoints{...}` in dy's type.
template <class Rule, class D, class... XY>
TAD_INLINE constexpr auto call_rule(const Rule& rule, const D& dy, const XY&... xy) {
  const auto r = rule(dy, xy...);
  return [&]<std::size_t... K>(std::index_sequence<K...>) TAD_INLINE_LAMBDA {
    return adjoints{to_adjoint<D>(adjoint_at<K>(r))...};
  }(std::make_index_sequence<sizeof...(XY) - 1>{});
}

/// An op whose backward is a user rule (custom_gradient_op, overridden_op) names it `rule_type`.
/// An adjoint flows only into the inputs the rule does not give a structural zero (and so its
/// gradient reaches only what they reach). A product's rule takes Eigen expressions, not
/// numbers: its adjoints are taken to flow (a tad::zero there is met at run time).
template <class Op, class... C, std::size_t K>
  requires(requires { typename Op::rule_type; } && !op_is_product<Op>())
struct adjoint_flows<node<Op, C...>, K> {
  static constexpr bool value = !rule_zero_at_v<typename Op::rule_type, sizeof...(C), K>;
};

/// `node<Op, C...>{c..., op}`: a node rebuilt with new children and the given op.
template <class Op, class... C>
constexpr node<Op, C...> rebuild(const Op& op, const C&... c) {
  return node<Op, C...>{c..., op};
}

}  // namespace tad::detail
