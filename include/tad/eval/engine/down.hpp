#pragma once
/// The engine's points down the columns (`sum(X, axis<0>)`): sweeps down the rows of a block of
/// columns, and the loop over those blocks (doc/design.md "Points down the columns").

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace tad::detail {

/// Op's finish of each lane of s (a reduction of n elements per lane) into value[k], aux[k].
template <class E, class T, class W>
template <class Op, class V>
TAD_INLINE void engine<E, T, W>::finish_lanes(const reduction_state<V>& s, std::size_t n, T* value, T* aux) {
  if constexpr (simd::is_batch_v<V>) {
    alignas(64) T la[simd::width<T>];
    alignas(64) T lb[simd::width<T>];
    s.a.store_aligned(la);
    s.b.store_aligned(lb);
    for (std::size_t k = 0; k < simd::width<T>; ++k) {
      const auto res = Op::finish(reduction_state<T>{la[k], lb[k]}, n);
      value[k] = res.value;
      aux[k] = res.aux;
    }
  } else {
    const auto res = Op::finish(s, n);
    *value = res.value;
    *aux = res.aux;
  }
}

/// A sweep of point S along axis 0 down the rows of its argument at NB batches of columns from
/// column j (V one T: one column), each batch in its own accumulator a[u]: the lanes are
/// columns. Forward: each column's value and auxiliary number, into lb (a shifted op,
/// logsumexp, sweeps twice: the shift per column, then the shifted sum). Backward: each
/// element's adjoint from its column's numbers in lb, added to the argument's gradients (a
/// matrix variable's row r, a row vector's columns).
template <class E, class T, class W>
template <pass_kind D, std::size_t S, class V, std::size_t NB, std::size_t L>
TAD_INLINE void engine<E, T, W>::down_sweep(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb) {
  using Op = slot_op_t<S>;
  constexpr std::size_t In = P::info[S].nest;
  constexpr std::size_t WV = simd::is_batch_v<V> ? simd::width<T> : 1;
  const std::size_t rows = rows_[In], cols = cols_[In];
  auto to_row = [&](std::size_t r) TAD_INLINE_LAMBDA {
    rebase_rows<In, 0>(l.e, e_, r * cols, r);
    if constexpr (D == pass_kind::backward) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        using Var = std::tuple_element_t<k.value, typename W::types>;
        if constexpr (Var::is_array && leaf_rank<Var>() == 2 && P::vars[S].test(k.value)) l.outs[k.value] = outs_[k.value] + r * cols;
      });
    }
  };
  if constexpr (D == pass_kind::forward) {
    if constexpr (shifted_reduction<Op>) {
      using Shift = typename Op::shift_op;
      for (std::size_t u = 0; u < NB; ++u) a[u].fs[S] = Shift::template init<V>();
      for (std::size_t r = 0; r < rows; ++r) {
        to_row(r);
        static_for<NB>([&](auto u) TAD_INLINE_LAMBDA { point_step<D, S, V, point_mode{.shift = true}>(l, a[u.value], j + u.value * WV); });
      }
      for (std::size_t u = 0; u < NB; ++u) {
        T* shift = lb.aux[S].data() + u * WV;  // the shifts, until the second sweep's state holds them
        finish_lanes<Shift>(a[u].fs[S], rows, shift, lb.value[S].data() + u * WV);
        a[u].fs[S] = reduction_state<V>{simd::splat<V>(0), simd::load_any<V>(shift)};
      }
    } else {
      for (std::size_t u = 0; u < NB; ++u) a[u].fs[S] = Op::template init<V>();
    }
    for (std::size_t r = 0; r < rows; ++r) {
      to_row(r);
      static_for<NB>([&](auto u) TAD_INLINE_LAMBDA { point_step<D, S, V>(l, a[u.value], j + u.value * WV); });
    }
    for (std::size_t u = 0; u < NB; ++u)
      finish_lanes<Op>(a[u].fs[S], rows, lb.value[S].data() + u * WV, lb.aux[S].data() + u * WV);
  } else {
    std::array<lane_numbers, NB> ln;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (std::size_t u = 0; u < NB; ++u)
      ln[u] = {lb.value[S].data() + u * WV, lb.aux[S].data() + u * WV, lb.adj[S].data() + u * WV, rows};
    for (std::size_t r = 0; r < rows; ++r) {
      to_row(r);
      static_for<NB>([&](auto u) TAD_INLINE_LAMBDA {
        point_step<D, S, V, point_mode{.lanes = true}>(l, a[u.value], j + u.value * WV, &ln[u.value]);
      });
    }
  }
}

