#pragma once
/// tad::program's backward (eval/program.hpp): products in pre-order, each once: dA = dY B^T and
/// dB = A^T dY by Eigen, into a variable's gradient, an inner product's adjoint, or the seed of
/// the engine's vector-Jacobian product of an operand's expression.

#include <tad/core/errors.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/program/declaration.hpp>
#include <tad/eval/shared_rules.hpp>
#include <tad/ops/adjoints.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {
/// What an operand gets when a product's rule returns tad::zero for it: nothing (an inner
/// product's adjoint, of which the rule is the only writer, is set to zero).
struct no_adjoint {};

template <class X>
concept matrix_or_zero = is_zero_v<X> || requires(const X& x) {
  x.rows();
  x.cols();
  x.eval();
};
/// A product's overridden rule (override_gradients with a rule for tad::matmul_op or
/// tad::outer_op): `rule(dY, A, B, Y)` with read-only Eigen expressions of the product's
/// operands as it multiplies them (a vector as a one-row or one-column matrix, a transposed
/// operand transposed), returning `tad::adjoints{dA, dB}` of those shapes: Eigen expressions
/// (evaluated straight into their destination: GEMMs stay GEMMs) or tad::zero{}.
template <class Rule, class DY, class A, class B, class Y>
auto call_product_rule(const Rule& rule, const DY& dy, const A& a, const B& b, const Y& y) {
  constexpr bool callable = std::is_invocable_v<const Rule&, const DY&, const A&, const B&, const Y&>;
  static_assert(callable, "tad::override_gradients(e, rules): a rule for a matrix product (tad::matmul_op, "
                          "tad::outer_op) is called as rule(dY, A, B, Y) with Eigen matrix expressions");
  if constexpr (callable) {
    using R = std::invoke_result_t<const Rule&, const DY&, const A&, const B&, const Y&>;
    constexpr bool pair = requires(const R& g) {
      g.a0;
      g.a1;
    } && !requires(const R& g) { g.a2; };
    static_assert(pair, "tad::override_gradients(e, rules): a matrix product's rule must return "
                        "tad::adjoints{dA, dB} (Eigen expressions of A's and B's shapes, or tad::zero{})");
    if constexpr (pair) {
      using R0 = std::remove_cvref_t<decltype(std::declval<const R&>().a0)>;
      using R1 = std::remove_cvref_t<decltype(std::declval<const R&>().a1)>;
      static_assert(matrix_or_zero<R0> && matrix_or_zero<R1>,
                    "tad::override_gradients(e, rules): a matrix product's rule returns Eigen expressions "
                    "(dY * B.transpose(), ...) or tad::zero{}, not numbers");
    }
    if constexpr (pair) return rule(dy, a, b, y);
    else return adjoints<zero, zero>{};  // (the assertion above is the diagnostic)
  } else {
    return adjoints<zero, zero>{};
  }
}

/// tad::shape_error unless the rule's adjoint `g` of operand `name` has x's shape.
template <class G, class X>
void check_rule_shape(const G& g, const X& x, const char* name) {
  if constexpr (!is_zero_v<G>) {
    if (g.rows() != x.rows() || g.cols() != x.cols()) {
      const auto shape = [](const auto& m) {
        return shape_string(static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols()));
      };
      throw shape_error::with_message(std::string("tad::override_gradients: a matrix product's rule returned d") +
                                          name + " of " + shape(g) + " for " + name + " of " + shape(x),
                                      static_cast<std::size_t>(x.size()), static_cast<std::size_t>(g.size()));
    }
  }
}

/// The `g` of program::operand_backward for a rule's adjoint (of the operand as multiplied:
/// transposed back to the inner matrix when the operand is a transpose).
template <bool Transposed, class G>
auto put_rule_adjoint(const G& g) {
  if constexpr (is_zero_v<G>) {
    return no_adjoint{};
  } else {
    return [&g](const auto& put) {
      if constexpr (Transposed) put(g.transpose()); else put(g);
    };
  }
}
}  // namespace detail

/// The gradient target of product q's adjoint: q's result leaf, named `@prod` of P as
/// detail::lower names it (rank R), and its dY buffer.
template <class E>
template <std::size_t P, int R>
auto program<E>::product_target(const results& r, std::size_t q) const {
  using leaf = detail::product_leaf_t<P, R, T>;
  const std::size_t n = r.rows[q] * r.cols[q];
  leaf l{};
  l.data = r.ws + r.offset[q];
  l.size = n;
  if constexpr (R == 2) l.rows = r.rows[q], l.cols = r.cols[q];
  return wrt(l, std::span<T>(r.ws + layout_[q].dy, n));
}

