#pragma once
/// `detail::one_node(e)`: the argument of a composite op that reads it more than once
/// (softmax_cross_entropy, softmax, log_softmax) made one node when a rule not linear in the
/// adjoint would otherwise run once per read (doc/semantics.md, "Shared subexpressions";
/// decisions.md 54).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/linalg.hpp>
#include <tad/ops/make.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tad::detail {

/// Can two copies of E be compared for being one computation: is every op's state empty or
/// its bytes (a pick's labels)? A custom rule's captures and an override's rule are not.
template <class E>
constexpr bool comparable_ops() {
  if constexpr (is_leaf_v<E>) {
    return true;
  } else {
    using Op = typename E::op_type;
    bool r = std::is_empty_v<Op> || std::has_unique_object_representations_v<Op>;
    static_for<E::arity>([&](auto k) { r = r && comparable_ops<child_t<k.value, E>>(); });
    return r;
  }
}

/// e as one node for a composite that reads it more than once: when an adjoint reaches a rule
/// not linear in the adjoint outside e's lets (each read would run that rule on its own share
/// of the adjoint), a let the engine shares in its loops, or a stage (ops/make.hpp: make_stage)
/// where a let cannot be: e holding a matrix product, or an op whose state cannot be compared
/// (a custom_gradient's rule, an override's: two composites of one argument type would share
/// one let by name, whatever their captures; a stage is one node per call). e itself otherwise
/// (rules linear in the adjoint give the same numbers either way, and the loops stay those of
/// the plain expression).
template <class E>
constexpr auto one_node(const E& e) {
  if constexpr (is_leaf_v<E> || !rule_outside_lets<E>()) {
    return e;
  } else if constexpr (!has_products_v<E> && comparable_ops<E>()) {
    constexpr auto name = auto_let_name<E>();
    return make<let_op<name>>(e);
  } else {
    return make_stage(e);
  }
}

/// The argument of a matrix form of those composites (softmax and log_softmax along an axis,
/// the row-wise softmax cross-entropies), which read it twice per row in two sweeps whose
/// adjoints the engine does not sum before a rule runs: a stage when an adjoint reaches a rule
/// not linear in the adjoint in it (in a let too). A tad::program then computes it once, sums
/// its adjoint and runs the rule once (decisions.md 56).
template <class E>
constexpr auto row_composite_argument(const E& e) {
  if constexpr (!is_leaf_v<E> && reaches_rule<E>()) return make_stage(e);
  else return e;
}

}  // namespace tad::detail
