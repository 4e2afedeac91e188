#pragma once
/// What the engine's loops read and write (the context, the sinks of adjoints) and how it
/// prepares an expression before any loop (freeze, validate).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/contract.hpp>
#include <tad/eval/elementwise.hpp>
#include <tad/eval/extents.hpp>

#include <array>
#include <cstddef>
#include <string_view>

namespace tad::detail {

template <class T, std::size_t NR, std::size_t NI, class W>
struct context {
  using value_type = T;
  using wrt = W;
  std::array<T, W::size> wval{};  // values of the scalar variables of W, read once
  std::array<T, NR> val{};  // reduction values
  std::array<T, NR> aux{};  // reduction auxiliaries (e.g. the count of maxima)
  std::array<T, NR> adj{};  // reduction adjoints
  std::array<T, NI> inv{};  // loop invariants of the current loop
  std::size_t n = 0;
};

/// What a sink does with the adjoint of a loop invariant: sums it per loop, to be pushed once
/// after the loop (summed: the sink of a loop), or pushes it on at once (pushed: the scalar
/// code, where each invariant is met once).
enum class invariant_adjoints : bool { pushed, summed };

/// Adjoint accumulators: one per variable (array variables: the current element's sum of
/// contributions; scalar variables: a running sum), one per reduction, and (Inv == summed, in a
/// loop) one per loop invariant.
template <class V, class W, std::size_t NR, std::size_t NI, invariant_adjoints Inv>
struct sink {
  static constexpr bool defers = Inv == invariant_adjoints::summed;
  std::array<V, W::size> var;
  std::array<V, NR> red;
  std::array<V, defers ? NI : 0> inv;
  template <class E>
  static constexpr bool wants = W::template reached<E>;
  template <class Leaf, class D>
  TAD_INLINE constexpr void add_var(const D& dy) {
    auto& a = var[W::template index<Leaf::name>];
    a = accumulate_adjoint(a, dy);
  }
  template <std::size_t S, class D>
  TAD_INLINE constexpr void add_reduction(const D& dy) {
    red[S] = accumulate_adjoint(red[S], dy);
  }
  template <std::size_t R, class D>
  TAD_INLINE constexpr void add_invariant(const D& dy) {
    inv[R] = accumulate_adjoint(inv[R], dy);
  }
};

/// Is E a scalar variable bound to an lvalue (scalar_var<Name, T, true>)?
template <class E>
concept bound_leaf = requires { requires E::bound; };

/// Makes scalar leaves hold their current values, so loops read registers, not memory that a
/// gradient store might alias. A bound scalar variable reads through src: it points at its own
/// val in the frozen copy (which is not copied again while it is used).
template <class E>
constexpr bool holds_ref();
template <class E>
constexpr void freeze(E& e) {
  if constexpr (!holds_ref<E>()) {
    // (nothing to freeze: no walk below)
  } else if constexpr (is_leaf_v<E>) {
    if constexpr (requires { e.src; }) {
      e.val = e.value();
      if constexpr (bound_leaf<E>) e.src = &e.val;
      else e.src = nullptr;
    }
  } else {
    static_for<E::arity>([&](auto k) { freeze(child<k.value>(e)); });
  }
}

/// Is E a loop's placeholder (`@carry`, `@in`, `@in2`, `@in3`: a map's scalar slice is one, bound
/// afresh at each step, ops/scan.hpp)? The body's own engine reads it, at each step (where it
/// has been renamed, eval/canonical.hpp, and is frozen); a freeze outside the loop skips it.
template <class E>
constexpr bool internal_leaf() {
  if constexpr (requires { E::name; }) {
    return placeholder_slot(E::name.view()) >= 0;
  } else {
    return false;
  }
}
/// Does E hold a leaf that reads the caller's lvalue (`constant_ref`, a scalar variable bound to
/// an lvalue)? freeze copies its value for the loops.
template <class E>
struct holds_ref_t : std::bool_constant<requires(E e) { e.src; } && !internal_leaf<E>()> {};
template <class Op, class... C>
struct holds_ref_t<node<Op, C...>> : std::bool_constant<(holds_ref_t<C>::value || ...)> {};
template <class E>
constexpr bool holds_ref() {
  return holds_ref_t<E>::value;
}

/// Position (left to right, from `base`) of the first leaf of E named Name, or SIZE_MAX.
template <class E, fixed_string Name>
constexpr std::size_t first_leaf(std::size_t base) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { E::name; }) {
      if constexpr (same_name<E::name, Name>) return base;
    }
    return static_cast<std::size_t>(-1);
  } else {
    std::size_t found = static_cast<std::size_t>(-1), b = base;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      if (found == static_cast<std::size_t>(-1)) found = first_leaf<C, Name>(b);
      b += leaf_count<C>();
    });
    return found;
  }
}

/// Ops with parameters checked at evaluation time (clip_gradient's lo <= hi, read through
/// constant_ref) declare `validate<T>(node)`; the engine calls it on every such node before any
/// loop, so a bad parameter throws before anything is written.
template <class E, class T>
struct validates : std::false_type {};
template <class Op, class... C, class T>
struct validates<node<Op, C...>, T>
    : std::bool_constant<requires(const node<Op, C...>& n) { Op::template validate<T>(n); } || (validates<C, T>::value || ...)> {};
template <class T, class E>
constexpr void validate(const E& e) {
  if constexpr (validates<E, T>::value) {  // (no walk below a subtree without such an op)
    static_for<E::arity>([&](auto k) { validate<T>(child<k.value>(e)); });
    if constexpr (requires { E::op_type::template validate<T>(e); }) E::op_type::template validate<T>(e);
  }
}

}  // namespace tad::detail