/// The adjoint targets of the live products whose leaves L holds. L was lowered from subtree S,
/// whose first product is product `base`, and which an adjoint reaches or not (Flows).
template <class E>
template <class L, class S, bool Flows, class... X>
auto program<E>::inner_product_targets(const results& r, std::size_t base) const {
  constexpr auto live = detail::live_products<S, Flows, X...>();
  constexpr auto ranks = detail::product_ranks<S>();
  return [&]<std::size_t... P>(std::index_sequence<P...>) {
    return std::tuple_cat([&] {
      if constexpr (live[P] && detail::contains_var<L, detail::product_name<P>>::value) {
        return std::tuple{product_target<P, ranks[P]>(r, base + P)};
      } else {
        return std::tuple<>{};
      }
    }()...);
  }(std::make_index_sequence<live.size()>{});
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
/// expression by the engine's vector-Jacobian product. A `g` of detail::no_adjoint (a rule's
/// tad::zero): nothing, but an inner product's adjoint is zeroed.
template <class E>
template <class O, class G, class... X, class... T2>
void program<E>::operand_backward(const O& o, const results& r, std::size_t base, std::size_t rows,
                                  std::size_t cols, std::size_t buf, const std::array<T*, sizeof...(X)>& scratch,
                                  G&& g, const wrt_target<X, T2>&... t) const {
  using op = detail::operand_of<O>;
  using I = typename op::inner;
  constexpr bool none = std::is_same_v<std::remove_cvref_t<G>, detail::no_adjoint>;
  if constexpr (!detail::reaches_any_v<I, X...> || (none && op::view)) {
    return;  // no gradient reaches a variable through it (a constant, stop_gradient, ...)
  } else {
    const auto lowered = detail::lower<0>(op::inner_of(o), r, base);
    using L = std::remove_cvref_t<decltype(lowered)>;
    if constexpr (none && !detail::is_stage_node_v<I>) {
      // The products whose adjoints the vector-Jacobian product would have written: zero.
      std::apply([](const auto&... w) { ((std::fill_n(w.data, w.size, T(0))), ...); },
                 inner_product_targets<L, I, true, X...>(r, base));
    } else if constexpr (detail::is_stage_node_v<I>) {
      // The operand is a stage: its adjoint, of which this is the only writer (another use of a
      // staged let is another stage, its alias, with an adjoint of its own).
      const std::size_t q = base + detail::count_products<I>() - 1;
      auto d = detail::dense_map<T>(r.ws + layout_[q].dy, rows, cols);
      if constexpr (none) d.setZero(); else g([&](const auto& expr) { detail::assign_product<false>(d, expr, pack(r)); });
    } else if constexpr (op::view) {
      // A variable: its gradient, summed with its other uses.
      const auto add = [&](const auto& target) {
        using V = std::remove_cvref_t<decltype(target.var)>;
        if constexpr (detail::same_name<V::name, L::name>) {
          auto d = detail::dense_map<T>(target.data, rows, cols);
          g([&](const auto& expr) { detail::assign_product<true>(d, expr, pack(r)); });
        }
      };
      (add(t), ...);
    } else {
      auto d = detail::dense_map<T>(r.ws + buf, rows, cols);
      g([&](const auto& expr) { detail::assign_product<false>(d, expr, pack(r)); });
      seeded_backward<I>(lowered, r, base, buf, rows * cols, scratch, t...);
    }
  }
}

/// The gradients of `sum(seed * lowered)`, the seed `count` elements of the workspace at
/// `seed`: added to the targets' (through scratch), written to the adjoints of the live stages
/// lowered holds. lowered was lowered from I, whose first stage is stage `base`.
template <class E>
template <class I, class L, class... X, class... T2>
void program<E>::seeded_backward(const L& lowered, const results& r, std::size_t base, std::size_t seed,
                                 std::size_t count, const std::array<T*, sizeof...(X)>& scratch,
                                 const wrt_target<X, T2>&... t) const {
  seeded_backward_with<I>(
      lowered, r, base,
      [&](const auto& canon) {
        return tad::dot(detail::seed_constant(std::span<const T>(r.ws + seed, count), canon), canon);
      },
      scratch, t...);
}

/// The same with the scalar `seeded_of(canonical(lowered))` (a tuple of carries: the sum of its
/// arrays' seeded products, eval/program/scan.hpp carry_backward).
template <class E>
template <class I, class L, class S, class... X, class... T2>
void program<E>::seeded_backward_with(const L& lowered, const results& r, std::size_t base, const S& seeded_of,
                                      const std::array<T*, sizeof...(X)>& scratch,
                                      const wrt_target<X, T2>&... t) const {
  const auto canon = detail::canonical(lowered);
  const auto seeded = seeded_of(canon);
  using Seeded = std::remove_cvref_t<decltype(seeded)>;
  // The vector-Jacobian product adds the targets' gradients into their sums (their buffers
  // hold them) where its plan can (plan::can_add; eval/slots.hpp adding_wrt_list): no scratch,
  // no second pass. The stages' adjoints it writes (it is their only writer).
  const auto direct = std::tuple_cat([&](const auto& target) {
    using X0 = std::remove_cvref_t<decltype(target.var)>;
    if constexpr (detail::reaches<L, X0::name>::value) return std::tuple{target};
    else return std::tuple<>{};
  }(t)...);
  using All = decltype(std::tuple_cat(direct, inner_product_targets<L, I, true, X...>(r, base)));
  constexpr std::size_t nadd = std::tuple_size_v<std::remove_cvref_t<decltype(direct)>>;
  using W = typename decltype([]<class... V>(std::type_identity<std::tuple<V...>>) {
    return std::type_identity<
        detail::adding_first_t<nadd, std::remove_cvref_t<decltype(detail::canonical_target<L>(std::declval<const V&>()).var)>...>>{};
  }(std::type_identity<All>{}))::type;
  if constexpr (detail::plan<Seeded, W>::can_add) {
    std::apply(
        [&](const auto&... w) {
          (void)detail::run_gradient_with<W>(seeded, detail::bind_extents(seeded), detail::canonical_target<L>(w)...);
        },
        std::tuple_cat(direct, inner_product_targets<L, I, true, X...>(r, base)));
    return;
  }
  // Else: into scratch, then added. (The index of each target by an index sequence: the
  // order in which function arguments are evaluated is unspecified.)
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
  // The vector-Jacobian product: the gradient of sum(seed * lowered), unchecked (the
  // program sized and owns every buffer here), with canonical variable names: one engine
  // for every operand expression of this form (eval/canonical.hpp).
  std::apply([&](const auto&... w) {
               (void)detail::run_gradient(seeded, detail::bind_extents(seeded), detail::canonical_target<L>(w)...);
             },
             std::tuple_cat(std::move(targets),
                            inner_product_targets<L, I, true, X...>(r, base)));
  add_scratch<L>(scratch, t...);
}

/// Adds the adjoints of stage k's live aliases to its own (before its backward).
template <class E>
template <class... X>
void program<E>::gather_aliases(const results& r, std::size_t k) const {
  if (!has_alias_[k]) return;
  constexpr auto live = detail::live_products<E, true, X...>();
  const std::size_t count = r.rows[k] * r.cols[k];
  T* to = r.ws + layout_[k].dy;
  for (std::size_t j = k + 1; j < stages; ++j) {
    if (alias_[j] == k && live[j]) {
      const T* from = r.ws + layout_[j].dy;
      for (std::size_t i = 0; i < count; ++i) to[i] += from[i];
    }
  }
}

/// Stage by stage, pre-order: each live stage's backward (a product's two GEMMs, a staged let's
/// body), then its operands' stages. n's first stage is stage `base`; an adjoint reaches n from
/// the top, or not (Flows: not below stop_gradient, ...). A stage is live, its backward runs,
/// when it flows and reaches a variable of X (detail::mark_live). With staged lets, children
/// are visited last to first: that order visits every use of a let (the later ones, in
/// post-order, are its aliases) before the first, whose backward then runs on the summed
/// adjoint (a reverse post-order, whatever the uses' consumers: the expression around the
/// stages, a product's operand, another let's body).
template <class E>
template <class N, bool Flows, class... X, class... T2>
void program<E>::backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                          const wrt_target<X, T2>&... t) const {
  constexpr bool product = detail::is_product_node_v<N>;
  constexpr bool live = Flows && detail::reaches_any_v<N, X...>;
  if constexpr (detail::is_stage_node_v<N>) {
    const std::size_t k = base + detail::count_products<N>() - 1;
    if (skip_[k]) return;  // its adjoint went to its original
    if constexpr (live) gather_aliases<X...>(r, k);
  }
  if constexpr (detail::is_scan_node_v<N> || detail::is_map_node_v<N>) {
    if constexpr (live) {
      if constexpr (detail::is_scan_node_v<N>) scan_backward(n, r, base, scratch, t...);  // its children's stages too
      else map_backward(n, r, base, scratch, t...);
    } else if constexpr (detail::has_custom_outputs_v<N>) {
      // No adjoint reaches it, but a group of custom outputs in its inputs may be reached
      // through another output: its inputs are walked, last to first (not the body: a place of
      // its own).
      detail::static_for<N::arity - 1>([&](auto kc) {
        constexpr std::size_t j = N::arity - 2 - kc.value;
        backward<detail::child_t<j, N>, false>(detail::child<j>(n), r, base + detail::child_offset<N, j, 0>(), scratch,
                                               t...);
      });
    }
  } else if constexpr (detail::is_custom_output_node_v<N>) {
    custom_backward(n, r, base, scratch, t...);  // (its group's rule when an adjoint reaches the group)
  } else if constexpr (!detail::is_leaf_v<N>) {
    if constexpr (detail::is_shift_node_v<N> && live) {
      // A shift: its argument's adjoint is its own summed adjoint one element on (the last
      // element of its argument reaches nothing: the zero after the adjoint).
      const std::size_t k = base + detail::count_products<N>() - 1, count = r.rows[k] * r.cols[k];
      const std::size_t dy = layout_[k].dy;
      r.ws[dy + count] = T(0);
      using B = std::remove_cvref_t<decltype(n.arg)>;
      if constexpr (detail::is_stage_node_v<B>) {
        // Its argument is a stage, of whose adjoint it is the only writer.
        std::copy_n(r.ws + dy + 1, count, r.ws + layout_[k - 1].dy);
      } else {
        seeded_backward<B>(detail::lower<0>(n.arg, r, base), r, base, dy + 1, count, scratch, t...);
      }
    } else if constexpr (detail::is_stage_let<N>() && !detail::is_forwarding_let<N>() && live) {
      // A staged let: its body's backward, seeded with its summed adjoint.
      const std::size_t k = base + detail::count_products<N>() - 1;
      seeded_backward<decltype(n.arg)>(detail::lower<0>(n.arg, r, base), r, base, layout_[k].dy, r.rows[k] * r.cols[k],
                                       scratch, t...);
    }
    if constexpr (product) {
      const std::size_t k = base + detail::count_products<N>() - 1;
      const std::size_t base_b = base + detail::child_offset<N, 1, 0>();
      if constexpr (live) {
        using A = detail::operand_of<std::remove_cvref_t<decltype(n.lhs)>>;
        using B = detail::operand_of<std::remove_cvref_t<decltype(n.rhs)>>;
        const layout& p = layout_[k];
        const auto dy = detail::dense_map<T>(r.ws + p.dy, r.rows[k], r.cols[k]);
        // Both gradients need both operands' values: read before either is overwritten
        // (an operand's buffer is its own; a view is the caller's).
        with_operand<false>(n.lhs, r, base, p.a_rows, p.a_cols, p.a, [&](const auto& a) {
          with_operand<false>(n.rhs, r, base_b, p.b_rows, p.b_cols, p.b, [&](const auto& b) {
            using Op = typename N::op_type;
            if constexpr (requires { typename Op::rule_type; }) {
              // Overridden (override_gradients): the rule's adjoints, checked, then as below.
              const auto cdy = detail::const_map<T>(r.ws + p.dy, r.rows[k], r.cols[k]);
              const auto y = detail::const_map<T>(r.ws + r.offset[k], r.rows[k], r.cols[k]);
              const auto g = detail::call_product_rule(n.op.rule, cdy, a, b, y);
              detail::check_rule_shape(g.a0, a, "A");
              detail::check_rule_shape(g.a1, b, "B");
              operand_backward(n.lhs, r, base, p.a_rows, p.a_cols, p.da, scratch,
                               detail::put_rule_adjoint<A::transposed>(g.a0), t...);
              operand_backward(n.rhs, r, base_b, p.b_rows, p.b_cols, p.db, scratch,
                               detail::put_rule_adjoint<B::transposed>(g.a1), t...);
            } else {
              // dA = dY B^T; of a transposed operand's inner matrix: (dY B^T)^T = B dY^T.
              operand_backward(n.lhs, r, base, p.a_rows, p.a_cols, p.da, scratch, [&](const auto& put) {
                if constexpr (A::transposed) put(b * dy.transpose()); else put(dy * b.transpose());
              }, t...);
              // dB = A^T dY; transposed: dY^T A.
              operand_backward(n.rhs, r, base_b, p.b_rows, p.b_cols, p.db, scratch, [&](const auto& put) {
                if constexpr (B::transposed) put(dy.transpose() * a); else put(a.transpose() * dy);
              }, t...);
            }
          });
        });
      }
    }
    const auto visit = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      backward<detail::child_t<K, N>, Flows && (product || detail::adjoint_flows<N, K>::value)>(
          detail::child<K>(n), r, base + detail::child_offset<N, K, 0>(), scratch, t...);
    };
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      if constexpr (detail::has_stage_lets<E>()) (visit(std::integral_constant<std::size_t, N::arity - 1 - K>{}), ...);
      else (visit(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<N::arity>{});
  }
}

