#pragma once
/// The engine's points along the rows (`sum(X * w, axis<1>)`): sweeps over a row, picks, and
/// the loop over blocks of rows (doc/design.md "Axis points").

#include <tad/eval/engine/declaration.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace tad::detail {

/// One element (V: a batch or one T) of the argument of axis point S at column j of the
/// current row: accumulated (K forward) or differentiated with the row's adjoint (K backward),
/// its array variables' adjoints added to their gradients (a matrix variable's row, a row
/// vector's columns).
/// M (point_mode) .shift: the first of a shifted op's two forward sweeps (its shift_op's:
/// logsumexp's maximum). .stash: the second keeps its terms in the gradient of the argument
/// (plan::stash_var). .lanes: a point along axis 0 (down_loop), whose value, auxiliary number and adjoint differ
/// per lane (per column), read from *ln.
/// .keep_rows: the adjoints of the row vectors (rank-1 variables) stay in a's sink, neither reset
/// nor stored: block_backward sums them over a block's rows.
template <class E, class T, class W>
template <pass_kind K, std::size_t S, class V, point_mode M>
TAD_INLINE void engine<E, T, W>::point_step(const local& l, acc<V>& a, std::size_t j, const lane_numbers* ln) {
  constexpr bool bwd = K == pass_kind::backward;
  constexpr reduction_info I = P::info[S];
  if constexpr (bwd) {
    static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
      if constexpr (is_array_k<k.value>() && P::vars[S].test(k.value) && !(M.keep_rows && row_var_k<k.value>()))
        a.sk.var[k.value] = simd::splat<V>(-0.0);
    });
  }
  auto visit = [&]<std::size_t SS>(const auto& r) TAD_INLINE_LAMBDA {
    if constexpr (SS == S) {
      using R = std::remove_cvref_t<decltype(r)>;
      using Op = typename R::op_type;
      using Arg = std::remove_cvref_t<decltype(r.arg)>;
      // c: the context (with lets, their values too), sk: the sink (with lets, their adjoints).
      auto body = [&](const auto& c, [[maybe_unused]] auto& sk) TAD_INLINE_LAMBDA {
        if constexpr (!bwd) {
          const auto t = forward<V, S, I.root_base, site::loop>(r.arg, c, j);
          if constexpr (M.shift) Op::shift_op::accumulate(a.fs[S], t.v);
          else if constexpr (M.stash) simd::store_any(l.outs[P::stash_var[S]] + j, Op::accumulate_kept(a.fs[S], t.v));
          else accumulate_tree<Op, Arg>(a.fs[S], t);
        } else if constexpr (M.lanes && !Op::needs_value) {
          const V da = Op::backward(simd::load_any<V>(ln->adj), simd::splat<V>(0), simd::load_any<V>(ln->value),
                                    simd::load_any<V>(ln->aux), ln->n);
          forward_backward<V, S, I.root_base, site::loop>(r.arg, c, j, da, sk);
        } else if constexpr (M.lanes) {
          const auto t = forward<V, S, I.root_base, site::loop>(r.arg, c, j);
          const V da = Op::backward(simd::load_any<V>(ln->adj), t.v, simd::load_any<V>(ln->value),
                                    simd::load_any<V>(ln->aux), ln->n);
          backward<S, I.root_base>(r.arg, t, da, sk);
        } else if constexpr (!Op::needs_value) {
          const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
          forward_backward<V, S, I.root_base, site::loop>(r.arg, c, j, da, sk);
        } else {
          const auto t = forward<V, S, I.root_base, site::loop>(r.arg, c, j);
          const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
          backward<S, I.root_base>(r.arg, t, da, sk);
        }
      };
      if constexpr (region_has_lets<Arg, site::loop>()) {
        // A let inside the argument is shared per element of each sweep, as in step_lets:
        // its body once, the argument's code, then the body's rule on the summed adjoint.
        using Lets = region_lets_t<Arg, site::loop>;
        std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets assigns each before use
        const auto lc = make_let_context<V, Lets>(l.ctx, env);
        auto ls = make_let_sink<V, Lets>(a.sk);
        auto main = [&]() TAD_INLINE_LAMBDA { body(lc, ls); };
        with_lets<0, let_rules_if(bwd), site::loop, V, S, I.root_base>(r.arg, lc, j, ls, main);
      } else {
        body(l.ctx, a.sk);
      }
    }
  };
  visit_reductions<0>(l.e, visit);
  if constexpr (bwd) {
    static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
      if constexpr (is_array_k<k.value>() && P::vars[S].test(k.value) && !(M.keep_rows && row_var_k<k.value>())) {
        T* p = l.outs[k.value] + j;
        if constexpr (P::writes[k.value].how == P::first_write::point_store && P::writes[k.value].point == S)
          simd::store_any(p, a.sk.var[k.value]);
        else simd::store_any(p, simd::load_any<V>(p) + a.sk.var[k.value]);
      }
    });
  }
}

