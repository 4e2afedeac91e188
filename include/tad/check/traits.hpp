#pragma once
/// Structural traits for `static_assert` (doc/compile-time-checks.md). Together with
/// `depends_on_v` and `gradient_is_zero_v` (tad/core/expression.hpp):
///
///   contains_op_v<E, Op>        a node of op Op is in E (also when overridden)
///   count_op_v<E, Op>           how many
///   modifier_count_v<E>         nodes that change a gradient: stop/scale/reverse/clip_gradient,
///                               straight_through, custom gradients, overridden ops
///   modifiers_of<E>()           their names, in post-order, as std::array<std::string_view, K>
///   node_count_v<E>             nodes and leaves of E
///   (a let, `tad::let<"z">(e)`: each occurrence counts as one node of op let_op<"z">, its body
///   once, however often the let occurs)
///   passes_v<E, X...>           loops over the data that one gradient w.r.t. X... runs
///                               (passes_v<E> for the value alone)

#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/plan.hpp>
#include <tad/gradient/custom.hpp>
#include <tad/gradient/modifiers.hpp>
#include <tad/gradient/override.hpp>

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace tad {

namespace detail {

template <class Op>
struct base_op_of {
  using type = Op;
};
template <class Op, class R>
struct base_op_of<overridden_op<Op, R>> {
  using type = Op;
};

template <class Op>
inline constexpr bool is_modifier_op_v =
    std::is_same_v<Op, stop_gradient_op> || std::is_same_v<Op, scale_gradient_op> ||
    std::is_same_v<Op, reverse_gradient_op> || std::is_same_v<Op, clip_gradient_op> ||
    std::is_same_v<Op, straight_through_op> || requires { typename Op::rule_type; } ||
    requires { Op::is_custom_output; };

template <class E, class Seen, std::size_t K, class F>
constexpr void visit_kids(F& f);

/// Calls f.template operator()<X>() for every node and leaf X of E, in post-order; the body of
/// a let is visited once, at the let's first occurrence (Seen: the lets visited before).
template <class E, class Seen, class F>
constexpr void visit_all(F& f) {
  if constexpr (!is_leaf_v<E>) {
    if constexpr (!(is_let_node_v<E> && Seen::template contains<E>)) visit_kids<E, Seen, 0>(f);
  }
  f.template operator()<E>();
}
template <class E, class Seen, std::size_t K, class F>
constexpr void visit_kids(F& f) {
  if constexpr (K < E::arity) {
    using C = child_t<K, E>;
    visit_all<C, Seen>(f);
    visit_kids<E, typename lets_of<C, false, site::scalar, Seen>::type, K + 1>(f);
  }
}

/// Calls f.template operator()<Op>() for every node of E, in post-order (a let's body once).
template <class E, class F>
constexpr void visit_ops(F& f) {
  auto g = [&]<class X>() {
    if constexpr (!is_leaf_v<X>) f.template operator()<typename X::op_type>();
  };
  visit_all<E, let_list<>>(g);
}

template <class E>
constexpr std::size_t count_nodes() {
  std::size_t n = 0;
  auto f = [&]<class X>() { ++n; };
  visit_all<E, let_list<>>(f);
  return n;
}

template <class E, class Op>
constexpr std::size_t count_op() {
  std::size_t n = 0;
  auto f = [&]<class O>() { n += std::is_same_v<typename base_op_of<O>::type, Op> ? 1 : 0; };
  visit_ops<E>(f);
  return n;
}

template <class E>
constexpr std::size_t count_modifiers() {
  std::size_t n = 0;
  auto f = [&]<class O>() { n += is_modifier_op_v<O> ? 1 : 0; };
  visit_ops<E>(f);
  return n;
}

}  // namespace detail

template <expression E, class Op>
inline constexpr std::size_t count_op_v = detail::count_op<std::remove_cvref_t<E>, Op>();
template <expression E, class Op>
inline constexpr bool contains_op_v = count_op_v<E, Op> > 0;
template <expression E>
inline constexpr std::size_t modifier_count_v = detail::count_modifiers<std::remove_cvref_t<E>>();
template <expression E>
inline constexpr std::size_t node_count_v = detail::count_nodes<std::remove_cvref_t<E>>();

/// The names of the gradient modifiers in E, in post-order ("custom_gradient" for a custom
/// gradient, the op's name for an overridden op).
template <expression E>
constexpr auto modifiers_of() {
  std::array<std::string_view, modifier_count_v<E>> names{};
  std::size_t k = 0;
  auto f = [&]<class O>() {
    if constexpr (detail::is_modifier_op_v<O>) names[k++] = O::name;
  };
  detail::visit_ops<std::remove_cvref_t<E>>(f);
  return names;
}

/// Loops over the data that one evaluation of the gradient of E with respect to X... runs
/// (with no X: of the value alone). 0 for an expression without arrays.
template <expression E, class... X>
inline constexpr int passes_v = detail::plan<std::remove_cvref_t<E>, detail::wrt_list<std::remove_cvref_t<X>...>>::passes;

}  // namespace tad
