#pragma once
/// The elementwise forward and backward recursion shared by every pass.
///
/// `forward<V, Slot>(e, ctx, i)` evaluates `e` at element i (a SIMD batch or one scalar, per V)
/// and returns a value tree: the node's value and its children's trees, kept in registers so the
/// backward walk reuses them instead of recomputing. Reductions met on the way are loop
/// invariants read from the context. `backward<Slot>(e, tree, dy, sink)` pushes the adjoint `dy`
/// down, into the sink's variable and reduction accumulators. `Slot` is the index of the first
/// reduction of `e` in post-order.

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/contract.hpp>
#include <tad/eval/indexing.hpp>
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

/// Does the context (or sink) X hold the let E (eval/let.hpp)?
template <class X, class E>
constexpr bool let_in() {
  if constexpr (requires { X::template has_let<E>; }) return X::template has_let<E>; else return false;
}

/// `At` (core/let.hpp `site`): site::loop when e sits inside an elementwise loop, where loop
/// invariants are read from `ctx.inv[Root ...]` instead of being computed.
template <class V, std::size_t Slot, std::size_t Root = 0, site At = site::scalar, class E, class Ctx>
TAD_INLINE constexpr auto forward(const E& e, const Ctx& ctx, std::size_t i) {
  using T = typename Ctx::value_type;
  if constexpr (At == site::loop && props<E>::is_root) {
    return vals<V>{simd::splat<V>(ctx.inv[Root])};
  } else if constexpr (is_leaf_v<E>) {
    if constexpr (is_column_v<E>) {
      return vals<V>{simd::splat<V>(static_cast<T>(e.val))};  // the row's element, set per row
    } else if constexpr (requires { typename Ctx::wrt; } && E::is_variable && !E::is_array) {
      if constexpr (Ctx::wrt::template index<E::name> < Ctx::wrt::size) {
        return vals<V>{simd::splat<V>(ctx.wval[Ctx::wrt::template index<E::name>])};
      } else {
        return vals<V>{simd::splat<V>(static_cast<T>(e.value()))};
      }
    } else if constexpr (E::is_array) {
      if constexpr (is_gathered_v<E>) {
        return vals<V>{simd::load_strided<V>(e.data + i * e.stride, e.stride)};  // a strided vector
      } else if constexpr (is_col_major_v<E>) {
        return vals<V>{simd::load_strided<V>(e.data + i * e.ld, e.ld)};  // a row of a column-major matrix
      } else if constexpr (simd::is_batch_v<V>) {
        return vals<V>{simd::load(e.data + i)};
      } else {
        return vals<V>{e.data[i]};
      }
    } else if constexpr (requires { E::is_length; }) {
      return vals<V>{simd::splat<V>(static_cast<T>(e.n))};
    } else if constexpr (requires { E::num; }) {
      return vals<V>{simd::splat<V>(E::template as<T>())};
    } else if constexpr (At == site::loop) {
      return vals<V>{simd::splat<V>(static_cast<T>(e.val))};  // frozen before the loop
    } else {
      return vals<V>{simd::splat<V>(static_cast<T>(e.value()))};
    }
  } else if constexpr (props<E>::is_point && !props<E>::is_column_point && simd::is_batch_v<V>) {
    return vals<V>{simd::load(static_cast<const T*>(e.op.rows))};  // a block of rows (engine::point_loop)
  } else if constexpr (props<E>::is_reduction) {
    return vals<V>{simd::splat<V>(ctx.val[Slot + props<E>::reductions - 1])};
  } else if constexpr (is_let_node_v<E>) {
    // An occurrence of a let: its value from the region's environment (eval/let.hpp); outside
    // one (a store, a value), the body itself.
    if constexpr (let_in<Ctx, E>()) {
      return vals<V>{ctx.template let_value<E>()};
    } else {
      auto a = forward<V, Slot, Root, At>(e.arg, ctx, i);
      return vals<decltype(a.v), decltype(a)>{a.v, a};
    }
  } else if constexpr (E::arity == 1) {
    auto a = forward<V, Slot, Root, At>(e.arg, ctx, i);
    auto y = e.op.forward(a.v);
    return vals<decltype(y), decltype(a)>{y, a};
  } else if constexpr (E::arity == 2) {
    auto a = forward<V, Slot, Root, At>(e.lhs, ctx, i);
    auto b = forward<V, child_slot<E, 1, Slot>(), child_root<E, 1, Root>(), At>(e.rhs, ctx, i);
    auto y = combine(e, a, b);
    return vals<decltype(y), decltype(a), decltype(b)>{y, a, b};
  } else {
    auto a = forward<V, Slot, Root, At>(e.a, ctx, i);
    auto b = forward<V, child_slot<E, 1, Slot>(), child_root<E, 1, Root>(), At>(e.b, ctx, i);
    auto c = forward<V, child_slot<E, 2, Slot>(), child_root<E, 2, Root>(), At>(e.c, ctx, i);
    auto y = e.op.forward(a.v, b.v, c.v);
    return vals<decltype(y), decltype(a), decltype(b), decltype(c)>{y, a, b, c};
  }
}

