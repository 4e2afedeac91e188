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
///   passes_v<E, X...>           loops over the data that one gradient w.r.t. X... runs
///                               (passes_v<E> for the value alone)

#include <tad/core/expression.hpp>
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
    std::is_same_v<Op, straight_through_op> || requires { typename Op::rule_type; };

/// Calls f.template operator()<Op>() for every node of E, in post-order.
template <class E, class F>
constexpr void visit_ops(F& f) {
  if constexpr (!is_leaf_v<E>) {
    static_for<E::arity>([&](auto k) { visit_ops<child_t<k.value, E>>(f); });
    f.template operator()<typename E::op_type>();
  }
}

template <class E>
constexpr std::size_t count_nodes() {
  if constexpr (is_leaf_v<E>) {
    return 1;
  } else {
    std::size_t n = 1;
    static_for<E::arity>([&](auto k) { n += count_nodes<child_t<k.value, E>>(); });
    return n;
  }
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