/// A sweep of axis point S over the current row (cols elements): today's loop body, U
/// batches, one batch, then single elements. Forward: the row's reduction, into
/// l.ctx.val[S] and aux[S].
///
/// A shifted op (shifted_reduction: logsumexp_op) sweeps twice forward: .shift, the shift (its
/// shift_op's: the maximum, 0 if not finite), which then sits in every state's b while the
/// second sweep sums.
///
/// .stash (plan::stash_var): the second forward sweep stores its terms exp(x - shift) in the
/// argument's gradient row and leaves the shift in l.ctx.aux[S]; the backward sweep scales
/// that row by kept_scale, one number per row (the argument is the variable itself).
template <class E, class T, class W>
template <pass_kind K, std::size_t S, point_mode M>
TAD_INLINE void engine<E, T, W>::sweep(local& l, std::array<acc<B>, U>& ab, acc<T>& at, std::size_t cols) {
  constexpr std::size_t W_ = simd::width<T>;
  using Op = typename slot_node_t<E, S>::op_type;
  if constexpr (K == pass_kind::backward && M.stash) {
    T* p = l.outs[P::stash_var[S]];
    const T c = Op::kept_scale(l.ctx.adj[S], l.ctx.val[S], l.ctx.aux[S]);
    const B cb = simd::splat<B>(c);
    std::size_t j = 0;
    for (; j + W_ <= cols; j += W_) simd::store_any(p + j, simd::load_any<B>(p + j) * cb);
    for (; j < cols; ++j) p[j] *= c;
    return;
  }
  if constexpr (K == pass_kind::forward && M.shift) {
    for (auto& a : ab) a.fs[S] = Op::shift_op::template init<B>();
    at.fs[S] = Op::shift_op::template init<T>();
  } else if constexpr (K == pass_kind::forward && shifted_reduction<Op>) {
    sweep<K, S, point_mode{.shift = true}>(l, ab, at, cols);
    const T m = l.ctx.val[S];
    for (auto& a : ab) a.fs[S] = reduction_state<B>{simd::splat<B>(0), simd::splat<B>(m)};
    at.fs[S] = reduction_state<T>{T(0), m};
  } else if constexpr (K == pass_kind::forward) {
    for (auto& a : ab) a.fs[S] = Op::template init<B>();
    at.fs[S] = Op::template init<T>();
  }
  std::size_t j = 0;
  if constexpr (U > 1) {
    for (; j + U * W_ <= cols; j += U * W_) {
      static_for<U>([&](auto u) TAD_INLINE_LAMBDA { point_step<K, S, B, M>(l, ab[u.value], j + u.value * W_); });
    }
  }
  for (; j + W_ <= cols; j += W_) point_step<K, S, B, M>(l, ab[0], j);
  for (; j < cols; ++j) point_step<K, S, T, M>(l, at, j);
  if constexpr (K == pass_kind::forward && M.shift) {
    using Shift = typename Op::shift_op;
    l.ctx.val[S] = Shift::finish(merged_state<Shift, S>(ab, at), cols).value;
  } else if constexpr (K == pass_kind::forward) {
    const auto res = Op::finish(merged_state<Op, S>(ab, at), cols);
    l.ctx.val[S] = res.value;
    l.ctx.aux[S] = res.aux;
    if constexpr (M.stash) l.ctx.aux[S] = at.fs[S].b;  // the shift, for kept_scale
  }
}

/// The "sweep" of a pick over row r: its one element, at column labels[r] (check_labels has
/// checked it), forward into l.ctx.val[S], backward seeded with the row's adjoint.
template <class E, class T, class W>
template <pass_kind K, std::size_t S>
TAD_INLINE void engine<E, T, W>::pick_sweep(local& l, acc<T>& at, std::size_t r) {
  const auto j = static_cast<std::size_t>(slot_ref<S>(l.e).op.labels[r]);
  if constexpr (K == pass_kind::forward) at.fs[S] = slot_op_t<S>::template init<T>();
  point_step<K, S, T>(l, at, j);
  if constexpr (K == pass_kind::forward) {
    l.ctx.val[S] = at.fs[S].a;
    l.ctx.aux[S] = T(0);
  }
}

