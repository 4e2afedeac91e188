#pragma once
/// Contraction of products into sums (doc/decisions.md item 18).
///
/// Where the value of a product node (`a * b`, `square(a)`) is only added to something (the
/// other operand of a `+` or `-`, the accumulator of a `sum` or `mean`) and where a product
/// adjoint `dy * b` of `a * b` is only added to an accumulator (a scalar variable's gradient, a
/// reduction's or a loop invariant's adjoint), the engine computes the multiply and the add as
/// one fused multiply-add (`simd::mul_add`), as a hand-written loop with `xsimd::fma` does. g++
/// contracts such pairs by itself (`-ffp-contract=fast`, its default); clang does not across
/// the code of two ops, so without this its loops had twice the arithmetic instructions there.
///
/// The value tree of the product node stays as it is (its operands are in it); the product
/// itself is then dead code. Scalars are contracted the same way (the loops' tails, scalar
/// expressions), so that a value does not depend on where in a loop its element fell, nor on
/// the compiler; in constant evaluation, and on targets without FMA instructions, nothing is
/// fused (simd::mul_add).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/elementwise.hpp>
#include <tad/simd/batch.hpp>

#include <type_traits>

namespace tad::detail {

/// Values the engine contracts: SIMD batches and floating-point scalars.
template <class X>
inline constexpr bool contractible_v = simd::is_batch_v<X> || std::is_floating_point_v<X>;

/// The op whose forward an op computes: itself, or for an overridden op (override_gradients:
/// same forward, another backward) the op it overrides.
template <class Op>
struct forward_op_of {
  using type = Op;
};
template <class Op>
  requires requires { typename Op::base_op; }
struct forward_op_of<Op> {
  using type = typename Op::base_op;
};

/// True if E is a node whose value is the product of its operands' values and VT is the value
/// tree it was evaluated to as a node (not read as a loop invariant or a reduction's value).
template <class E, class VT>
constexpr bool product_tree() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else if constexpr (!requires(const VT& t) { t.c0; } || !contractible_v<decltype(VT::v)>) {
    return false;
  } else {
    using F = typename forward_op_of<typename E::op_type>::type;
    return std::is_same_v<F, mul_op> || std::is_same_v<F, square_op>;
  }
}

/// The two factors of a product tree.
template <class VT>
TAD_INLINE constexpr const auto& factor0(const VT& t) noexcept {
  return t.c0.v;
}
template <class VT>
TAD_INLINE constexpr const auto& factor1(const VT& t) noexcept {
  if constexpr (requires { t.c1; }) return t.c1.v;
  else return t.c0.v;  // square
}

/// The value of the binary node e from its children's value trees ta and tb: `a * b + c`,
/// `c + a * b`, `a * b - c` and `c - a * b` as one fused multiply-add, every other node by its
/// op's forward.
template <class E, class TA, class TB>
TAD_INLINE constexpr auto combine(const E& e, const TA& ta, const TB& tb) {
  using F = typename forward_op_of<typename E::op_type>::type;
  using L = std::remove_cvref_t<decltype(e.lhs)>;
  using R = std::remove_cvref_t<decltype(e.rhs)>;
  constexpr bool add = std::is_same_v<F, add_op>, sub = std::is_same_v<F, sub_op>;
  if constexpr ((add || sub) && std::is_same_v<decltype(TA::v), decltype(TB::v)>) {
    if constexpr (product_tree<L, TA>()) {
      if constexpr (add) return simd::mul_add(factor0(ta), factor1(ta), tb.v);
      else return simd::mul_sub(factor0(ta), factor1(ta), tb.v);
    } else if constexpr (product_tree<R, TB>()) {
      if constexpr (add) return simd::mul_add(factor0(tb), factor1(tb), ta.v);
      else return simd::neg_mul_add(factor0(tb), factor1(tb), ta.v);
    } else {
      return e.op.forward(ta.v, tb.v);
    }
  } else {
    return e.op.forward(ta.v, tb.v);
  }
}

/// An adjoint `x * y` not yet multiplied: what a product node passes to a child whose adjoint
/// goes straight into an accumulator, which then adds it with one fused multiply-add.
template <class V>
struct product_adjoint {
  V x;
  V y;
};

template <class X>
inline constexpr bool is_product_adjoint_v = false;
template <class V>
inline constexpr bool is_product_adjoint_v<product_adjoint<V>> = true;

/// `acc + d`, fused when d is a product_adjoint.
template <class A, class D>
TAD_INLINE constexpr A accumulate_adjoint(const A& acc, const D& d) {
  if constexpr (is_product_adjoint_v<D>) return simd::mul_add(d.x, d.y, acc);
  else return acc + d;
}

/// Adds the value tree t of a reduction's argument E to the reduction's state: fused when the
/// op can take a product (`accumulate_product`) and t is a product tree.
template <class Op, class E, class S, class VT>
TAD_INLINE constexpr void accumulate_tree(S& s, const VT& t) {
  if constexpr (product_tree<E, VT>() && requires { Op::accumulate_product(s, t.v, t.v); }) {
    Op::accumulate_product(s, factor0(t), factor1(t));
  } else {
    Op::accumulate(s, t.v);
  }
}

}  // namespace tad::detail
