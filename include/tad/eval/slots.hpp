#pragma once
/// The reduction slots of an expression: each reduction node's place in post-order, level,
/// depth and the variables its argument reaches (collect, reduction_info), how to visit and
/// address them (visit_reductions, slot_node, slot_ref), the pass kinds and which loop runs a
/// reduction forward or backward, and the set of variables a gradient takes (wrt_list).

#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/indexing.hpp>
#include <tad/eval/extents.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// A set of variable positions 0..N-1: ceil(N / 64) words, a compile-time value wherever the
/// engine reads it (so it sets no limit on how many variables one gradient takes).
template <std::size_t N>
struct var_mask {
  std::array<std::uint64_t, (N + 63) / 64> words{};
  constexpr void set(std::size_t k) { words[k / 64] |= std::uint64_t{1} << (k % 64); }
  constexpr bool test(std::size_t k) const { return ((words[k / 64] >> (k % 64)) & 1u) != 0; }
};

/// The variables a gradient is taken with respect to, in argument order.
template <class... X>
struct wrt_list {
  using types = std::tuple<X...>;
  static constexpr std::size_t size = sizeof...(X);
  /// Does the engine add the k-th gradient to what its buffer holds (adding_wrt_list), rather
  /// than write it?
  static constexpr bool adds(std::size_t) noexcept { return false; }
  template <class E>
  static constexpr bool reached = reaches_any_v<E, X...>;
  template <fixed_string Name>
  static constexpr std::size_t index = [] {
    std::size_t k = 0, found = sizeof...(X);
    ((found = (found == sizeof...(X) && same_name<X::name, Name>) ? k : found, ++k), ...);
    return found;
  }();
  /// Bit k set when the gradient of E reaches the k-th variable without entering a reduction.
  template <class E>
  static constexpr var_mask<sizeof...(X)> local_mask = [] {
    var_mask<sizeof...(X)> m{};
    std::size_t k = 0;
    ((reaches<E, X::name, false>::value ? m.set(k) : void(), ++k), ...);
    return m;
  }();
};

/// The same, where the k-th gradient is added to its buffer when the k-th of Adds is true: a
/// program's vector-Jacobian products inside its loops add into the sums they contribute to
/// (eval/program/backward.hpp), with no scratch buffer and no second pass. The engine can
/// only when no pass stores into or scales such a buffer on its own (plan::can_add).
template <class Adds, class... X>
struct adding_wrt_list;
template <bool... A, class... X>
struct adding_wrt_list<std::integer_sequence<bool, A...>, X...> : wrt_list<X...> {
  static_assert(sizeof...(A) == sizeof...(X));
  static constexpr bool adds(std::size_t k) noexcept {
    constexpr bool a[sizeof...(A) + 1] = {A..., false};
    return a[k];
  }
};

/// Is every backward rule in E linear in the adjoint? An op whose rule is not (clip_gradient)
/// declares `adjoint_linear = false`; a scaled pass (which runs the rules with a unit adjoint
/// and scales afterwards) is then not used for a reduction whose argument contains it.
template <class E>
constexpr bool adjoint_linear() {
  if constexpr (is_leaf_v<E>) {
    return true;
  } else {
    bool r = true;
    if constexpr (requires { E::op_type::adjoint_linear; }) r = E::op_type::adjoint_linear;
    static_for<E::arity>([&](auto k) { r = r && adjoint_linear<child_t<k.value, E>>(); });
    return r;
  }
}

struct reduction_info {
  int level = 0;
  int depth = 0;
  bool wants = false;        // a gradient must flow through it
  bool needs_value = false;  // its elementwise adjoint depends on its own value
  bool rejects_empty = false;
  bool adjoint_linear = true;  // every rule in its argument is linear in the adjoint
  std::size_t roots = 0;     // loop invariants in its argument
  std::size_t root_base = 0; // slot of the first of them
  std::size_t nest = 0;      // the extent class its argument runs over (extents.hpp)
  bool point = false;        // a reduction along an axis: its sweeps run in its parent's loop
  bool down = false;         // ... along axis 0 (sum(X, axis<0>)): down the rows of a block of columns
  bool sparse = false;       // ... whose sweep touches one element per row (a pick), not every one
  std::size_t outer_nest = 0;  // the nest of the loop that runs it: its parent's (a point), else nest
};

/// forward: reductions of one level; backward: the backward pass of one depth; fused: the last
/// level's forward loop with the first backward pass; scaled: the same with a unit adjoint
/// (plan::scaled); store: an array expression into a buffer.
enum class pass_kind { forward, backward, fused, scaled, store };