/// True if backward() adds an adjoint of C straight into one of the sink's running sums (a
/// scalar variable's gradient, a reduction's adjoint, a deferred loop invariant's adjoint).
template <class C, class Sink>
constexpr bool accumulates_directly() {
  if constexpr (Sink::defers && props<C>::is_root) return true;
  else if constexpr (is_leaf_v<C>) return !C::is_array;
  else return props<C>::is_reduction;
}

/// `a * b` with its own rule (not overridden): its adjoints are the products `dy * b` and
/// `dy * a` (contract.hpp).
template <class E, class VT, class D>
constexpr bool product_backward() {
  if constexpr (is_leaf_v<E> || !contractible_v<D> || !requires(const VT& t) { t.c1.v; }) return false;
  else if constexpr (!std::is_same_v<typename E::op_type, mul_op>) return false;
  else return std::is_same_v<decltype(VT::c0.v), D> && std::is_same_v<decltype(VT::c1.v), D>;
}

/// With a sink that `defers` (inside a loop), a loop invariant's adjoint is summed in the sink
/// and propagated once after the loop.
template <std::size_t Slot, std::size_t Root = 0, class E, class VT, class D, class Sink>
TAD_INLINE constexpr void backward(const E& e, const VT& t, const D& dy, Sink& sink) {
  if constexpr (!Sink::template wants<E>) {
    return;
  } else if constexpr (Sink::defers && props<E>::is_root) {
    sink.template add_invariant<Root>(dy);
  } else if constexpr (is_let_node_v<E>) {
    // An occurrence of a let: its adjoint is summed; the body's rule runs once on the sum.
    if constexpr (let_in<Sink, std::remove_cvref_t<E>>()) sink.template add_let<E>(dy);
    else backward<Slot, Root>(e.arg, t.c0, dy, sink);
  } else if constexpr (is_leaf_v<E>) {
    sink.template add_var<E>(dy);
  } else if constexpr (props<E>::is_reduction) {
    sink.template add_reduction<Slot + props<E>::reductions - 1>(dy);
  } else if constexpr (product_backward<E, VT, D>()) {
    // An adjoint that only gets added to a running sum is passed unmultiplied, to be added
    // with one fused multiply-add.
    static_for<2>([&](auto k) TAD_INLINE_LAMBDA {
      constexpr std::size_t K = k.value;
      constexpr std::size_t S = child_slot<E, K, Slot>(), R = child_root<E, K, Root>();
      const D& other = vchild<1 - K>(t).v;
      if constexpr (accumulates_directly<child_t<K, E>, Sink>()) {
        backward<S, R>(child<K>(e), vchild<K>(t), product_adjoint<D>{dy, other}, sink);
      } else {
        backward<S, R>(child<K>(e), vchild<K>(t), D(dy * other), sink);
      }
    });
  } else {
    const auto adj = [&]() TAD_INLINE_LAMBDA {
      if constexpr (E::arity == 1) return e.op.backward(dy, t.c0.v, t.v);
      else if constexpr (E::arity == 2) return e.op.backward(dy, t.c0.v, t.c1.v, t.v);
      else return e.op.backward(dy, t.c0.v, t.c1.v, t.c2.v, t.v);
    }();
    static_for<E::arity>([&](auto k) TAD_INLINE_LAMBDA {
      constexpr std::size_t K = k.value;
      const auto& dk = adjoint_at<K>(adj);
      if constexpr (!is_zero_v<std::remove_cvref_t<decltype(dk)>>) {
        backward<child_slot<E, K, Slot>(), child_root<E, K, Root>()>(child<K>(e), vchild<K>(t), dk, sink);
      }
    });
  }
}

