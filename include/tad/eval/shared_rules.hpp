#pragma once
/// The checks that a rule not linear in the adjoint (clip_gradient, custom_gradient, an op
/// overridden by override_gradients) never runs per copy, per read or per share by accident,
/// where a gradient is computed: a compile error for such a node that occurs twice outside
/// lets and per_use, for a let of one used in a matrix product's operand and elsewhere, for a
/// vector holding one broadcast across a matrix's rows, and for one in the argument of a
/// composite's matrix form (doc/semantics.md, "Shared subexpressions" and "Broadcast vectors";
/// decisions.md 54). Analysis only: plain code over types.

#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/slots.hpp>
#include <tad/ops/linalg.hpp>
#include <tad/ops/shared.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// Is N a node whose own rule is not linear in the adjoint?
template <class N>
constexpr bool own_rule_nonlinear() {
  if constexpr (is_leaf_v<N>) return false;
  else if constexpr (requires { N::op_type::adjoint_linear; }) return !N::op_type::adjoint_linear;
  else return false;
}
template <class N>
constexpr bool is_per_use_node() {
  if constexpr (is_leaf_v<N>) return false;
  else return requires { N::op_type::is_per_use; };
}

/// Does the count stop at N? A let or a per_use (each distinct one's body is walked once, as a
/// place of its own), an op without a gradient (nothing below it gets an adjoint).
template <class N>
constexpr bool opaque_to_rules() {
  if constexpr (is_leaf_v<N>) return true;
  else return is_let_node_v<N> || is_per_use_node<N>() || !op_differentiable<typename N::op_type>();
}

/// How often node type R occurs in E where an adjoint reaches it, outside lets and per_use.
/// Matrix products are walked like every node: two products of one type are two occurrences,
/// whether or not a program finds them to be one computation at run time.
template <class R, class E>
constexpr std::size_t occurrences() {
  if constexpr (opaque_to_rules<E>()) {
    return 0;
  } else {
    std::size_t n = std::is_same_v<R, E> ? 1 : 0;
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) n += occurrences<R, child_t<k.value, E>>();
    });
    return n;
  }
}

template <class N>
using rule_body_t = std::remove_cvref_t<decltype(std::declval<const N&>().arg)>;

/// The distinct let and per_use nodes of E (anywhere an adjoint reaches), as a type list: the
/// places whose bodies are walked once each.
template <class... P>
struct places {};
template <class List, class P>
struct places_add;
template <class... Ps, class P>
struct places_add<places<Ps...>, P> {
  using type = std::conditional_t<(std::is_same_v<Ps, P> || ...), places<Ps...>, places<Ps..., P>>;
};
template <class E, class Acc = places<>>
struct bodies_of {
  using type = Acc;
};
template <class Op, class... C, class Acc>
struct bodies_of<node<Op, C...>, Acc> {
  using N = node<Op, C...>;
  using self = std::conditional_t<is_let_node_v<N> || is_per_use_node<N>(), typename places_add<Acc, N>::type, Acc>;
  template <class A, std::size_t K>
  using step = std::conditional_t<adjoint_flows<N, K>::value, typename bodies_of<child_t<K, N>, A>::type, A>;
  template <class A, std::size_t K0, std::size_t... K>
  static auto fold() {
    if constexpr (sizeof...(K) == 0) return std::type_identity<step<A, K0>>{};
    else return fold<step<A, K0>, K...>();
  }
  template <std::size_t... K>
  static auto all(std::index_sequence<K...>) -> decltype(fold<self, K...>());
  using type = std::conditional_t<op_differentiable<Op>(), typename decltype(all(std::index_sequence_for<C...>{}))::type, Acc>;
};