/// One block of NB batches of columns from column j (V one T: one column) of a nest whose code
/// reads points along axis 0: their forward sweeps, the nest's own code at those columns (a
/// vector nest: once; a matrix nest, where a point meets the matrix as a row: once per row),
/// the points' adjoints per column, their backward sweeps.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, class V, std::size_t NB, std::size_t L>
TAD_INLINE void engine<E, T, W>::down_block(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb) {
  constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
  constexpr int depth = K == pass_kind::backward ? A : 0;
  constexpr std::size_t WV = simd::is_batch_v<V> ? simd::width<T> : 1;
  static_for<NR>([&](auto S) {
    if constexpr (point_forward<K, A, N, S.value>()) down_sweep<pass_kind::forward, S.value, V, NB>(l, a, j, lb);
  });
  // The nest's own code: each point's values read from lb (a batch through the node's pointer,
  // one T from the context).
  auto own = [&]() TAD_INLINE_LAMBDA {
    static_for<NB>([&](auto u) TAD_INLINE_LAMBDA {
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_forward<K, A, N, S.value>()) {
          if constexpr (simd::is_batch_v<V>) slot_ref<S.value>(l.e).op.rows = lb.value[S.value].data() + u.value * WV;
          else l.ctx.val[S.value] = lb.value[S.value][0];
        }
      });
      step<K, A, N>(l, a[u.value], j + u.value * WV);
    });
  };
  if constexpr (extents<E>::t.nest_row[N] == no_class) {
    l.ctx.n = cols_[N];  // what mean's rule reads in this code
    own();
  } else {
    const std::size_t rows = rows_[N], cols = cols_[N];
    l.ctx.n = rows * cols;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t offset = r * cols;
      rebase_rows<N, 0>(l.e, e_, offset, r);
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        if constexpr (bwd && is_array_k<k.value>() && !P::row_in(k.value, N) && touches_here(depth, k.value, N))
          l.outs[k.value] = outs_[k.value] + offset;
      });
      if constexpr (K == pass_kind::store) l.out = out_ + offset;
      own();
    }
  }
  if constexpr (bwd) {
    static_for<NR>([&](auto S) {
      if constexpr (point_backward<K, A, N, S.value>()) {
        for (std::size_t u = 0; u < NB; ++u) {
          simd::store_any(lb.adj[S.value].data() + u * WV, a[u].sk.red[S.value]);
          a[u].sk.red[S.value] = simd::splat<V>(0);
        }
      }
    });
    static_for<NR>([&](auto S) {
      if constexpr (point_backward<K, A, N, S.value>()) down_sweep<pass_kind::backward, S.value, V, NB>(l, a, j, lb);
    });
  }
}

/// Adds the accumulator o into a: reduction states merged, adjoint sums added (down_loop's
/// TAD_DOWN_BATCHES accumulators into finish's U).
template <class E, class T, class W>
template <class V>
TAD_AS_IN_CLASS void engine<E, T, W>::fold_acc(acc<V>& a, const acc<V>& o) {
  static_for<NR>([&](auto S) { slot_op_t<S.value>::merge(a.fs[S.value], o.fs[S.value]); });
  for (std::size_t k = 0; k < NV; ++k) a.sk.var[k] = a.sk.var[k] + o.sk.var[k];
  for (std::size_t k = 0; k < NR; ++k) a.sk.red[k] = a.sk.red[k] + o.sk.red[k];
  for (std::size_t k = 0; k < a.sk.inv.size(); ++k) a.sk.inv[k] = a.sk.inv[k] + o.sk.inv[k];
}

/// The loop of a nest whose code reads reductions along axis 0 (`sum(X, axis<0>)`, one value
/// per column): over its columns in blocks of TAD_DOWN_BATCHES batches, then single batches, then single
/// columns (down_block). The lanes of a batch are columns, so each point's sweep down the rows
/// of a block accumulates W columns at once in one register per batch, and the nest's code
/// reads the block's values as a batch; a block's columns (rows x TAD_DOWN_BATCHES W elements) are read once
/// per sweep. Scalar variables' and loop invariants' adjoints sum over all blocks, as in loop().
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::down_loop() {
  constexpr std::size_t W_ = simd::width<T>;
  const std::size_t cols = cols_[N];
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
  if constexpr (K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled)
    zero_fill<K == pass_kind::backward ? A : 0, N>();
  constexpr std::size_t DB = TAD_DOWN_BATCHES;
  std::array<acc<B>, DB> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
  for (auto& a : ab) a = make_acc<B>();
  std::array<acc<T>, 1> at{make_acc<T>()};
  local l{e_, ctx_, {}, out_};
  for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
  lane_block<DB * W_> lb{};
  std::size_t j = 0;
  for (; j + DB * W_ <= cols; j += DB * W_) down_block<K, A, N, B, DB>(l, ab.data(), j, lb);
  if constexpr (DB > 1) {
    for (; j + W_ <= cols; j += W_) down_block<K, A, N, B, 1>(l, ab.data(), j, lb);
  }
  for (; j < cols; ++j) down_block<K, A, N, T, 1>(l, at.data(), j, lb);
  if constexpr (K != pass_kind::store) {
    // finish merges U accumulators: fold the others into the first U (DB may be fewer).
    for (std::size_t u = U; u < DB; ++u) fold_acc(ab[u % U], ab[u]);
    std::array<acc<B>, U> first;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (std::size_t u = 0; u < U; ++u) first[u] = u < DB ? ab[u] : make_acc<B>();
    finish<K, A, N>(first, at[0]);
    static_for<NR>([&](auto S) {
      if constexpr (point_backward<K, A, N, S.value>()) {
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
            B s = first[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + first[u].sk.inv[RR];
            backward_scalar<SS>(node, simd::hsum(s) + at[0].sk.inv[RR]);
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