/// The per-lane states of reduction S in ab and at, merged into one (by one horizontal sum
/// where Op merges_by_sum).
template <class E, class T, class W>
template <class Op, std::size_t S>
TAD_INLINE reduction_state<T> engine<E, T, W>::merged_state(std::array<acc<B>, U>& ab, const acc<T>& at) {
  for (std::size_t u = 1; u < U; ++u) Op::merge(ab[0].fs[S], ab[u].fs[S]);
  if constexpr (merges_by_sum<Op>) {
    return {simd::hsum(ab[0].fs[S].a) + at.fs[S].a, T(0)};
  }
  alignas(64) T la[simd::width<T>];
  alignas(64) T lb[simd::width<T>];
  ab[0].fs[S].a.store_aligned(la);
  ab[0].fs[S].b.store_aligned(lb);
  reduction_state<T> s = at.fs[S];
  for (std::size_t k = 0; k < simd::width<T>; ++k) Op::merge(s, reduction_state<T>{la[k], lb[k]});
  return s;
}

/// The loop of a nest whose code reads axis points (`mean(softplus(sum(X * w, axis<1>)))`).
/// Per block of W rows (W the SIMD width): each point's forward sweep over each row of its
/// argument (the row's value, into the block's buffer pv), the nest's own code at those W
/// elements as one batch (it accumulates the nest's reductions and, in a backward pass,
/// pushes the points' adjoints, one per row), then each point's backward sweep over each
/// row, seeded with its row's adjoint. The remaining rows run the same one at a time (the
/// nest's code on one T). A block's rows (W x cols elements) stay in L1 between the sweeps,
/// so X is read from memory once per pass. Scalar variables' and loop invariants' adjoints
/// of the sweeps sum over all rows, as in loop().
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::point_loop() {
  constexpr std::size_t W_ = simd::width<T>;
  constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
  constexpr int depth = K == pass_kind::backward ? A : 0;
  const std::size_t rows = len<N>();
  compute_invariants<K, A, N>();
  static_for<NR>([&](auto S) {
    if constexpr (point_forward<K, A, N, S.value>()) {
      auto eval_root = [&]<std::size_t SS, std::size_t R>(const auto& node) { ctx_.inv[R] = forward<T, SS>(node, ctx_, 0).v; };
      auto per_point = [&]<std::size_t PS>(const auto& red) {
        if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, eval_root);
      };
      visit_reductions<0>(e_, per_point);
    }
  });
  if constexpr (bwd) zero_fill<depth, N>();
  std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
  for (auto& a : ab) a = make_acc<B>();
  acc<T> pt = make_acc<T>();  // the sweeps' single elements
  acc<T> at = make_acc<T>();  // the nest's own code on single rows
  local l{e_, ctx_, {}, out_};
  for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
  // Per point: a block's values and adjoints, one per row.
  alignas(64) std::array<std::array<T, W_>, NR> pv{}, pa{};
  // ... and the auxiliary numbers of the points whose rules read them (max's count of maxima).
  alignas(64) std::array<std::array<T, W_>, NR> px{};
  static_for<NR>([&](auto S) {
    if constexpr (point_forward<K, A, N, S.value>()) slot_ref<S.value>(l.e).op.rows = pv[S.value].data();
  });
  // Row r of every point of this nest: the argument's leaves, its matrix variables' gradients.
  auto to_row = [&]<std::size_t S>(std::size_t r) TAD_INLINE_LAMBDA {
    constexpr std::size_t In = P::info[S].nest;
    const std::size_t cols = cols_[In];
    rebase_rows<In, 0>(l.e, e_, r * cols, r);
    if constexpr (point_backward<K, A, N, S>()) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        using X = std::tuple_element_t<k.value, typename W::types>;
        if constexpr (X::is_array && leaf_rank<X>() == 2 && P::vars[S].test(k.value))
          l.outs[k.value] = outs_[k.value] + r * cols;
      });
    }
    l.ctx.n = cols;  // what mean's rule reads in the sweeps
    return cols;
  };
  auto forward_sweeps = [&](std::size_t r) TAD_INLINE_LAMBDA {
    static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
      if constexpr (point_forward<K, A, N, S.value>()) {
        const std::size_t cols = to_row.template operator()<S.value>(r);
        if constexpr (picks<S.value>) pick_sweep<pass_kind::forward, S.value>(l, pt, r);
        else sweep<pass_kind::forward, S.value, point_mode{.stash = stash_here<K, A, N, S.value>}>(l, ab, pt, cols);
      }
    });
  };
  auto backward_sweeps = [&](std::size_t r) TAD_INLINE_LAMBDA {
    static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
      if constexpr (point_backward<K, A, N, S.value>()) {
        const std::size_t cols = to_row.template operator()<S.value>(r);
        if constexpr (picks<S.value>) pick_sweep<pass_kind::backward, S.value>(l, pt, r);
        else sweep<pass_kind::backward, S.value, point_mode{.stash = stash_here<K, A, N, S.value>}>(l, ab, pt, cols);
      }
    });
  };
  // A backward pass sweeps a block of rows forward, runs the nest's code on it, then sweeps it
  // backward: the block must stay in L1 in between. Rows too long for that run one at a time
  // (each row's sweeps back to back, as a hand-written loop does).
  std::size_t widest = 0;
  static_for<NR>([&](auto S) {
    if constexpr (point_backward<K, A, N, S.value>()) widest = std::max(widest, cols_[P::info[S.value].nest]);
  });
  const bool blocks = widest * W_ * sizeof(T) <= TAD_POINT_BLOCK_BYTES;
  // Does a point's block run its backward sweeps column by column (block_backward)?
  constexpr bool any_block_columns = [] {
    bool any = false;
    static_for<NR>([&](auto S) { any = any || (point_backward<K, A, N, S.value>() && block_columns_ok<S.value>()); });
    return any;
  }();
  std::size_t r = 0;
  for (; blocks && r + W_ <= rows; r += W_) {
    for (std::size_t k = 0; k < W_; ++k) {
      forward_sweeps(r + k);
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_forward<K, A, N, S.value>()) pv[S.value][k] = l.ctx.val[S.value];
        if constexpr (point_backward<K, A, N, S.value>() && slot_op_t<S.value>::needs_value) px[S.value][k] = l.ctx.aux[S.value];
      });
    }
    l.ctx.n = rows;
    step<K, A, N>(l, ab[0], r);
    if constexpr (bwd) {
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_backward<K, A, N, S.value>()) {
          ab[0].sk.red[S.value].store_aligned(pa[S.value].data());
          ab[0].sk.red[S.value] = simd::splat<B>(0);
        }
      });
      if constexpr (any_block_columns) {
        block_backward<K, A, N>(l, ab, pt, r, to_row, pv, pa, px);
      } else {
        for (std::size_t k = 0; k < W_; ++k) {
          static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
            if constexpr (point_backward<K, A, N, S.value>()) {
              l.ctx.val[S.value] = pv[S.value][k];
              l.ctx.adj[S.value] = pa[S.value][k];
              if constexpr (slot_op_t<S.value>::needs_value) l.ctx.aux[S.value] = px[S.value][k];
            }
          });
          backward_sweeps(r + k);
        }
      }
    }
  }
  for (; r < rows; ++r) {
    forward_sweeps(r);
    l.ctx.n = rows;
    step<K, A, N>(l, at, r);
    if constexpr (bwd) {
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_backward<K, A, N, S.value>()) {
          l.ctx.adj[S.value] = at.sk.red[S.value];
          at.sk.red[S.value] = T(0);
        }
      });
      backward_sweeps(r);
    }
  }
  if constexpr (K != pass_kind::store) {
    // The sweeps' adjoints of scalar variables join the nest's own (finish sums both), those
    // of the points' loop invariants are propagated once.
    static_for<NV>([&](auto k) {
      if constexpr (!is_array_k<k.value>()) at.sk.var[k.value] += pt.sk.var[k.value];
    });
    finish<K, A, N>(ab, at);
    static_for<NR>([&](auto S) {
      if constexpr (point_backward<K, A, N, S.value>()) {
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
            B s = ab[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
            backward_scalar<SS>(node, simd::hsum(s) + pt.sk.inv[RR]);
          }
        };
        auto per_point = [&]<std::size_t PS>(const auto& red) {
          if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, push);
        };
        visit_reductions<0>(e_, per_point);
      }
    });
  }
}

}  // namespace tad::detail