/// The first node of E (walked as occurrences does) with a rule not linear in the adjoint that
/// occurs more than once in Place (the expression outside lets and per_use, or one let's or
/// per_use's body): void if none. Copies in different places are different nodes: a let is a
/// node the user named, a per_use one the user made; a copy outside it is another node, as a
/// second call to the op is in TensorFlow.
template <class Place, class E>
struct repeated_rule_in {
  using type = void;
};
template <class Place, class Op, class... C>
struct repeated_rule_in<Place, node<Op, C...>> {
  using N = node<Op, C...>;
  template <std::size_t... K>
  static auto kids(std::index_sequence<K...>)
      -> first_non_void_t<std::conditional_t<adjoint_flows<N, K>::value,
                                             typename repeated_rule_in<Place, child_t<K, N>>::type, void>...>;
  static auto pick() {
    if constexpr (opaque_to_rules<N>()) return std::type_identity<void>{};
    else if constexpr (own_rule_nonlinear<N>() && occurrences<N, Place>() > 1) return std::type_identity<N>{};
    else return std::type_identity<decltype(kids(std::index_sequence_for<C...>{}))>{};
  }
  using type = typename decltype(pick())::type;
};
template <class Root, class Bodies>
struct repeated_rule_search;
template <class Root, class... B>
struct repeated_rule_search<Root, places<B...>> {
  using type = first_non_void_t<typename repeated_rule_in<Root, Root>::type,
                                typename repeated_rule_in<rule_body_t<B>, rule_body_t<B>>::type...>;
};

/// Occurrences of node type L in E, all of them (through lets' and per_use's bodies at each
/// occurrence), and those inside a matrix product: {all, in products}.
template <class L, class E, bool InProduct = false>
constexpr std::pair<std::size_t, std::size_t> let_uses() {
  if constexpr (is_leaf_v<E>) {
    return {0, 0};
  } else if constexpr (!op_differentiable<typename E::op_type>()) {
    return {0, 0};
  } else {
    std::pair<std::size_t, std::size_t> n{0, 0};
    if constexpr (std::is_same_v<L, E>) n = {1, InProduct ? 1 : 0};
    constexpr bool in = InProduct || is_product_node_v<E>;
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) {
        const auto c = let_uses<L, child_t<k.value, E>, in>();
        n.first += c.first;
        n.second += c.second;
      }
    });
    return n;
  }
}
/// The first let of E whose body has a rule not linear in the adjoint, used in a matrix
/// product's operand and more than once: a program evaluates each operand in an engine of its
/// own, so the let's adjoint is not summed across them (void: none).
template <class Root, class Bodies>
struct let_across_products;
template <class Root, class... B>
struct let_across_products<Root, places<B...>> {
  template <class L>
  static auto one() {
    if constexpr (!is_let_node_v<L> || adjoint_linear<L>()) {
      return std::type_identity<void>{};
    } else {
      constexpr auto u = let_uses<L, Root>();
      if constexpr (u.second > 0 && u.first > 1) return std::type_identity<L>{};
      else return std::type_identity<void>{};
    }
  }
  using type = first_non_void_t<void, typename decltype(one<B>())::type...>;
};

/// The first vector node with its own rule not linear in the adjoint that an elementwise op of
/// a matrix broadcasts across rows: reached from a rank-2 elementwise node through rank-1
/// nodes (lets included, not reductions: a rule inside a reduction's argument runs per element
/// of that argument, and a scalar under a rule is a loop invariant whose adjoint is summed
/// before its rule runs). Its rule would run on each element's share of the adjoint, the
/// shares then summed per column; TensorFlow runs it once on the column sums. A column
/// (as_column) is not a row broadcast: its rule runs once per row, on that row's summed
/// adjoint, as in TensorFlow (decisions.md 25). void: none.
template <class E>
struct vector_rule {
  using type = void;
};
template <class Op, class... C>
struct vector_rule<node<Op, C...>> {
  using N = node<Op, C...>;
  template <std::size_t... K>
  static auto kids(std::index_sequence<K...>)
      -> first_non_void_t<std::conditional_t<adjoint_flows<N, K>::value, typename vector_rule<child_t<K, N>>::type, void>...>;
  static auto pick() {
    if constexpr (!op_differentiable<Op>() || props<N>::rank != 1 || props<N>::is_reduction) return std::type_identity<void>{};
    else if constexpr (own_rule_nonlinear<N>()) return std::type_identity<N>{};
    else return std::type_identity<decltype(kids(std::index_sequence_for<C...>{}))>{};
  }
  using type = typename decltype(pick())::type;
};
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
    else if constexpr (row_context && props<Ch>::rank == 1)
      return std::type_identity<first_non_void_t<typename vector_rule<Ch>::type, typename broadcast_rule<Ch>::type>>{};
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

