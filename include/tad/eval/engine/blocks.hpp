#pragma once
/// The engine's backward sweeps of a block of rows of a nest with points along the rows, run
/// column by column (block_backward; doc/design.md "Axis points", "Backward sweeps column by
/// column"). The rest of the points' code: eval/engine/points.hpp.

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace tad::detail {

/// May the backward sweeps of axis point S over a block of rows run column by column
/// (block_backward)? When its argument's variables include a row vector (`w` in
/// `sum(X * w, axis<1>)`), and it is neither a pick nor stashed, nor holds a let, a column or a
/// reduction (whose values and adjoints the row-by-row sweeps set per row for all points).
template <class E, class T, class W>
template <std::size_t S>
constexpr bool engine<E, T, W>::block_columns_ok() {
  using Arg = std::remove_cvref_t<decltype(std::declval<const slot_node_t<E, S>&>().arg)>;
  if constexpr (picks<S> || P::stash_var[S] < NV || region_has_lets<Arg, site::loop>() || props<Arg>::has_column ||
                props<Arg>::reductions > 0) {
    return false;
  } else {
    bool row = false, other = false;
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>()) {
        if (P::vars[S].test(k.value)) {
          if (row_var_k<k.value>()) row = true;
          else if (leaf_rank<std::tuple_element_t<k.value, typename W::types>>() != 2) other = true;
        }
      }
    });
    return row && !other;
  }
}

/// The backward sweeps of a block of W rows (point_loop), for each point of nest N whose sweeps
/// run backward: column by column where block_columns_ok (per batch of columns, the block's
/// rows in turn, each with its own adjoint, value and auxiliary number from pa, pv, px; the row
/// vectors' gradient terms summed in a register and added once per block), so a row vector's
/// gradient is not loaded and stored once per row, a chain of store-to-load forwards that
/// costs ~2x on AMD Zen 4 (doc/log/benchmarks.md, "LR"); row by row otherwise, as before.
template <class E, class T, class W>
template <pass_kind K, int A, std::size_t N, class ToRow>
TAD_INLINE void engine<E, T, W>::block_backward(local& l, std::array<acc<B>, U>& ab, acc<T>& pt, std::size_t r,
                                                const ToRow& to_row, const block_numbers& pv,
                                                const block_numbers& pa, const block_numbers& px) {
  constexpr std::size_t W_ = simd::width<T>;
  static_for<NR>([&](auto Sc) TAD_INLINE_LAMBDA {
    constexpr std::size_t S = Sc.value;
    if constexpr (point_backward<K, A, N, S>()) {
      auto row_k = [&](std::size_t k) TAD_INLINE_LAMBDA {
        l.ctx.val[S] = pv[S][k];
        l.ctx.adj[S] = pa[S][k];
        if constexpr (slot_op_t<S>::needs_value) l.ctx.aux[S] = px[S][k];
        return to_row.template operator()<S>(r + k);
      };
      if constexpr (block_columns_ok<S>()) {
        const std::size_t cols = cols_[P::info[S].nest];
        auto columns = [&]<class V>(acc<V>& a, std::size_t j) TAD_INLINE_LAMBDA {
          static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
            if constexpr (row_var_k<k.value>() && P::vars[S].test(k.value)) a.sk.var[k.value] = simd::splat<V>(-0.0);
          });
          for (std::size_t k = 0; k < W_; ++k) {
            row_k(k);
            point_step<pass_kind::backward, S, V, point_mode{.keep_rows = true}>(l, a, j);
          }
          static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
            if constexpr (row_var_k<k.value>() && P::vars[S].test(k.value)) {
              T* p = l.outs[k.value] + j;
              simd::store_any(p, simd::load_any<V>(p) + a.sk.var[k.value]);
            }
          });
        };
        std::size_t j = 0;
        for (; j + W_ <= cols; j += W_) columns(ab[0], j);
        for (; j < cols; ++j) columns(pt, j);
      } else {
        for (std::size_t k = 0; k < W_; ++k) {
          const std::size_t cols = row_k(k);
          if constexpr (picks<S>) pick_sweep<pass_kind::backward, S>(l, pt, r + k);
          else sweep<pass_kind::backward, S, point_mode{.stash = stash_here<K, A, N, S>}>(l, ab, pt, cols);
        }
      }
    }
  });
}

}  // namespace tad::detail
