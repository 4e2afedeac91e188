#pragma once
/// The engine's row nests: rows rebased one at a time, columns (one value per row), and the
/// sweeps of column points.

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace tad::detail {

/// Points the matrix leaves of nest Nest in dst at row r of the same leaves of src (offset
/// r * cols, r * ld for a strided one, r for a column-major one) and sets its columns to their
/// r-th elements; I is the position of dst's first leaf. Leaves of other nests are left alone:
/// their extents differ, so the offset could point past them.
template <class E, class T, class W>
template <std::size_t Nest, std::size_t I, class N>
TAD_INLINE void engine<E, T, W>::rebase_rows(N& dst, const N& src, std::size_t offset, std::size_t r) {
  if constexpr (is_leaf_v<N>) {
    if constexpr (extents<E>::t.nest_of[I] == Nest) {
      if constexpr (is_strided_v<N>) dst.data = src.data + r * src.ld;
      else if constexpr (is_col_major_v<N>) dst.data = src.data + r;  // row r's first element
      else if constexpr (N::is_array && leaf_rank<N>() == 2) dst.data = src.data + offset;
      else if constexpr (is_gathered_column_v<N>) dst.val = element_of(src.vec, r);
      else if constexpr (is_column_v<N>) dst.val = src.vec.data[r];
    }
  } else {
    static_for<N::arity>([&](auto k) TAD_INLINE_LAMBDA {
      rebase_rows<Nest, child_leaf_offset<N, k.value, I>()>(child<k.value>(dst), child<k.value>(src), offset, r);
    });
  }
}

/// Sets the columns of nest Nest in e to their r-th elements (for the loop invariants, which
/// are computed from e_).
template <class E, class T, class W>
template <std::size_t Nest, std::size_t I, class N>
TAD_AS_IN_CLASS void engine<E, T, W>::set_columns(N& e, std::size_t r) {
  if constexpr (is_leaf_v<N>) {
    if constexpr (is_column_v<N> && extents<E>::t.nest_of[I] == Nest) e.val = element_of(e.vec, r);
  } else {
    static_for<N::arity>([&](auto k) { set_columns<Nest, child_leaf_offset<N, k.value, I>()>(child<k.value>(e), r); });
  }
}

/// The end of row r of nest N when it holds columns: the adjoints of its loop invariants that
/// hold a column (one value per row) are propagated, and each column variable's summed
/// adjoint is its gradient's element r; those accumulators restart at zero. Invariants without
/// a column keep summing over all rows and are propagated once, by finish.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::finish_row(std::array<acc<B>, U>& ab, acc<T>& at, std::size_t row) {
  constexpr int depth = K == pass_kind::backward ? A : 0;
  auto fin = [&]<std::size_t S>(const auto& r) {
    using R = std::remove_cvref_t<decltype(r)>;
    constexpr reduction_info I = P::info[S];
    if constexpr (backward_here<K, A, N>(I)) {
      auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
        using Node = std::remove_cvref_t<decltype(node)>;
        if constexpr (W::template reached<Node> && props<Node>::has_column) {
          B s = ab[0].sk.inv[RR];
          for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
          backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
          for (auto& a : ab) a.sk.inv[RR] = simd::splat<B>(0);
          at.sk.inv[RR] = T(0);
        }
      };
      visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push);
    }
  };
  visit_reductions<0>(e_, fin);
  static_for<NV>([&](auto k) {
    if constexpr (is_array_k<k.value>() && P::column_in(k.value, N) && touches_here(depth, k.value, N)) {
      B s = ab[0].sk.var[k.value];
      for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.var[k.value];
      // scalar_grad_ holds what the loop invariants pushed into this row's element.
      const T g = simd::hsum(s) + at.sk.var[k.value] + scalar_grad_[k.value];
      T* p = outs_[k.value] + row;
      if constexpr (P::stores(depth, k.value, N)) *p = g;
      else *p += g;
      for (auto& a : ab) a.sk.var[k.value] = simd::splat<B>(0);
      at.sk.var[k.value] = T(0);
      scalar_grad_[k.value] = T(0);
    }
  });
}