/// The checks of grad_into's (and vjp_into's: a seed, checked by the caller) arguments, once
/// per call, on the whole expression (its arrays' table: one loop per buffer, whatever the
/// expression).
template <class E>
template <class Seed, class... X, class... T2>
auto program<E>::grad_with(std::span<T> ws, const Seed& seed, const wrt_target<X, T2>&... t) const -> T {
  constexpr bool seeded = !std::is_same_v<Seed, detail::no_seed>;
  // A vjp's x... are checked as a gradient's of sum(E) (same variables, scalar).
  using S = typename decltype([] {
    if constexpr (seeded && is_array_v<E>) return std::type_identity<decltype(tad::sum(std::declval<const E&>()))>{};
    else return std::type_identity<E>{};
  }())::type;
  constexpr int problem = detail::grad_problem<S, X...>();
  if constexpr (problem != 0) {
    detail::report_grad_problem<problem, true, S, X...>();
    return T(0);
  } else if constexpr (!(std::is_same_v<T, T2> && ...)) {
    static_assert(detail::always_false<E>, "tad::program::grad_into(wrt(x, buffer)...): every buffer must have "
                                           "the expression's element type");
    return T(0);
  } else {
    // The whole expression, products' operands included: its engines see only their parts.
    if constexpr (sizeof...(X) > 0) detail::check_shared_rules<E>();
    check_workspace(ws);
    constexpr const char* api = seeded ? "tad::program::vjp_into" : "tad::program::grad_into";
    const std::span<const detail::array_view_info<T>> arrays(arrays_.data(), n_arrays_);
    const auto bound = [&](const auto& target) {
      if constexpr (std::remove_cvref_t<decltype(target.var)>::is_array)
        detail::check_binding_in(arrays, detail::view_info<T>(target.var), api);
    };
    (bound(t), ...);
    // The buffer: its shape when it knows one, its length, and that it overlaps no input
    // array (a staged buffer: the whole span of its strides; a scalar's one element) and not
    // the workspace.
    const auto buffer = [&](const auto& target) {
      using V = std::remove_cvref_t<decltype(target.var)>;
      if constexpr (V::is_array) {
        if constexpr (detail::leaf_rank<V>() == 2) {
          if (target.shaped && (target.rows != target.var.rows || target.cols != target.var.cols))
            detail::throw_target_shape(api, V::name.view(), {target.rows, target.cols},
                                       {target.var.rows, target.var.cols});
        }
        if (target.size != target.var.size) detail::throw_target_length(api, V::name.view(), target.var.size, target.size);
      }
      // (A scalar's too: it is written when the engine ends, before the products' backward
      // reads their operands.)
      for (const detail::array_view_info<T>& a : arrays) {
        if (detail::overlaps(target.data, detail::target_span(target), a.data, a.span))
          detail::throw_target_overlap(api, V::name.view(), "an input array of the expression");
      }
    };
    (buffer(t), ...);
    const auto apart = [&](const auto& target) {
      if (detail::overlaps(target.data, detail::target_span(target), ws.data(), std::min(ws.size(), size_)))
        detail::throw_target_overlap(api, std::remove_cvref_t<decltype(target.var)>::name.view(), "the workspace");
    };
    (apart(t), ...);
    if constexpr (seeded) {
      // The seed is read while the gradients are written (as tad::vjp_into refuses a buffer
      // overlapping its seed, an input array there), after the forward wrote the workspace.
      const auto off_seed = [&](const auto& target) {
        if (detail::overlaps(target.data, detail::target_span(target), seed.data(), seed.size()))
          detail::throw_target_overlap(api, std::remove_cvref_t<decltype(target.var)>::name.view(), "the seed");
      };
      (off_seed(t), ...);
      if (detail::overlaps(seed.data(), seed.size(), static_cast<const T*>(ws.data()), std::min(ws.size(), size_)))
        throw std::invalid_argument(std::string(api) + ": the seed overlaps the workspace");
    }
    if constexpr (detail::holds_ref<E>()) {
      // A scalar variable (or constant_ref) bound to an lvalue is read where it is used: the
      // products' backward reads it after the engine around them has written the gradients,
      // and a gradient buffer may hold it (`wrt(s, s)`, `var<"s">(g[0])` with `wrt(X, g)`).
      // So each is read once, here, before anything is written.
      E e = e_;
      detail::freeze(e);
      return grad_checked(e, ws, seed, t...);
    } else {
      return grad_checked(e_, ws, seed, t...);
    }
  }
}

