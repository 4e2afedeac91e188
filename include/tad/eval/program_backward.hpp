#pragma once
/// tad::program's backward (eval/program.hpp): products in pre-order, each once: dA = dY B^T and
/// dB = A^T dY by Eigen, into a variable's gradient, an inner product's adjoint, or the seed of
/// the engine's vector-Jacobian product of an operand's expression.

#include <tad/eval/program.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

/// The gradient target of product q's adjoint (q's result leaf, its dY buffer).
template <class E>
template <std::size_t q>
auto program<E>::product_target(const results& r) const {
  using leaf = detail::product_leaf_t<q, ranks_[q], T>;
  const std::size_t n = r.rows[q] * r.cols[q];
  leaf l{};
  l.data = r.ws + r.offset[q];
  l.size = n;
  if constexpr (ranks_[q] == 2) l.rows = r.rows[q], l.cols = r.cols[q];
  return wrt(l, std::span<T>(r.ws + layout_[q].dy, n));
}

/// The adjoint targets of the live products whose leaves L holds (Off: the first product of
/// the subtree L was lowered from, NQ: its number of products).
template <class E>
template <class L, std::size_t Off, std::size_t NQ, class... X>
auto program<E>::inner_product_targets(const results& r) const {
  constexpr auto live = detail::live_products<E, X...>();
  return [&]<std::size_t... P>(std::index_sequence<P...>) {
    return std::tuple_cat([&] {
      constexpr std::size_t q = Off + P;
      if constexpr (live[q] && detail::contains_var<L, detail::product_name<q>>::value) {
        return std::tuple{product_target<q>(r)};
      } else {
        return std::tuple<>{};
      }
    }()...);
  }(std::make_index_sequence<NQ>{});
}

/// Adds the scratch gradients of the targets reached by L to the targets.
template <class E>
template <class L, class... X, class... T2>
void program<E>::add_scratch(const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) {
  std::size_t j = 0;  // a fold over the comma operator: left to right
  (
      [&] {
        if constexpr (detail::reaches<L, X::name>::value) {
          const T* s = scratch[j];
          for (std::size_t i = 0; i < t.size; ++i) t.data[i] += s[i];
        }
        ++j;
      }(),
      ...);
}

/// The gradient of operand O (of its inner, untransposed matrix), given by `g`, which calls
/// its argument with the Eigen expression of it (built from dY and the other operand): added
/// to a variable's gradient, written to an inner product's adjoint, or pushed through O's
/// expression by the engine's vector-Jacobian product.
template <class E>
template <std::size_t Off, class O, class G, class... X, class... T2>
void program<E>::operand_backward(const O& o, const results& r, std::size_t rows, std::size_t cols, std::size_t buf,
                                const std::array<T*, sizeof...(X)>& scratch, G&& g,
                                const wrt_target<X, T2>&... t) const {
  using op = detail::operand_of<O>;
  using I = typename op::inner;
  if constexpr (!detail::reaches_any_v<I, X...>) {
    return;  // no gradient reaches a variable through it (a constant, stop_gradient, ...)
  } else {
    const auto lowered = detail::lower<Off>(op::inner_of(o), r);
    using L = std::remove_cvref_t<decltype(lowered)>;
    if constexpr (detail::is_product_node_v<I>) {
      // The operand is a product: its adjoint, of which this is the only writer.
      constexpr std::size_t q = Off + detail::count_products<I>() - 1;
      auto d = detail::dense_map<T>(r.ws + layout_[q].dy, rows, cols);
      g([&](const auto& expr) { d.noalias() = expr; });
    } else if constexpr (op::view) {
      // A variable: its gradient, summed with its other uses.
      const auto add = [&](const auto& target) {
        using V = std::remove_cvref_t<decltype(target.var)>;
        if constexpr (detail::same_name<V::name, L::name>) {
          auto d = detail::dense_map<T>(target.data, rows, cols);
          g([&](const auto& expr) { d.noalias() += expr; });
        }
      };
      (add(t), ...);
    } else {
      auto d = detail::dense_map<T>(r.ws + buf, rows, cols);
      g([&](const auto& expr) { d.noalias() = expr; });
      // (The index of each target by an index sequence: the order in which function arguments
      // are evaluated is unspecified.)
      const auto wrt_scratch = [&]<std::size_t at, class V>(const V& target) {
        using X0 = std::remove_cvref_t<decltype(target.var)>;
        if constexpr (detail::reaches<L, X0::name>::value) {
          if constexpr (X0::is_array) return std::tuple{wrt(target.var, std::span<T>(scratch[at], target.size))};
          else return std::tuple{wrt(target.var, *scratch[at])};
        } else {
          return std::tuple<>{};
        }
      };
      auto targets = [&]<std::size_t... J>(std::index_sequence<J...>) {
        return std::tuple_cat(wrt_scratch.template operator()<J>(t)...);
      }(std::index_sequence_for<X...>{});
      const auto seed = std::span<const T>(r.ws + buf, rows * cols);
      std::apply([&](const auto&... w) { (void)tad::vjp_into(lowered, seed, w...); },
                 std::tuple_cat(std::move(targets),
                                inner_product_targets<L, Off, detail::count_products<I>(), X...>(r)));
      add_scratch<L>(scratch, t...);
    }
  }
}

/// Product by product, pre-order: each live product's backward, then its operands' products.
template <class E>
template <std::size_t Off, class N, class... X, class... T2>
void program<E>::backward(const N& n, const results& r, const std::array<T*, sizeof...(X)>& scratch,
                        const wrt_target<X, T2>&... t) const {
  if constexpr (detail::is_product_node_v<N>) {
    if (skip_[Off + detail::count_products<N>() - 1]) return;  // its adjoint went to its original
  }
  if constexpr (!detail::is_leaf_v<N>) {
    if constexpr (detail::is_product_node_v<N>) {
      constexpr std::size_t k = Off + detail::count_products<N>() - 1;
      constexpr std::size_t off_b = detail::child_offset<N, 1, Off>();
      constexpr auto live = detail::live_products<E, X...>();
      if constexpr (live[k]) {
        using A = detail::operand_of<std::remove_cvref_t<decltype(n.lhs)>>;
        using B = detail::operand_of<std::remove_cvref_t<decltype(n.rhs)>>;
        const layout& p = layout_[k];
        const auto dy = detail::dense_map<T>(r.ws + p.dy, r.rows[k], r.cols[k]);
        // Both gradients need both operands' values: read before either is overwritten
        // (an operand's buffer is its own; a view is the caller's).
        with_operand<Off, false>(n.lhs, r, p.a_rows, p.a_cols, p.a, [&](const auto& a) {
          with_operand<off_b, false>(n.rhs, r, p.b_rows, p.b_cols, p.b, [&](const auto& b) {
            // dA = dY B^T; of a transposed operand's inner matrix: (dY B^T)^T = B dY^T.
            operand_backward<Off>(n.lhs, r, p.a_rows, p.a_cols, p.da, scratch, [&](const auto& put) {
              if constexpr (A::transposed) put(b * dy.transpose()); else put(dy * b.transpose());
            }, t...);
            // dB = A^T dY; transposed: dY^T A.
            operand_backward<off_b>(n.rhs, r, p.b_rows, p.b_cols, p.db, scratch, [&](const auto& put) {
              if constexpr (B::transposed) put(dy.transpose() * a); else put(a.transpose() * dy);
            }, t...);
          });
        });
      }
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (backward<detail::child_offset<N, K, Off>()>(detail::child<K>(n), r, scratch, t...), ...);
    }(std::make_index_sequence<N::arity>{});
  }
}

}  // namespace tad
