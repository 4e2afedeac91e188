#pragma once
/// Building nodes: operand conversion and the checks every op constructor shares.

#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/core/value_type.hpp>
#include <tad/detail/static_for.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

/// Anything an op accepts as an argument: an expression or an arithmetic value (a constant).
template <class X>
concept operand = expression<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;

namespace detail {

/// One side is a tad expression and the other neither an expression nor a number: data (a
/// std::vector, a span, an array) that should have been wrapped in tad::constant or tad::var.
/// The operators and binary functions have an overload for this that reports it once.
template <class L, class R>
concept data_operand = (expression<L> && !operand<R>) || (!operand<L> && expression<R>);

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

/// The first variable leaf named Name in E (void if none).
template <class E, fixed_string Name>
constexpr bool leaf_named() {
  if constexpr (requires { E::name; }) return same_name<E::name, Name>; else return false;
}
template <class E, fixed_string Name>
struct var_named {
  using type = std::conditional_t<leaf_named<E, Name>(), named_leaf_t<E>, void>;  // a column: its vector
};
template <class Op, class... C, fixed_string Name>
struct var_named<node<Op, C...>, Name> {
  using type = first_non_void_t<typename var_named<C, Name>::type...>;
};

/// Does every variable of B have the type of the same-named variable of A, if A has one?
template <class A, class B>
constexpr bool same_typed_names() {
  if constexpr (is_leaf_v<B>) {
    if constexpr (requires { B::name; }) {
      using L = typename var_named<A, B::name>::type;
      return std::is_void_v<L> || std::is_same_v<L, named_leaf_t<B>>;
    } else {
      return true;
    }
  } else {
    bool ok = true;
    static_for<B::arity>([&](auto k) { ok = ok && same_typed_names<A, child_t<k.value, B>>(); });
    return ok;
  }
}
/// Do the children C... agree on the type of every variable name they share?
template <class... C>
constexpr bool names_agree() {
  using list = std::tuple<C...>;
  bool ok = true;
  static_for<sizeof...(C)>([&](auto i) {
    static_for<sizeof...(C)>([&](auto j) {
      if constexpr (i.value < j.value)
        ok = ok && same_typed_names<std::tuple_element_t<i.value, list>, std::tuple_element_t<j.value, list>>();
    });
  });
  return ok;
}

/// The first variable of B whose type differs from the same-named variable of A, as
/// `std::type_identity<leaf>` (`std::type_identity<void>` if none): first_non_void
/// (core/expression.hpp) over the children.
template <class A, class B>
constexpr auto conflicting_leaf() {
  if constexpr (is_leaf_v<B>) {
    if constexpr (requires { B::name; }) {
      using L = typename var_named<A, B::name>::type;
      if constexpr (!std::is_void_v<L> && !std::is_same_v<L, named_leaf_t<B>>) return std::type_identity<B>{};
      else return std::type_identity<void>{};
    } else {
      return std::type_identity<void>{};
    }
  } else {
    return []<std::size_t... K>(std::index_sequence<K...>) {
      return first_non_void(conflicting_leaf<A, child_t<K, B>>()...);
    }(std::make_index_sequence<B::arity>{});
  }
}
/// The name, as `variable_name<...>`, of the first variable two of the children C... give
/// different types.
template <class... C>
constexpr auto conflicting_name() {
  using list = std::tuple<C...>;
  auto leaf = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return first_non_void([&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return first_non_void(conflicting_leaf<std::tuple_element_t<J, list>, std::tuple_element_t<K, list>>()...);
      }(std::make_index_sequence<sizeof...(C)>{});
    }(std::integral_constant<std::size_t, I>{})...);
  }(std::make_index_sequence<sizeof...(C)>{});
  using L = typename decltype(leaf)::type;
  return std::type_identity<name_type_t<L::name>>{};
}
/// One error for two different variables named Name (a `variable_name<...>`, which both
/// compilers print as characters in the note or line that leads here).
template <class Name>
constexpr void report_same_name() {
  static_assert(always_false<Name>,
                "tad: two different variables have the same name in one expression (one is an "
                "array and one a scalar, or their element types differ); a name identifies one "
                "variable");
}

/// Is the variable leaf b bound to the same data as a (same type, same name)?
template <class L>
constexpr bool same_binding(const L& a, const L& b) {
  if constexpr (L::is_array) return same_view(a, b);
  else if (a.src != nullptr || b.src != nullptr) return a.src == b.src;
  else return a.val == b.val;
}
/// The first variable leaf named Name in e (which has one).
template <fixed_string Name, class E>
constexpr const auto& first_var(const E& e) {
  if constexpr (is_leaf_v<E>) {
    return named_leaf_of(e);
  } else {
    constexpr std::size_t k = [] {
      std::size_t r = E::arity;
      static_for<E::arity>([&](auto j) {
        if (r == E::arity && !std::is_void_v<typename var_named<child_t<j.value, E>, Name>::type>) r = j.value;
      });
      return r;
    }();
    return first_var<Name>(child<k>(e));
  }
}
/// Does E hold a named leaf (a variable) anywhere?
template <class E>
struct holds_names : std::bool_constant<requires { E::name; }> {};
template <class Op, class... C>
struct holds_names<node<Op, C...>> : std::bool_constant<(holds_names<C>::value || ...)> {};