/// grad_with after its checks, on e (e_, or a copy of it with its scalars read): the targets of
/// variables E lacks and staged targets first; then the forward, the engine on the expression
/// around the products (its value, the gradients of the variables it holds and the outermost
/// products' adjoints; for a vjp, on `dot(seed, top)`: the seeded backward tad::vjp_into runs),
/// and the products' backward.
template <class E>
template <class Seed, class... X>
auto program<E>::grad_checked(const E& e, std::span<T> ws, const Seed& seed, const wrt_target<X, T>&... t) const
    -> T {
  if constexpr (!(detail::contains_var<E, X::name>::value && ...)) {
    // Variables E does not contain: a zero gradient, written here; the rest sees E's only
    // (the workspace's scratch and staging are sized by E's variables).
    const auto present = [&](const auto& target) {
      using V = std::remove_cvref_t<decltype(target.var)>;
      if constexpr (detail::contains_var<E, V::name>::value) {
        return std::tuple{target};
      } else {
        if constexpr (V::is_array) detail::fill_target(target, T(0)); else *target.data = T(0);
        return std::tuple<>{};
      }
    };
    return std::apply([&](const auto&... p) { return grad_checked(e, ws, seed, p...); }, std::tuple_cat(present(t)...));
  } else if (detail::staging_size(t...) != 0) {  // a strided or column-major gradient buffer
    // (Each staged share fits: staging holds every variable of E.)
    return detail::through_staging(ws.data() + staging_,
                                   [&](const auto&... d) { return grad_checked(e, ws, seed, d...); }, t...);
  }
  const results r = bind(ws);
  forward(e, r, 0);
  const auto top = detail::lower<0>(e, r);
  using L = std::remove_cvref_t<decltype(top)>;
  // Scratch for the targets, from the end of the products' buffers.
  std::array<T*, sizeof...(X)> scratch{};
  {
    std::size_t at = scratch_, j = 0;
    ((scratch[j++] = ws.data() + at, at += X::is_array ? t.size : 1), ...);
    if (at > staging_) throw std::logic_error("tad::program: scratch overflow");  // E's variables only
  }
  const auto run = [&](const auto& f) {
    return std::apply([&](const auto&... w) { return detail::run_gradient(f, detail::bind_extents(f), t..., w...); },
                      inner_product_targets<L, E, true, X...>(r, 0));
  };
  T v{};
  if constexpr (std::is_same_v<Seed, detail::no_seed>) {
    v = run(top);
  } else {
    // The seed as a constant of top's shape (a matrix: row-major), as tad::vjp_into seeds.
    if constexpr (rank_v<E> == 2) {
      const auto [rows, cols] = top_shape();
      v = run(tad::dot(constant(seed.data(), rows, cols), top));
    } else {
      v = run(tad::dot(constant(seed), top));
    }
  }
  backward<E, true>(e, r, 0, scratch, t...);
  return v;
}

}  // namespace tad
