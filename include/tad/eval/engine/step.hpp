#pragma once
/// One element (a batch or one number) of an engine loop: each reduction of the loop's nest
/// accumulated and/or differentiated, with lets and lets deferred across loops.

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace tad::detail {

template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, class V>
TAD_INLINE void engine<E, T, W>::step(const local& l, acc<V>& a, std::size_t i) {
  constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
  constexpr int depth = K == pass_kind::backward ? A : 0;
  if constexpr (K == pass_kind::store) {
    simd::store_any(l.out + i, forward<V, 0, P::reduction_roots, site::loop>(l.e, l.ctx, i).v);
  } else {
    if constexpr (bwd) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        if constexpr (is_array_k<k.value>() && touches_here(depth, k.value, N) && !P::column_in(k.value, N))
          a.sk.var[k.value] = simd::splat<V>(-0.0);
      });
    }
    // The adjoints of the lets deferred across loops (deferred_let) in this element.
    [[maybe_unused]] std::conditional_t<has_deferred && bwd, deferred_acc<V, all_lets>, char> xacc{};
    if constexpr (has_deferred && bwd) {
      for (auto& v : xacc.adj) v = simd::splat<V>(0);
    }
    auto visit = [&]<std::size_t S>(const auto& r) TAD_INLINE_LAMBDA {
      constexpr reduction_info I = P::info[S];
      using R = std::remove_cvref_t<decltype(r)>;
      using Op = typename R::op_type;
      constexpr std::size_t AS = S + 1 - props<R>::reductions;
      using Arg = std::remove_cvref_t<decltype(r.arg)>;
      if constexpr (has_deferred && bwd && backward_here<K, A, N>(I) && holds_deferred<S>) {
        step_lets_x<K, A, N, V, S>(r, l, a, i, xacc);
      } else if constexpr ((forward_here<K, A, N>(I) || backward_here<K, A, N>(I)) && region_has_lets<Arg, site::loop>()) {
        step_lets<K, A, N, V, S>(r, l, a, i);
      } else if constexpr (backward_here<K, A, N>(I) && !Op::needs_value) {
        // The argument's adjoint is known before its value: differentiate as it is evaluated.
        const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
        const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        const auto t = forward_backward<V, AS, I.root_base, site::loop>(r.arg, l.ctx, i, da, a.sk);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, std::remove_cvref_t<decltype(r.arg)>>(a.fs[S], t);
      } else if constexpr (forward_here<K, A, N>(I) || backward_here<K, A, N>(I)) {
        const auto t = forward<V, AS, I.root_base, site::loop>(r.arg, l.ctx, i);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, std::remove_cvref_t<decltype(r.arg)>>(a.fs[S], t);
        if constexpr (backward_here<K, A, N>(I)) {
          const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
          backward<AS, I.root_base>(r.arg, t, da, a.sk);
        }
      }
    };
    visit_reductions<0>(l.e, visit);
    if constexpr (has_deferred && bwd) {
      if constexpr (finalizes<depth, N>) deferred_rules<depth, N, V>(l, a, i, xacc);
    }
    if constexpr (bwd) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        if constexpr (is_array_k<k.value>() && touches_here(depth, k.value, N) && !P::column_in(k.value, N)) {
          T* p = l.outs[k.value] + i;
          if constexpr (P::stores(depth, k.value, N)) {
            simd::store_any(p, a.sk.var[k.value]);
          } else {
            simd::store_any(p, simd::load_any<V>(p) + a.sk.var[k.value]);
          }
        }
      });
    }
  }
}

/// One element of reduction S's argument when it has lets (eval/let.hpp): the lets' bodies
/// once, then what step() does without lets, then the bodies' rules on their summed adjoints.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R>
TAD_INLINE void engine<E, T, W>::step_lets(const R& r, const local& l, acc<V>& a, std::size_t i) {
  constexpr reduction_info I = P::info[S];
  using Op = typename R::op_type;
  using Arg = std::remove_cvref_t<decltype(r.arg)>;
  using Lets = region_lets_t<Arg, site::loop>;
  constexpr std::size_t AS = S + 1 - props<R>::reductions;
  std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets assigns each before use
  const auto lc = make_let_context<V, Lets>(l.ctx, env);
  auto ls = make_let_sink<V, Lets>(a.sk);
  auto main = [&]() TAD_INLINE_LAMBDA {
    if constexpr (backward_here<K, A, N>(I) && !Op::needs_value) {
      const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
      const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
      const auto t = forward_backward<V, AS, I.root_base, site::loop>(r.arg, lc, i, da, ls);
      if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
    } else {
      const auto t = forward<V, AS, I.root_base, site::loop>(r.arg, lc, i);
      if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
      if constexpr (backward_here<K, A, N>(I)) {
        const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        backward<AS, I.root_base>(r.arg, t, da, ls);
      }
    }
  };
  with_lets<0, let_rules_if(backward_here<K, A, N>(I)), site::loop, V, AS, I.root_base>(r.arg, lc, i, ls, main);
}