/// Throws when a variable of b is bound to other data than the same-named variable of a.
template <class A, class B>
constexpr void check_bindings(const A& a, const B& b) {
  if constexpr (!holds_names<A>::value || !holds_names<B>::value) {
    // (no variable on one side: nothing to check, no walk below)
  } else if constexpr (is_leaf_v<B>) {
    if constexpr (requires { B::name; }) {
      if constexpr (!std::is_void_v<typename var_named<A, B::name>::type>) {
        if (!same_binding(first_var<B::name>(a), named_leaf_of(b)))
          throw std::invalid_argument("tad: two different variables are named '" + std::string(B::name.view()) +
                                      "' in one expression; a name identifies one variable");
      }
    }
  } else {
    static_for<B::arity>([&](auto k) { check_bindings(a, child<k.value>(b)); });
  }
}

/// Does a node of Op over C... (a matrix, not a reduction or a product) broadcast across its
/// rows a vector child holding its own rule not linear in the adjoint (core/let.hpp,
/// vector_rule)?
template <class C>
constexpr bool row_broadcast_rule() {
  if constexpr (is_leaf_v<C>) return false;
  else return props<C>::rank == 1 && !std::is_void_v<typename vector_rule<C>::type>;
}
template <class Op, class... C>
constexpr bool broadcasts_rule() {
  if constexpr (!op_differentiable<Op>() || op_is_product<Op>() || (is_leaf_v<C> && ...)) {
    return false;
  } else {
    using N = node<Op, C...>;
    return props<N>::rank == 2 && !props<N>::is_reduction && (row_broadcast_rule<C>() || ...);
  }
}
template <class Op, class... C>
constexpr auto make(const C&... c);
/// c, a stage when it is such a vector: the program computes it once, sums its adjoint over the
/// rows (the column sums), and runs its rule once on that sum, as TensorFlow does
/// (decisions.md 56).
template <class C>
constexpr auto row_stage(const C& c);

/// check_bindings, then (with lets) check_let_bindings, over every pair of a node's children
/// (written out per arity: a compile-time loop here was six functions per node built).
template <class A, class B>
constexpr void check_child_pairs(const A& a, const B& b) {
  check_bindings(a, b);
  if constexpr (has_lets_v<A> && has_lets_v<B>) check_let_bindings(a, b);
}
template <class A, class B, class C>
constexpr void check_child_pairs(const A& a, const B& b, const C& c) {
  check_bindings(a, b), check_bindings(a, c), check_bindings(b, c);
  if constexpr (has_lets_v<A> || has_lets_v<B> || has_lets_v<C>) check_let_bindings(a, b), check_let_bindings(a, c), check_let_bindings(b, c);
}

/// `node<Op, C...>{c...}` after checking that the children agree on their element type and on
/// their variables (one name, one variable). After a reported misuse, passes it on silently.
template <class Op, class... C>
constexpr auto make(const C&... c) {
  using N = node<Op, C...>;
  if constexpr (poisoned_v<C...>) {
    return invalid_expression{};
  } else if constexpr (mixes_precisions_v<N>) {
    static_assert(!mixes_precisions_v<N>,
                  "tad: an expression mixes float and double variables or arrays, so its element "
                  "type is ambiguous; convert the data to one precision");
    return invalid_expression{};
  } else if constexpr (!names_agree<C...>()) {
    report_same_name<typename decltype(conflicting_name<C...>())::type>();
    return invalid_expression{};
  } else if constexpr (let_conflict_kind<N>() != 0) {
    report_let_conflict<N>();
    return invalid_expression{};
  } else if constexpr (broadcasts_rule<Op, C...>()) {
    return make<Op>(row_stage(c)...);
  } else {
    if constexpr (sizeof...(C) > 1) check_child_pairs(c...);
    return N{c...};
  }
}

/// `stage_op` around e, with a new id (core/let.hpp): one node, wherever it is copied.
template <class E>
constexpr auto make_stage(const E& e) {
  auto n = make<stage_op<auto_let_name<E, 's'>()>>(e);
  if constexpr (!poisoned_v<decltype(n)>) {
    if (!std::is_constant_evaluated()) n.op.id = next_stage_id();
  }
  return n;
}
template <class C>
constexpr auto row_stage(const C& c) {
  if constexpr (row_broadcast_rule<C>()) return make_stage(c);
  else return c;
}

template <class Op, class... X>
constexpr auto make_from(const X&... x) {
  return make<Op>(as_expr(x)...);
}

}  // namespace detail
}  // namespace tad

/// Internal: in namespace tad, `TAD_DETAIL_REJECT_DATA_OPERAND(<)` declares the overload of
/// `operator<` for an expression and data that is not a tad expression or a number (a std::vector,
/// say): one error saying to wrap it, instead of every `operator<` the compiler knows as
/// candidates. Used by ops/arithmetic.hpp and ops/select.hpp.
#define TAD_DETAIL_REJECT_DATA_OPERAND(op)                                                              \
  template <class L, class R>                                                                           \
    requires detail::data_operand<L, R>                                                                 \
  constexpr auto operator op(const L&, const R&) {                                                      \
    constexpr bool wrapped = !detail::data_operand<L, R>;                                               \
    static_assert(wrapped, "tad::operator" #op "(a, b): a and b must be tad expressions or numbers; "   \
                           "wrap data (a std::vector, a span, an array) in tad::constant(data) "        \
                           "or tad::var<\"name\">(data)");                                              \
    return detail::invalid_expression{};                                                                \
  }