/// Zeroes the gradients that the loop over nest N of the backward pass at depth D adds to
/// first (plan::zero_fills: a row vector's, or one an axis point's sweeps write).
template <class E, class T, class W>
template <int D, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::zero_fill() {
  static_for<NV>([&](auto k) {
    if constexpr (is_array_k<k.value>() && P::zero_fills(D, k.value, N)) {
      for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
    }
  });
}

/// The loop of a row nest (a vector broadcast across a matrix's rows; extents.hpp): per row,
/// the matrix leaves, the matrix variables' gradients and the output are rebased to that row
/// and today's flat loop runs over its columns, so a vector leaf reads (and its gradient
/// sums into) the same columns in every row. The reductions' accumulators span all rows; with
/// columns, the column variables' and the column invariants' restart per row (finish_row).
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::row_loop() {
  constexpr std::size_t W_ = simd::width<T>;
  constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
  constexpr int depth = K == pass_kind::backward ? A : 0;
  constexpr bool columns = extents<E>::t.nest_columns[N];  // per-row invariants and gradients
  const std::size_t rows = rows_[N], cols = cols_[N];
  if constexpr (!columns) compute_invariants<K, A, N>();
  // zero_fill's body, written out: calling it moved g++ 12's register allocation in this
  // function (log/benchmarks.md, "Codegen of the existing workloads after axis points").
  if constexpr (bwd) {
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>() && P::zero_fills(depth, k.value, N)) {
        for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
      }
    });
  }
  constexpr bool cpoints = has_column_points<K, A, N>;  // as_column(sum(X, axis<1>)): sweeps per row
  if constexpr (cpoints) column_point_invariants<K, A, N>();
  std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
  for (auto& a : ab) a = make_acc<B>();
  acc<T> at = make_acc<T>();
  // The column points' sweeps' single elements (nothing without column points).
  [[maybe_unused]] std::conditional_t<cpoints, acc<T>, char> pt{};
  if constexpr (cpoints) pt = make_acc<T>();
  local l{e_, ctx_, {}, out_};
  l.ctx.n = rows * cols;  // what mean's rule reads in this loop
  for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t offset = r * cols;
    rebase_rows<N, 0>(l.e, e_, offset, r);
    if constexpr (cpoints) {
      column_point_sweeps<K, A, N, pass_kind::forward>(l, ab, pt, r);
      l.ctx.n = rows * cols;
    }
    if constexpr (columns) {
      set_columns<N, 0>(e_, r);
      compute_invariants<K, A, N>();
      l.ctx.inv = ctx_.inv;
    }
    static_for<NV>([&](auto k) {
      if constexpr (bwd && is_array_k<k.value>() && !P::row_in(k.value, N) && !P::column_in(k.value, N) &&
                    touches_here(depth, k.value, N))
        l.outs[k.value] = outs_[k.value] + offset;
    });
    if constexpr (K == pass_kind::store) l.out = out_ + offset;
    std::size_t j = 0;
    if constexpr (U > 1) {
      for (; j + U * W_ <= cols; j += U * W_) {
        static_for<U>([&](auto u) TAD_INLINE_LAMBDA { step<K, A, N>(l, ab[u.value], j + u.value * W_); });
      }
    }
    for (; j + W_ <= cols; j += W_) step<K, A, N>(l, ab[0], j);
    for (; j < cols; ++j) step<K, A, N>(l, at, j);
    if constexpr (columns && bwd) finish_row<K, A, N>(ab, at, r);
    if constexpr (cpoints && bwd) column_point_sweeps<K, A, N, pass_kind::backward>(l, ab, pt, r, &at);
  }
  if constexpr (cpoints && K != pass_kind::store) {
    static_for<NV>([&](auto k) {
      if constexpr (!is_array_k<k.value>()) at.sk.var[k.value] += pt.sk.var[k.value];
    });
  }
  if constexpr (K != pass_kind::store) finish<K, A, N>(ab, at);
  if constexpr (cpoints && bwd) push_point_invariants<K, A, N>(ab, pt);
}

