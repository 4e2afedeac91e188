#pragma once
/// The elementwise forward and backward recursion shared by every pass.
///
/// `forward<V, Slot>(e, ctx, i)` evaluates `e` at element i (a SIMD batch or one scalar, per V)
/// and returns a value tree: the node's value and its children's trees, kept in registers so the
/// backward walk reuses them instead of recomputing. Reductions met on the way are loop
/// invariants read from the context. `backward<Slot>(e, tree, dy, sink)` pushes the adjoint `dy`
/// down, into the sink's variable and reduction accumulators. `Slot` is the index of the first
/// reduction of `e` in post-order.

#include <tad/core/expression.hpp>
#include <tad/core/zero.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/simd/batch.hpp>

#include <cstddef>

namespace tad::detail {

/// A value tree: the value of a node and the trees of its children.
template <class Y, class... C>
struct vals;
template <class Y>
struct vals<Y> {
  Y v;
};
template <class Y, class A>
struct vals<Y, A> {
  Y v;
  A c0;
};
template <class Y, class A, class B>
struct vals<Y, A, B> {
  Y v;
  A c0;
  B c1;
};
template <class Y, class A, class B, class C>
struct vals<Y, A, B, C> {
  Y v;
  A c0;
  B c1;
  C c2;
};

template <std::size_t K, class VT>
constexpr const auto& vchild(const VT& t) noexcept {
  if constexpr (K == 0) return t.c0;
  else if constexpr (K == 1) return t.c1;
  else return t.c2;
}

/// Reduction slot of the K-th child of a node whose first slot is `Slot`.
template <class N, std::size_t K, std::size_t Slot>
constexpr std::size_t child_slot() {
  std::size_t s = Slot;
  static_for<K>([&](auto j) { s += props<child_t<j.value, N>>::reductions; });
  return s;
}

template <class V, std::size_t Slot, class E, class Ctx>
constexpr auto forward(const E& e, const Ctx& ctx, std::size_t i) {
  using T = typename Ctx::value_type;
  if constexpr (is_leaf_v<E>) {
    if constexpr (E::is_array) {
      if constexpr (simd::is_batch_v<V>) {
        return vals<V>{simd::load(e.data + i)};
      } else {
        return vals<V>{e.data[i]};
      }
    } else if constexpr (requires { E::num; }) {
      return vals<V>{simd::splat<V>(E::template as<T>())};
    } else {
      return vals<V>{simd::splat<V>(static_cast<T>(e.val))};
    }
  } else if constexpr (props<E>::is_reduction) {
    return vals<V>{simd::splat<V>(ctx.val[Slot + props<E>::reductions - 1])};
  } else if constexpr (E::arity == 1) {
    auto a = forward<V, Slot>(e.arg, ctx, i);
    auto y = e.op.forward(a.v);
    return vals<decltype(y), decltype(a)>{y, a};
  } else if constexpr (E::arity == 2) {
    auto a = forward<V, Slot>(e.lhs, ctx, i);
    auto b = forward<V, child_slot<E, 1, Slot>()>(e.rhs, ctx, i);
    auto y = e.op.forward(a.v, b.v);
    return vals<decltype(y), decltype(a), decltype(b)>{y, a, b};
  } else {
    auto a = forward<V, Slot>(e.a, ctx, i);
    auto b = forward<V, child_slot<E, 1, Slot>()>(e.b, ctx, i);
    auto c = forward<V, child_slot<E, 2, Slot>()>(e.c, ctx, i);
    auto y = e.op.forward(a.v, b.v, c.v);
    return vals<decltype(y), decltype(a), decltype(b), decltype(c)>{y, a, b, c};
  }
}

template <std::size_t Slot, class E, class VT, class D, class Sink>
constexpr void backward(const E& e, const VT& t, const D& dy, Sink& sink) {
  if constexpr (!Sink::template wants<E>) {
    return;
  } else if constexpr (is_leaf_v<E>) {
    sink.template add_var<E>(dy);
  } else if constexpr (props<E>::is_reduction) {
    sink.template add_reduction<Slot + props<E>::reductions - 1>(dy);
  } else {
    const auto adj = [&] {
      if constexpr (E::arity == 1) return e.op.backward(dy, t.c0.v, t.v);
      else if constexpr (E::arity == 2) return e.op.backward(dy, t.c0.v, t.c1.v, t.v);
      else return e.op.backward(dy, t.c0.v, t.c1.v, t.c2.v, t.v);
    }();
    static_for<E::arity>([&](auto k) {
      constexpr std::size_t K = k.value;
      const auto& dk = adjoint_at<K>(adj);
      if constexpr (!is_zero_v<std::remove_cvref_t<decltype(dk)>>) {
        backward<child_slot<E, K, Slot>()>(child<K>(e), vchild<K>(t), dk, sink);
      }
    });
  }
}

}  // namespace tad::detail