/// The value tree of e (all of it, or for sums and differences just their value), with the
/// adjoint dy (known beforehand) pushed down. Below sums and
/// differences, whose backward rule needs no values, each term is evaluated and
/// differentiated before the next one starts, so only one term's value tree is live at a time.
template <class E>
constexpr bool additive_node() {
  if constexpr (is_leaf_v<E>) return false;
  else return op_linearity<typename E::op_type>() == linearity::additive;
}

template <class V, std::size_t Slot, std::size_t Root, site At, class E, class Ctx, class D, class Sink>
TAD_INLINE constexpr auto forward_backward(const E& e, const Ctx& ctx, std::size_t i, const D& dy, Sink& sink) {
  if constexpr (!additive_node<E>() || (At == site::loop && props<E>::is_root) || !Sink::template wants<E>) {
    const auto t = forward<V, Slot, Root, At>(e, ctx, i);
    backward<Slot, Root>(e, t, dy, sink);
    return t;
  } else if constexpr (E::arity == 1) {
    const auto da = e.op.backward(dy, dy, dy);  // an additive rule reads no values
    const auto y = e.op.forward(forward_backward<V, Slot, Root, At>(e.arg, ctx, i, da, sink).v);
    return vals<decltype(y)>{y};
  } else {
    const auto adj = e.op.backward(dy, dy, dy, dy);
    constexpr std::size_t S1 = child_slot<E, 1, Slot>(), R1 = child_root<E, 1, Root>();
    const auto a = [&]() TAD_INLINE_LAMBDA {
      if constexpr (Sink::template wants<std::remove_cvref_t<decltype(e.lhs)>>)
        return forward_backward<V, Slot, Root, At>(e.lhs, ctx, i, adj.a0, sink);
      else return forward<V, Slot, Root, At>(e.lhs, ctx, i);
    }();
    const auto b = [&]() TAD_INLINE_LAMBDA {
      if constexpr (Sink::template wants<std::remove_cvref_t<decltype(e.rhs)>>)
        return forward_backward<V, S1, R1, At>(e.rhs, ctx, i, adj.a1, sink);
      else return forward<V, S1, R1, At>(e.rhs, ctx, i);
    }();
    const auto y = combine(e, a, b);
    return vals<decltype(y)>{y};
  }
}

/// Calls `f.template operator()<Slot, Root>(node)` for every maximal loop invariant of the
/// array expression e.
template <std::size_t Slot, std::size_t Root, class E, class F>
TAD_INLINE constexpr void visit_roots(const E& e, F& f) {
  if constexpr (props<E>::is_root) {
    f.template operator()<Slot, Root>(e);
  } else if constexpr (!is_leaf_v<E> && !props<E>::is_reduction && props<E>::roots > 0) {  // (none below: no walk)
    static_for<E::arity>([&](auto k) TAD_INLINE_LAMBDA {
      visit_roots<child_slot<E, k.value, Slot>(), child_root<E, k.value, Root>()>(child<k.value>(e), f);
    });
  }
}

}  // namespace tad::detail