/// Does an adjoint reach a marked argument of a composite's matrix form (row_composite_op)?
template <class E>
constexpr bool reaches_row_composite() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else if constexpr (!op_differentiable<typename E::op_type>()) {
    return false;
  } else {
    bool r = requires { E::op_type::is_row_composite; };
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) r = r || reaches_row_composite<child_t<k.value, E>>();
    });
    return r;
  }
}

/// What is wrong with E's rules (0: nothing), and the node to name.
template <class E>
struct rule_problem {
  static auto find() {
    if constexpr (adjoint_linear<E>()) {
      return std::pair<std::integral_constant<int, 0>, void*>{};
    } else {
      using Bodies = typename bodies_of<E>::type;
      using R = typename repeated_rule_search<E, Bodies>::type;
      using L = typename let_across_products<E, Bodies>::type;
      using V = typename broadcast_rule<E>::type;
      // A composite's matrix form first: its own two reads are also a repeated rule.
      if constexpr (reaches_row_composite<E>()) return std::pair<std::integral_constant<int, 4>, void*>{};
      else if constexpr (!std::is_void_v<R>) return std::pair<std::integral_constant<int, 1>, R*>{};
      else if constexpr (!std::is_void_v<L>) return std::pair<std::integral_constant<int, 2>, L*>{};
      else if constexpr (!std::is_void_v<V>) return std::pair<std::integral_constant<int, 3>, V*>{};
      else return std::pair<std::integral_constant<int, 0>, void*>{};
    }
  }
  using found = decltype(find());
  static constexpr int kind = found::first_type::value;
  using node_type = std::remove_pointer_t<typename found::second_type>;
};
/// The repeated rule-carrying node of E (void: none), and the broadcast one.
template <class E>
using repeated_rule_t = std::conditional_t<rule_problem<E>::kind == 1, typename rule_problem<E>::node_type, void>;
template <class E>
using broadcast_rule_t = std::conditional_t<rule_problem<E>::kind == 3, typename rule_problem<E>::node_type, void>;

/// The errors, each instantiated with the node (the compiler prints its type with the message).
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
template <class Let>
constexpr void report_let_across_products() {
  static_assert(always_false<Let>,
                "tad::let<name>(e): a let whose body has a gradient rule not linear in the adjoint "
                "(clip_gradient, custom_gradient, an overridden op) is used in the operand of a matrix "
                "product and elsewhere; a program evaluates each operand on its own, so the rule would "
                "run once per operand: not supported yet (doc/linear-algebra.md, \"Not yet\")");
}
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
template <class E>
constexpr void report_row_composite() {
  static_assert(always_false<E>,
                "tad::softmax / log_softmax / softmax_cross_entropy of a matrix: its argument holds a "
                "gradient rule not linear in the adjoint (clip_gradient, custom_gradient, an overridden "
                "op); the op reads it twice in each row, and running that rule once on each element's "
                "summed adjoint is not supported yet for matrices (it is for vectors); the rule would run "
                "once per read, which is not TensorFlow's result (doc/semantics.md, \"Shared subexpressions\")");
}

/// Called where a gradient of E is computed: one compile error for a rule that would run per
/// copy, per operand, per share or per read.
template <class E>
constexpr void check_shared_rules() {
  using P = rule_problem<E>;
  if constexpr (P::kind == 1) report_repeated_rule<typename P::node_type>();
  else if constexpr (P::kind == 2) report_let_across_products<typename P::node_type>();
  else if constexpr (P::kind == 3) report_broadcast_rule<typename P::node_type>();
  else if constexpr (P::kind == 4) report_row_composite<E>();
}

}  // namespace tad::detail