/// The loop invariants of the arguments of the column points whose sweeps the loop of pass K
/// over nest N runs: computed once, before the loop. (point_loop has the same code for its
/// points written out, as its own row mapping and push: as functions they moved g++ 12's code
/// for bench.rowlse's loop.)
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::column_point_invariants() {
  static_for<NR>([&](auto S) {
    if constexpr (column_point_slot<S.value> && point_forward<K, A, N, S.value>()) {
      auto eval_root = [&]<std::size_t SS, std::size_t R>(const auto& node) { ctx_.inv[R] = forward<T, SS>(node, ctx_, 0).v; };
      auto per_point = [&]<std::size_t PS>(const auto& red) {
        if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, eval_root);
      };
      visit_reductions<0>(e_, per_point);
    }
  });
}

/// Row r of the argument of column point S, whose sweeps run in the loop over nest N: its
/// leaves (when its nest is another one) and its matrix variables' gradients; returns its
/// columns, which mean's rule reads in the sweeps.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, std::size_t S>
TAD_INLINE std::size_t engine<E, T, W>::point_row(local& l, std::size_t r) {
  constexpr std::size_t In = P::info[S].nest;
  const std::size_t cols = cols_[In];
  if constexpr (In != N) rebase_rows<In, 0>(l.e, e_, r * cols, r);
  if constexpr (point_backward<K, A, N, S>()) {
    static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
      using X = std::tuple_element_t<k.value, typename W::types>;
      if constexpr (X::is_array && leaf_rank<X>() == 2 && P::vars[S].test(k.value)) l.outs[k.value] = outs_[k.value] + r * cols;
    });
  }
  l.ctx.n = cols;
  return cols;
}

/// The sweeps of nest N's column points over row r (D forward: each point's value at that row,
/// into l.ctx and ctx_ for the row's code and loop invariants; D backward: each seeded with the
/// adjoint the row's code summed for it, in the sink (*at and ab) and, from the row's loop
/// invariants, in ctx_.adj).
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, pass_kind D>
TAD_INLINE void engine<E, T, W>::column_point_sweeps(local& l, std::array<acc<B>, U>& ab, acc<T>& pt, std::size_t r,
                                    acc<T>* at) {
  static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
    constexpr std::size_t s = S.value;
    if constexpr (column_point_slot<s> && D == pass_kind::forward && point_forward<K, A, N, s>()) {
      const std::size_t cols = point_row<K, A, N, s>(l, r);
      if constexpr (picks<s>) pick_sweep<pass_kind::forward, s>(l, pt, r);
      else sweep<pass_kind::forward, s>(l, ab, pt, cols);
      ctx_.val[s] = l.ctx.val[s];
      ctx_.aux[s] = l.ctx.aux[s];
    } else if constexpr (column_point_slot<s> && D == pass_kind::backward && point_backward<K, A, N, s>()) {
      B sum = ab[0].sk.red[s];
      for (std::size_t u = 1; u < U; ++u) sum = sum + ab[u].sk.red[s];
      l.ctx.adj[s] = simd::hsum(sum) + at->sk.red[s] + ctx_.adj[s];
      for (auto& a : ab) a.sk.red[s] = simd::splat<B>(0);
      at->sk.red[s] = T(0);
      ctx_.adj[s] = T(0);
      const std::size_t cols = point_row<K, A, N, s>(l, r);
      if constexpr (picks<s>) pick_sweep<pass_kind::backward, s>(l, pt, r);
      else sweep<pass_kind::backward, s>(l, ab, pt, cols);
    }
  });
}

/// After the loop: the summed adjoints of the loop invariants of the arguments of the column
/// points whose sweeps it ran backward, propagated once.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N>
TAD_AS_IN_CLASS void engine<E, T, W>::push_point_invariants(std::array<acc<B>, U>& ab, const acc<T>& pt) {
  static_for<NR>([&](auto S) {
    if constexpr (column_point_slot<S.value> && point_backward<K, A, N, S.value>()) {
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

}  // namespace tad::detail
