#pragma once
/// The checks that a rule not linear in the adjoint (clip_gradient, custom_gradient, an op
/// overridden by override_gradients) never runs per copy, per read or per share by accident,
/// where a gradient is computed: a compile error for such a node that occurs twice outside
/// lets and per_use (a stage's body counts once per stage type: doc/semantics.md, "Shared
/// subexpressions"; decisions.md 54), for a scalar let of one used inside a stage and elsewhere,
/// for a per_use holding a stage, and, as a guard (building a node puts such a vector in a
/// stage, decisions.md 56), for a vector holding one broadcast across a matrix's rows. Analysis
/// only: plain code over types.

#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/products.hpp>
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
/// A let or a per_use: a node whose body is a place of its own.
template <class N>
constexpr bool is_place_node() {
  return is_let_node_v<N> || is_per_use_node<N>();
}

/// Does the search for a repeated rule stop at N? A let or a per_use (each distinct one's body
/// is walked once, as a place of its own), an op without a gradient (nothing below it gets an
/// adjoint).
template <class N>
constexpr bool opaque_to_rules() {
  if constexpr (is_leaf_v<N>) return true;
  else return is_place_node<N>() || !op_differentiable<typename N::op_type>();
}

/// How often node type R occurs in E where an adjoint reaches it, outside lets, per_use and
/// stages (stage_op). Matrix products are walked like every node: two products of one type are
/// two occurrences, whether or not a program finds them to be one computation at run time.
template <class R, class E>
constexpr std::size_t local_occurrences() {
  // (A subtree whose rules are all linear holds no R with a rule that is not: not walked.)
  if constexpr (opaque_to_rules<E>() || is_stage_op_node_v<E> || is_custom_output_node_v<E> ||
                (own_rule_nonlinear<R>() && props<E>::linear_rules)) {
    return 0;
  } else {
    std::size_t n = std::is_same_v<R, E> ? 1 : 0;
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) n += local_occurrences<R, child_t<k.value, E>>();
    });
    return n;
  }
}

template <class... P>
struct places {};
template <class List, class P>
struct places_add;
template <class... Ps, class P>
struct places_add<places<Ps...>, P> {
  using type = std::conditional_t<(std::is_same_v<Ps, P> || ...), places<Ps...>, places<Ps..., P>>;
};

/// The distinct stage types (stage_op) of E outside lets, per_use and other stages, where an
/// adjoint reaches: a composite reads its stage twice (one node, one build); copies of a stage
/// type are one node when they are one computation (eval/program.hpp), so a stage's body counts
/// once per type.
template <class E, class Acc = places<>>
struct stages_in {
  using type = Acc;
};
template <class Op, class... C, class Acc>
struct stages_in<node<Op, C...>, Acc> {
  using N = node<Op, C...>;
  template <class A, std::size_t K>
  using step = std::conditional_t<adjoint_flows<N, K>::value, typename stages_in<child_t<K, N>, A>::type, A>;
  template <class A, std::size_t K0, std::size_t... K>
  static auto fold() {
    if constexpr (sizeof...(K) == 0) return std::type_identity<step<A, K0>>{};
    else return fold<step<A, K0>, K...>();
  }
  template <std::size_t... K>
  static auto all(std::index_sequence<K...>) -> decltype(fold<Acc, K...>());
  static auto pick() {
    if constexpr (is_place_node<N>() || !op_differentiable<Op>()) return std::type_identity<Acc>{};
    else if constexpr (is_stage_op_node_v<N>) return std::type_identity<typename places_add<Acc, N>::type>{};
    else if constexpr (is_custom_output_node_v<N>)  // (a group's outputs: its inputs, once)
      return std::type_identity<typename places_add<Acc, group_key_t<N>>::type>{};
    else return decltype(all(std::index_sequence_for<C...>{})){};  // (all is declared only)
  }
  using type = typename decltype(pick())::type;
};

template <class N>
using rule_body_t = std::remove_cvref_t<decltype(std::declval<const N&>().arg)>;

template <class R, class E, class Stages = typename stages_in<E>::type>
struct occurrences_of;
/// How often node type R occurs in stage S's body (a group's: in its inputs).
template <class R, class S>
constexpr std::size_t occurrences_in_stage() {
  if constexpr (is_custom_output_node_v<S>) {
    std::size_t n = 0;
    static_for<S::arity>([&](auto k) {
      using C = child_t<k.value, S>;
      if constexpr (adjoint_flows<S, k.value>::value) n += occurrences_of<R, C>::value;
    });
    return n;
  } else {
    return occurrences_of<R, rule_body_t<S>>::value;
  }
}

/// How often node type R occurs in E where an adjoint reaches it, outside lets and per_use:
/// outside stages, plus in each distinct stage type's body once.
template <class R, class E, class... S>
struct occurrences_of<R, E, places<S...>> {
  static constexpr std::size_t value = local_occurrences<R, E>() + (occurrences_in_stage<R, S>() + ... + std::size_t{0});
};
template <class R, class E>
constexpr std::size_t occurrences() {
  return occurrences_of<R, E>::value;
}

