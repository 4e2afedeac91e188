#pragma once
/// `tad::let<"z">(e)`: a named shared subexpression. Every occurrence of the name in one
/// expression is one node: its body is evaluated once (per element in a loop, once in scalar
/// code), the adjoints of all occurrences are summed, and the body's backward rule runs once on
/// that sum, as TensorFlow and PyTorch do for a tensor used twice (doc/semantics.md, "Shared
/// subexpressions").

#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/ops/make.hpp>

#include <type_traits>

namespace tad {

/// `let<"z">(e)`: e, shared under the name z. Write `auto z = tad::let<"z">(e);` and use z as
/// often as needed: one node, one gradient rule run on the summed adjoint.
template <fixed_string Name, class E>
constexpr auto let(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::let<name>(e): e must be a tad expression");
    return detail::invalid_expression{};
  } else if constexpr (detail::has_custom_input_v<E>) {
    static_assert(!detail::has_custom_input_v<E>,
                  "tad::let<name>(e): not inside custom_gradient's f (f is evaluated one element "
                  "at a time and has no shared nodes; use the let outside, on an input)");
    return detail::invalid_expression{};
  } else if constexpr (detail::props<E>::is_mask) {
    static_assert(!detail::props<E>::is_mask, "tad::let<name>(e): e must not be a comparison (a mask has no gradient to share)");
    return detail::invalid_expression{};
  } else {
    return detail::make<let_op<Name>>(e);
  }
}

/// `per_use(e)`: e, marked as a node of its own. Copies of one subexpression whose rule is not
/// linear in the adjoint (clip_gradient, custom_gradient, an overridden op) are a compile error
/// unless each is one node (`let`) or each use is wrapped in per_use: then each copy runs its
/// rule on its own share of the adjoint (doc/semantics.md, "Shared subexpressions").
template <class E>
constexpr auto per_use(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::per_use(e): e must be a tad expression");
    return detail::invalid_expression{};
  } else {
    return detail::make<per_use_op>(e);
  }
}

}  // namespace tad