/// step_lets for reduction S's argument holding a deferred let, in a backward pass: a deferred
/// let's summed adjoint goes to x (the pass that runs its rule) or is dropped (an earlier one).
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R, class X>
TAD_INLINE void engine<E, T, W>::step_lets_x(const R& r, const local& l, acc<V>& a, std::size_t i, X& x) {
  constexpr reduction_info I = P::info[S];
  using Op = typename R::op_type;
  using Arg = std::remove_cvref_t<decltype(r.arg)>;
  using Lets = region_lets_t<Arg, site::loop>;
  constexpr std::size_t AS = S + 1 - props<R>::reductions;
  constexpr int depth = K == pass_kind::backward ? A : 0;
  std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets_x assigns each before use
  const auto lc = make_let_context<V, Lets>(l.ctx, env);
  auto ls = make_let_sink<V, Lets>(a.sk);
  auto main = [&]() TAD_INLINE_LAMBDA {
    if constexpr (!Op::needs_value) {
      const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
      const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
      const auto t = forward_backward<V, AS, I.root_base, site::loop>(r.arg, lc, i, da, ls);
      if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
    } else {
      const auto t = forward<V, AS, I.root_base, site::loop>(r.arg, lc, i);
      if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
      const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
      backward<AS, I.root_base>(r.arg, t, da, ls);
    }
  };
  with_lets_x<0, defer_mode<E, W, depth, region_run::pass>, site::loop, V, AS, I.root_base>(r.arg, lc, i, ls, main, x);
}

/// The adjoints that the argument of reduction S, whose backward pass ran earlier, sends to the
/// deferred lets it holds, recomputed at element i (its adjoint is known): its code forward
/// and backward into a scratch sink, the lets' summed adjoints into x.
template <class E, class T, class W>
template <std::size_t S, class V, class R, class X>
TAD_INLINE void engine<E, T, W>::recompute_deferred(const R& r, const local& l, std::size_t i, X& x) {
  constexpr reduction_info I = P::info[S];
  using Op = typename R::op_type;
  using Arg = std::remove_cvref_t<decltype(r.arg)>;
  using Lets = region_lets_t<Arg, site::loop>;
  constexpr std::size_t AS = S + 1 - props<R>::reductions;
  sink<V, W, NR, NI, invariant_adjoints::summed> scratch;  // NOLINT(cppcoreguidelines-pro-type-member-init): zeroed below
  for (auto& v : scratch.var) v = simd::splat<V>(0);
  for (auto& v : scratch.red) v = simd::splat<V>(0);
  for (auto& v : scratch.inv) v = simd::splat<V>(0);
  std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets_x assigns each before use
  const auto lc = make_let_context<V, Lets>(l.ctx, env);
  auto ls = make_let_sink<V, Lets>(scratch);
  auto main = [&]() TAD_INLINE_LAMBDA {
    if constexpr (!Op::needs_value) {
      const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
      forward_backward<V, AS, I.root_base, site::loop>(r.arg, lc, i, da, ls);
    } else {
      const auto t = forward<V, AS, I.root_base, site::loop>(r.arg, lc, i);
      const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
      backward<AS, I.root_base>(r.arg, t, da, ls);
    }
  };
  with_lets_x<0, defer_mode<E, W, 0, region_run::recomputed>, site::loop, V, AS, I.root_base>(r.arg, lc, i, ls, main, x);
}

/// At the end of element i of the backward loop of depth D over nest N: the recomputed
/// contributions of the arguments whose passes ran earlier, then the rule of each deferred let
/// of this loop, once, on its adjoint summed over all its occurrences (its body evaluated as
/// at its occurrence in its owner, a reduction handled by this loop).
template <class E, class T, class W>
template <int D, std::size_t N, class V, class X>
TAD_INLINE void engine<E, T, W>::deferred_rules(const local& l, acc<V>& a, std::size_t i, X& x) {
  static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
    if constexpr (recomputes<D, N, S.value>) recompute_deferred<S.value, V>(slot_ref<S.value>(l.e), l, i, x);
  });
  static_for<all_lets::size>([&](auto k) TAD_INLINE_LAMBDA {
    using Let = typename all_lets::template at<k.value>;
    using Def = deferred_let<E, W, Let>;
    if constexpr (Def::deferred && Def::depth == D && Def::nest == N) {
      constexpr std::size_t O = Def::owner;
      const auto& owner = slot_ref<O>(l.e);
      constexpr std::size_t AS = O + 1 - props<std::remove_cvref_t<decltype(owner)>>::reductions;
      auto rule = [&]<std::size_t S2, std::size_t R2>(const Let& node) TAD_INLINE_LAMBDA {
        const auto t = forward<V, S2, R2, site::loop>(node.arg, l.ctx, i);
        backward<S2, R2>(node.arg, t, x.adj[k.value], a.sk);
      };
      visit_first_let<Let, site::loop, AS, P::info[O].root_base>(owner.arg, rule);
    }
  });
}

}  // namespace tad::detail