/// Does the loop of pass K, level or depth A, run reduction r forward (accumulate it)?
/// (Never an axis point: the loop of its parent's rows runs its sweeps, engine::point_loop.)
template <pass_kind K, int A>
constexpr bool forward_in(const reduction_info& r) {
  return (K == pass_kind::forward || K == pass_kind::fused || K == pass_kind::scaled) && r.level == A && !r.point;
}
/// ... run its backward (push its adjoint into its argument)?
template <pass_kind K, int A>
constexpr bool backward_in(const reduction_info& r) {
  if (r.point) return false;
  if constexpr (K == pass_kind::backward) return r.depth == A && r.wants;
  else if constexpr (K == pass_kind::fused || K == pass_kind::scaled) return r.depth == 0 && r.wants;
  else return false;
}

/// Fills out[slot] (and vars[slot]: the variables its argument reaches directly, k-th of W)
/// for every reduction of E, in post-order. `live`: an adjoint can reach E from the root (no
/// stop_gradient or other cut above it, adjoint_flows); a reduction below a cut wants nothing
/// (its adjoint is a structural zero: semantics.md, "no code runs").
template <class W, class E>
constexpr void collect(reduction_info* out, var_mask<W::size>* vars, std::size_t slot, int depth, bool live = true) {
  if constexpr (props<E>::reductions > 0) {  // (no walk below a subtree without reductions)
    constexpr bool is_red = props<E>::is_reduction;
    constexpr bool is_point = props<E>::is_point;
    std::size_t s = slot;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      collect<W, C>(out, vars, s, is_red && !is_point ? depth + 1 : depth, live && adjoint_flows<E, k.value>::value);
      s += props<C>::reductions;
    });
    if constexpr (is_red) {
      using Op = typename E::op_type;
      reduction_info& r = out[s];
      r.level = props<E>::level;
      // An axis point's adjoint arrives in the pass of the reduction that holds it: its depth.
      r.depth = is_point && depth > 0 ? depth - 1 : depth;
      r.point = is_point;
      if constexpr (is_point) r.down = Op::axis == 0;
      r.sparse = requires { Op::picks; };
      r.wants = live && W::template reached<E>;
      r.needs_value = Op::needs_value;
      if constexpr (requires { Op::rejects_empty; }) r.rejects_empty = Op::rejects_empty;
      r.adjoint_linear = adjoint_linear<decltype(E::arg)>();
      vars[s] = W::template local_mask<decltype(E::arg)>;
      r.roots = props<decltype(E::arg)>::roots;
    }
  }
}

/// Calls `f.template operator()<Slot>(r)` for every reduction node r of e, in post-order. It
/// walks only the subtrees that hold a reduction (a walk of every node was a function per node
/// per visitor, thousands per TU: doc/compile-times.md). (A loop over the slots reaching each
/// node by slot_ref, as visit_leaves does, instantiates less, but changed g++'s inlining in W1's
/// loop: xsimd's sin kernel was called out of line again, 1.10x -> 1.16x; decisions.md 62.)
template <std::size_t Slot, class E, class F>
TAD_INLINE constexpr void visit_reductions(const E& e, F& f) {
  if constexpr (props<E>::reductions > 0) {
    static_for<E::arity>([&](auto k) TAD_INLINE_LAMBDA { visit_reductions<child_slot<E, k.value, Slot>()>(child<k.value>(e), f); });
    if constexpr (props<E>::is_reduction) f.template operator()<Slot + props<E>::reductions - 1>(e);
  }
}

/// The child of M (first slot Slot) whose slots hold slot S (M's own slot excluded).
template <class M, std::size_t S, std::size_t Slot>
constexpr std::size_t child_with_slot() {
  std::size_t found = M::arity;
  static_for<M::arity>([&](auto j) {
    constexpr std::size_t first = child_slot<M, j.value, Slot>();
    if (first <= S && S < first + props<child_t<j.value, M>>::reductions) found = j.value;
  });
  return found;
}

/// The reduction node of E at post-order slot S (E's first slot: Slot), as a type_identity
/// (void if E holds no such slot). Descends only into the child that holds S.
template <class E, std::size_t S, std::size_t Slot = 0>
constexpr auto slot_node() {
  if constexpr (S < Slot || S >= Slot + props<E>::reductions) {
    return std::type_identity<void>{};
  } else if constexpr (props<E>::is_reduction && Slot + props<E>::reductions - 1 == S) {
    return std::type_identity<E>{};
  } else {
    constexpr std::size_t k = child_with_slot<E, S, Slot>();
    return slot_node<child_t<k, E>, S, child_slot<E, k, Slot>()>();
  }
}
template <class E, std::size_t S>
using slot_node_t = typename decltype(slot_node<E, S>())::type;

/// The reduction node of e at post-order slot S (e's first slot: Slot), by reference (const if e is).
template <std::size_t S, std::size_t Slot = 0, class N>
constexpr auto& slot_ref(N& e) {
  using M = std::remove_const_t<N>;
  if constexpr (props<M>::is_reduction && Slot + props<M>::reductions - 1 == S) {
    return e;
  } else {
    constexpr std::size_t k = child_with_slot<M, S, Slot>();
    return slot_ref<S, child_slot<M, k, Slot>()>(child<k>(e));
  }
}

}  // namespace tad::detail