/// The distinct let and per_use nodes of E (anywhere an adjoint reaches), as a type list: the
/// places whose bodies are walked once each.
template <class E, class Acc = places<>>
struct bodies_of {
  using type = Acc;
};
template <class Op, class... C, class Acc>
struct bodies_of<node<Op, C...>, Acc> {
  using N = node<Op, C...>;
  using self = std::conditional_t<is_place_node<N>(), typename places_add<Acc, N>::type, Acc>;
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
/// occurrence), and those inside a stage (a product, a staged let, a stage_op): {all, in
/// stages}.
template <class L, class E, bool InStage = false>
constexpr std::pair<std::size_t, std::size_t> let_uses() {
  if constexpr (is_leaf_v<E>) {
    return {0, 0};
  } else if constexpr (!op_differentiable<typename E::op_type>()) {
    return {0, 0};
  } else {
    std::pair<std::size_t, std::size_t> n{0, 0};
    if constexpr (std::is_same_v<L, E>) n = {1, InStage ? 1 : 0};
    constexpr bool in = InStage || is_stage_node_v<E>;
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
/// The first let of E that a program leaves to its engines (a scalar) whose body has a rule
/// not linear in the adjoint, used inside a stage and more than once: each engine (the
/// expression around the stages, each operand and stage body) would run the rule on its own
/// share of the adjoint (void: none). Only where E has stages.
template <class Root, class Bodies>
struct let_across_stages;
template <class Root, class... B>
struct let_across_stages<Root, places<B...>> {
  template <class L>
  static auto one() {
    if constexpr (!is_let_node_v<L> || adjoint_linear<L>() || is_stage_let<L>()) {
      return std::type_identity<void>{};
    } else {
      constexpr auto u = let_uses<L, Root>();
      if constexpr (u.second > 0 && u.first > 1) return std::type_identity<L>{};
      else return std::type_identity<void>{};
    }
  }
  using type = first_non_void_t<void, typename decltype(one<B>())::type...>;
};

/// Does E hold a stage_op?
template <class E>
constexpr bool holds_stage_op() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else {
    bool r = is_stage_op_node_v<E>;
    static_for<E::arity>([&](auto k) { r = r || holds_stage_op<child_t<k.value, E>>(); });
    return r;
  }
}
/// The first per_use of E whose body holds a stage (void: none): copies of one per_use share
/// their stages (one build), so they would not be one rule per use.
template <class Bodies>
struct per_use_over_stage;
template <class... B>
struct per_use_over_stage<places<B...>> {
  template <class P>
  static auto one() {
    if constexpr (is_per_use_node<P>() && holds_stage_op<rule_body_t<P>>()) return std::type_identity<P>{};
    else return std::type_identity<void>{};
  }
  using type = first_non_void_t<void, typename decltype(one<B>())::type...>;
};

/// The first vector node with its own rule not linear in the adjoint (core/let.hpp:
/// vector_rule) that an elementwise op of a matrix broadcasts across rows. Building such a node
/// puts the vector in a stage (ops/make.hpp), so this finds one only where that did not happen.
/// Its rule would run on each element's share of the adjoint, the shares then summed per
/// column; TensorFlow runs it once on the column sums. A column (as_column) is a leaf. void:
/// none.
template <class E>
struct broadcast_rule {
  using type = void;
};
template <class Op, class... C>
struct broadcast_rule<node<Op, C...>> {
  using N = node<Op, C...>;
  // (A product's, a loop's or a tuple of carries' children are not broadcast across its rows.)
  static constexpr bool row_context =
      props<N>::rank == 2 && !props<N>::is_reduction && !op_is_product<Op>() && !op_is_loop<Op>();
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

/// What is wrong with E's rules (0: nothing), and the node to name.
template <class E>
struct rule_problem {
  static auto find() {
    if constexpr (adjoint_linear<E>()) {
      return std::pair<std::integral_constant<int, 0>, void*>{};
    } else {
      using Bodies = typename bodies_of<E>::type;
      using R = typename repeated_rule_search<E, Bodies>::type;
      using V = typename broadcast_rule<E>::type;
      using L = typename decltype([] {
        if constexpr (has_products_v<E> || has_stage_lets<E>()) return std::type_identity<typename let_across_stages<E, Bodies>::type>{};
        else return std::type_identity<void>{};
      }())::type;
      using U = typename per_use_over_stage<Bodies>::type;
      if constexpr (!std::is_void_v<R>) return std::pair<std::integral_constant<int, 1>, R*>{};
      else if constexpr (!std::is_void_v<L>) return std::pair<std::integral_constant<int, 2>, L*>{};
      else if constexpr (!std::is_void_v<U>) return std::pair<std::integral_constant<int, 5>, U*>{};
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
constexpr void report_let_across_stages() {
  static_assert(always_false<Let>,
                "tad::let<name>(e): a let of a scalar whose body has a gradient rule not linear in the "
                "adjoint (clip_gradient, custom_gradient, an overridden op) is used inside a stage (a "
                "matrix product's operand, a let of an array holding a product or such a rule, a "
                "composite's matrix argument, a vector broadcast across rows) and elsewhere; a program "
                "evaluates each stage on its own, so the rule would run once per stage: not supported "
                "yet; a let of an array is one node everywhere (doc/semantics.md, \"Stages\")");
}
template <class PerUse>
constexpr void report_per_use_over_stage() {
  static_assert(always_false<PerUse>,
                "tad::per_use(e): e holds a stage (a composite's matrix argument or a vector broadcast "
                "across rows, under a rule not linear in the adjoint), which its copies would share as "
                "one node: not one rule per use; not supported yet: build each use separately "
                "(doc/semantics.md, \"Stages\")");
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
/// Called where a gradient of E is computed: one compile error for a rule that would run per
/// copy, per operand, per share or per read.
template <class E>
constexpr void check_shared_rules() {
  using P = rule_problem<E>;
  if constexpr (P::kind == 1) report_repeated_rule<typename P::node_type>();
  else if constexpr (P::kind == 2) report_let_across_stages<typename P::node_type>();
  else if constexpr (P::kind == 5) report_per_use_over_stage<typename P::node_type>();
  else if constexpr (P::kind == 3) report_broadcast_rule<typename P::node_type>();
}

}  // namespace tad::detail
