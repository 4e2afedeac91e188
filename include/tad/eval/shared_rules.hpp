#pragma once
/// The checks that a rule not linear in the adjoint (clip_gradient, custom_gradient, an op
/// overridden by override_gradients) never runs per copy or per share by accident: such a node
/// that occurs twice in an expression, outside lets and per_use, is a compile error naming the
/// node, and so is a vector holding one broadcast across a matrix's rows (doc/semantics.md,
/// "Shared subexpressions" and "Broadcast vectors"; decisions.md 54).
/// Analysis only: plain code over types.

#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/slots.hpp>
#include <tad/ops/linalg.hpp>

#include <cstddef>
#include <type_traits>

namespace tad::detail {

/// Is N a node whose own rule is not linear in the adjoint?
template <class N>
constexpr bool own_rule_nonlinear() {
  if constexpr (is_leaf_v<N>) return false;
  else if constexpr (requires { N::op_type::adjoint_linear; }) return !N::op_type::adjoint_linear;
  else return false;
}

/// Does the walk stop at N? A let (its body is one node, walked once: repeated_rule), a
/// per_use (a copy the user made a node of its own), an op without a gradient; with `Outer`,
/// an outermost matrix product (a program computes the products that are one computation once
/// and runs their backward once, on the summed adjoint: each distinct type is walked once).
template <class N, bool Outer>
constexpr bool opaque_to_rules() {
  if constexpr (is_leaf_v<N>) return true;
  else return is_let_node_v<N> || requires { N::op_type::is_per_use; } || !op_differentiable<typename N::op_type>() ||
              (Outer && is_product_node_v<N>);
}

/// How often node type R occurs in E where an adjoint reaches it (below no cut, outside lets
/// and per_use; with Outer, outside outermost products).
template <class R, class E, bool Outer>
constexpr std::size_t occurrences() {
  if constexpr (opaque_to_rules<E, Outer>()) {
    return 0;
  } else {
    std::size_t n = std::is_same_v<R, E> ? 1 : 0;
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) n += occurrences<R, child_t<k.value, E>, Outer>();
    });
    return n;
  }
}

template <class L>
using let_body_t = std::remove_cvref_t<decltype(std::declval<const L&>().arg)>;

/// The places walked once each: the expression (outside lets and outermost products), every
/// distinct let's body, every distinct outermost product (walked inside, its nested products
/// included: a program computes those per use).
template <class... P>
struct places {};
template <class List, class P>
struct places_add;
template <class... Ps, class P>
struct places_add<places<Ps...>, P> {
  using type = std::conditional_t<(std::is_same_v<Ps, P> || ...), places<Ps...>, places<Ps..., P>>;
};
/// The distinct outermost products of E an adjoint reaches (outside lets).
template <class E, class Acc = places<>>
struct outer_products {
  using type = Acc;
};
template <class Op, class... C, class Acc>
struct outer_products<node<Op, C...>, Acc> {
  using N = node<Op, C...>;
  template <class A, std::size_t K>
  using step = std::conditional_t<adjoint_flows<N, K>::value, typename outer_products<child_t<K, N>, A>::type, A>;
  template <class A, std::size_t... K>
  static auto fold(std::index_sequence<K...>) {
    if constexpr (sizeof...(K) == 0) {
      return std::type_identity<A>{};
    } else {
      return fold_one<A, K...>();
    }
  }
  template <class A, std::size_t K0, std::size_t... K>
  static auto fold_one() {
    if constexpr (sizeof...(K) == 0) return std::type_identity<step<A, K0>>{};
    else return fold_one<step<A, K0>, K...>();
  }
  static auto pick() {
    if constexpr (is_product_node_v<N>) return std::type_identity<typename places_add<Acc, N>::type>{};
    else if constexpr (opaque_to_rules<N, false>()) return std::type_identity<Acc>{};
    else return decltype(fold<Acc>(std::index_sequence_for<C...>{})){};
  }
  using type = typename decltype(pick())::type;
};

/// How often R occurs: in the expression, plus once in each distinct let's body and outermost
/// product.
template <class R, class Root, class Lets, class Products>
struct total_occurrences;
template <class R, class Root, class... L, class... P>
struct total_occurrences<R, Root, let_list<L...>, places<P...>> {
  static constexpr std::size_t value =
      occurrences<R, Root, true>() + (occurrences<R, let_body_t<L>, true>() + ... + 0) + (occurrences<R, P, false>() + ... + 0);
};

/// The first node of E (walked as occurrences<.., Outer> does) with a rule not linear in the
/// adjoint that occurs more than once in Root; void if none.
template <class Root, class Lets, class Products, bool Outer, class E>
struct repeated_rule_in {
  using type = void;
};
template <class Root, class Lets, class Products, bool Outer, class Op, class... C>
struct repeated_rule_in<Root, Lets, Products, Outer, node<Op, C...>> {
  using N = node<Op, C...>;
  template <std::size_t... K>
  static auto kids(std::index_sequence<K...>)
      -> first_non_void_t<std::conditional_t<adjoint_flows<N, K>::value,
                                             typename repeated_rule_in<Root, Lets, Products, Outer, child_t<K, N>>::type, void>...>;
  static auto pick() {
    if constexpr (opaque_to_rules<N, Outer>()) return std::type_identity<void>{};
    else if constexpr (own_rule_nonlinear<N>() && total_occurrences<N, Root, Lets, Products>::value > 1) return std::type_identity<N>{};
    else return std::type_identity<decltype(kids(std::index_sequence_for<C...>{}))>{};
  }
  using type = typename decltype(pick())::type;
};

