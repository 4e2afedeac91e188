#pragma once
/// The engine's loop invariants, its flat loop over one extent class, the end of a loop (the
/// reductions' values, the invariants' and scalar variables' adjoints) and of a scaled pass.

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>

namespace tad::detail {

/// Computes the loop invariants of the reductions this loop handles (or of E, to store it).
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::compute_invariants() {
  auto eval_root = [&]<std::size_t S, std::size_t R>(const auto& node) {
    ctx_.inv[R] = forward<T, S>(node, ctx_, 0).v;
  };
  if constexpr (K == pass_kind::store) {
    visit_roots<0, P::reduction_roots>(e_, eval_root);
  } else {
    auto per_reduction = [&]<std::size_t S>(const auto& r) {
      constexpr reduction_info I = P::info[S];
      if constexpr (forward_here<K, A, N>(I) || backward_here<K, A, N>(I) || recomputed_in<K, A, N, S>()) {
        visit_roots<S + 1 - props<std::remove_cvref_t<decltype(r)>>::reductions, I.root_base>(r.arg, eval_root);
      }
    };
    visit_reductions<0>(e_, per_reduction);
  }
}

template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::loop() {
  constexpr std::size_t W_ = simd::width<T>;
  const std::size_t n = len<N>();
  compute_invariants<K, A, N>();
  std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
  for (auto& a : ab) a = make_acc<B>();
  local l{e_, ctx_, {}, out_};
  if constexpr (NC > 1) l.ctx.n = n;  // what mean's rule reads in this loop
  for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
  std::size_t i = 0;
  if constexpr (U > 1) {
    for (; i + U * W_ <= n; i += U * W_) {
      static_for<U>([&](auto u) TAD_INLINE_LAMBDA { step<K, A, N>(l, ab[u.value], i + u.value * W_); });
    }
  }
  for (; i + W_ <= n; i += W_) step<K, A, N>(l, ab[0], i);
  acc<T> at = make_acc<T>();
  for (; i < n; ++i) step<K, A, N>(l, at, i);
  if constexpr (K != pass_kind::store) finish<K, A, N>(ab, at);
}

template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::finish(std::array<acc<B>, U>& ab, acc<T>& at) {
  constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
  auto fin = [&]<std::size_t S>(const auto& r) {
    using R = std::remove_cvref_t<decltype(r)>;
    using Op = typename R::op_type;
    constexpr reduction_info I = P::info[S];
    if constexpr (forward_here<K, A, N>(I)) {
      for (std::size_t u = 1; u < U; ++u) Op::merge(ab[0].fs[S], ab[u].fs[S]);
      alignas(64) T la[simd::width<T>];
      alignas(64) T lb[simd::width<T>];
      ab[0].fs[S].a.store_aligned(la);
      ab[0].fs[S].b.store_aligned(lb);
      for (std::size_t k = 0; k < simd::width<T>; ++k) Op::merge(at.fs[S], reduction_state<T>{la[k], lb[k]});
      const auto res = Op::finish(at.fs[S], len<N>());
      ctx_.val[S] = res.value;
      ctx_.aux[S] = res.aux;
    }
    if constexpr (backward_here<K, A, N>(I) && !extents<E>::t.nest_columns[N]) {
      // Each loop invariant of the argument: its summed adjoint, propagated once (with
      // columns, once per row: finish_row).
      auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
        if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
          B s = ab[0].sk.inv[RR];
          for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
          if constexpr (K == pass_kind::scaled) stash_inv_[RR] += simd::hsum(s) + at.sk.inv[RR];
          else backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
        }
      };
      visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push);
    }
    if constexpr (backward_here<K, A, N>(I) && extents<E>::t.nest_columns[N]) {
      // With columns: the invariants without a column, once (finish_row took the others).
      auto push_free = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
        using Node = std::remove_cvref_t<decltype(node)>;
        if constexpr (W::template reached<Node> && !props<Node>::has_column) {
          B s = ab[0].sk.inv[RR];
          for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
          backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
        }
      };
      visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push_free);
    }
    if constexpr (bwd && I.wants) {
      B s = ab[0].sk.red[S];
      for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.red[S];
      (K == pass_kind::scaled ? stash_red_[S] : ctx_.adj[S]) += simd::hsum(s) + at.sk.red[S];
    }
  };
  visit_reductions<0>(e_, fin);
  if constexpr (bwd) {
    static_for<NV>([&](auto k) {
      if constexpr (!is_array_k<k.value>()) {
        B s = ab[0].sk.var[k.value];
        for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.var[k.value];
        (K == pass_kind::scaled ? stash_var_[k.value] : scalar_grad_[k.value]) += simd::hsum(s) + at.sk.var[k.value];
      }
    });
  }
}

/// After a scaled pass: multiply what it produced with a unit adjoint by the true adjoint.
template <class E, class T, class W>
TAD_AS_IN_CLASS void engine<E, T, W>::apply_scale() {
  constexpr std::size_t S0 = P::scaled_slot;
  const T a = ctx_.adj[S0];
  static_for<NV>([&](auto k) {
    if constexpr (!is_array_k<k.value>()) {
      if constexpr (P::vars[S0].test(k.value)) scalar_grad_[k.value] += a * stash_var_[k.value];
    } else if constexpr (P::touches(0, k.value)) {
      T* g = outs_[k.value];
      const std::size_t n = sizes_[k.value];
      const B va(a);
      std::size_t i = 0;
      for (; i + simd::width<T> <= n; i += simd::width<T>) simd::store(g + i, simd::load(g + i) * va);
      for (; i < n; ++i) g[i] *= a;
    }
  });
  for (std::size_t s = P::scaled_first; s < S0; ++s) ctx_.adj[s] += a * stash_red_[s];
  auto roots = [&]<std::size_t S>(const auto& r) {
    if constexpr (S == S0) {
      auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
        if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) backward_scalar<SS>(node, a * stash_inv_[RR]);
      };
      visit_roots<S + 1 - props<std::remove_cvref_t<decltype(r)>>::reductions, P::info[S].root_base>(r.arg, push);
    }
  };
  visit_reductions<0>(e_, roots);
}

}  // namespace tad::detail