template <class Root, class Lets, class Products>
struct repeated_rule_search;
template <class Root, class... L, class... P>
struct repeated_rule_search<Root, let_list<L...>, places<P...>> {
  using Lets = let_list<L...>;
  using Products = places<P...>;
  using type = first_non_void_t<typename repeated_rule_in<Root, Lets, Products, true, Root>::type,
                                typename repeated_rule_in<Root, Lets, Products, true, let_body_t<L>>::type...,
                                typename repeated_rule_in<Root, Lets, Products, false, P>::type...>;
};

/// The first node of E whose rule is not linear in the adjoint and that E holds more than once
/// without a let (void: none). Cheap for an expression whose rules are all linear.
template <class E>
constexpr auto repeated_rule() {
  if constexpr (adjoint_linear<E>()) {
    return std::type_identity<void>{};
  } else {
    using Lets = std::conditional_t<has_lets_v<E>, lets_of_t<E>, let_list<>>;
    using Products = std::conditional_t<has_products_v<E>, typename outer_products<E>::type, places<>>;
    return std::type_identity<typename repeated_rule_search<E, Lets, Products>::type>{};
  }
}
template <class E>
using repeated_rule_t = typename decltype(repeated_rule<E>())::type;

/// The error, instantiated with the node (the compiler prints its type with the message).
template <class Node>
constexpr void report_repeated_rule() {
  static_assert(always_false<Node>,
                "tad: a node whose gradient rule is not linear in the adjoint (clip_gradient, "
                "custom_gradient, an op given a rule by override_gradients) occurs more than once in "
                "the expression (the node's type is in this function's template argument): each copy "
                "would run its rule on its own share of the adjoint, where TensorFlow and PyTorch, "
                "seeing one value used twice, run it once on the sum. For one node used several "
                "times, name it: auto c = tad::let<\"c\">(e); for one rule per use, wrap each use: "
                "tad::per_use(e) (doc/semantics.md, \"Shared subexpressions\")");
}

/// The first vector of E with a rule not linear in the adjoint (in a let's body too) that an
/// elementwise op broadcasts across a matrix's rows (void: none). Its rule would run on each
/// element's share of the adjoint, the shares then summed per column; TensorFlow runs it once
/// on the column sums. A column (as_column) is not a row broadcast: its rule runs once per row,
/// on that row's summed adjoint, as in TensorFlow (decisions.md 25).
template <class E>
struct broadcast_rule {
  using type = void;
};
template <class Op, class... C>
struct broadcast_rule<node<Op, C...>> {
  using N = node<Op, C...>;
  static constexpr bool row_context = props<N>::rank == 2 && !props<N>::is_reduction && !op_is_product<Op>();
  template <std::size_t K>
  static auto child() {
    using Ch = child_t<K, N>;
    if constexpr (!adjoint_flows<N, K>::value) return std::type_identity<void>{};
    else if constexpr (row_context && props<Ch>::rank == 1 && !adjoint_linear<Ch>()) return std::type_identity<Ch>{};
    else return std::type_identity<typename broadcast_rule<Ch>::type>{};
  }
  template <std::size_t... K>
  static auto kids(std::index_sequence<K...>) -> first_non_void_t<typename decltype(child<K>())::type...>;
  static auto pick() {
    if constexpr (!op_differentiable<Op>()) return std::type_identity<void>{};
    else return std::type_identity<decltype(kids(std::index_sequence_for<C...>{}))>{};
  }
  using type = typename decltype(pick())::type;
};
template <class E>
using broadcast_rule_t = typename std::conditional_t<adjoint_linear<E>(), std::type_identity<void>, broadcast_rule<E>>::type;

template <class Vector>
constexpr void report_broadcast_rule() {
  static_assert(always_false<Vector>,
                "tad: a vector holding a gradient rule not linear in the adjoint (clip_gradient, "
                "custom_gradient, an op given a rule by override_gradients; the vector's type is in this "
                "function's template argument) is broadcast across the rows of a matrix: its rule would run "
                "on each element's share of the adjoint, where TensorFlow and PyTorch run it once on the "
                "vector's summed adjoint (the column sums); not supported yet. For a variable, clip its "
                "summed gradient in the training pipeline (tad::clip_by_value); a column (tad::as_column) "
                "is supported (doc/semantics.md, \"Broadcast vectors\")");
}

/// Called where a gradient of E is computed: one compile error for a repeated rule, or for a
/// rule broadcast across rows.
template <class E>
constexpr void check_shared_rules() {
  using R = repeated_rule_t<E>;
  if constexpr (!std::is_void_v<R>) {
    report_repeated_rule<R>();
  } else {
    using B = broadcast_rule_t<E>;
    if constexpr (!std::is_void_v<B>) report_broadcast_rule<B>();
  }
}

}  // namespace tad::detail
