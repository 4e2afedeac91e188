#pragma once
/// The engine's checks before any loop (empty max/min, pick labels) and the scalar code above
/// the loops (its value and the outermost reductions' adjoints, with or without lets).

#include <tad/eval/engine/declaration.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tad::detail {

/// max and min of no elements are errors: of an empty array, or along a row of no columns
/// (with no rows, an axis point has nothing to reduce).
template <class E, class T, class W>
constexpr void engine<E, T, W>::reject_empty() const {
  if constexpr (NC <= 1 && !P::has_points_anywhere) {
    if (P::rejects_empty && ctx_.n == 0) throw std::domain_error("tad::max(e) / tad::min(e): e is an empty array");
  } else {
    static_for<NR>([&](auto S) {
      constexpr reduction_info I = P::info[S.value];
      if constexpr (I.rejects_empty && I.down) {
        if (cols_[I.nest] > 0 && rows_[I.nest] == 0)
          throw std::domain_error("tad::max(e, axis<0>) / tad::min(e, axis<0>): e has columns but no rows "
                                  "(the maximum of no elements)");
      } else if constexpr (I.rejects_empty && I.point) {
        if (rows_[I.nest] > 0 && cols_[I.nest] == 0)
          throw std::domain_error("tad::max(e, axis<1>) / tad::min(e, axis<1>): e has rows but no columns "
                                  "(the maximum of no elements)");
      } else if constexpr (I.rejects_empty) {
        if (len<I.nest>() == 0) throw std::domain_error("tad::max(e) / tad::min(e): e is an empty array");
      }
    });
  }
}

/// A pick's labels: one per row of its argument, each one of its columns.
template <class E, class T, class W>
TAD_AS_IN_CLASS void engine<E, T, W>::check_labels() {
  static_for<NR>([&](auto S) {
    if constexpr (is_pick_v<slot_op_t<S.value>>) {
      constexpr std::size_t In = P::info[S.value].nest;
      const auto& op = slot_ref<S.value>(e_).op;
      const std::size_t rows = rows_[In], cols = cols_[In];
      if (op.count != rows)
        throw shape_error::with_message("tad::pick(z, labels): " + std::to_string(op.count) + " labels for " +
                                            std::to_string(rows) + " rows of z (one class index per row)",
                                        rows, op.count);
      for (std::size_t r = 0; r < rows; ++r) {
        const auto c = op.labels[r];
        bool inside = true;
        if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(c)>>) inside = c >= 0;
        if (inside) inside = static_cast<std::size_t>(c) < cols;
        if (!inside)
          throw std::out_of_range("tad::pick(z, labels): label " + std::to_string(c) + " of row " + std::to_string(r) +
                                  " is not a column of z (0 <= label < " + std::to_string(cols) + ")");
      }
    }
  });
}

/// Pushes the scalar adjoint dy of the scalar subexpression e (first reduction slot S) into
/// the scalar variables' gradients and the reductions' adjoints.
template <class E, class T, class W>
template <std::size_t S, class N>
constexpr void engine<E, T, W>::backward_scalar(const N& e, T dy) {
  if constexpr (region_has_lets<N, site::scalar>()) {
    backward_scalar_lets<S>(e, dy);
  } else {
    const auto t = forward<T, S>(e, ctx_, 0);
    sink<T, W, NR, NI, invariant_adjoints::pushed> s{};
    backward<S>(e, t, dy, s);
    static_for<NR>([&](auto r) { ctx_.adj[r.value] += s.red[r.value]; });
    static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
  }
}

/// backward_scalar for a loop invariant with lets in it (eval/let.hpp): each let once.
template <class E, class T, class W>
template <std::size_t S, class N>
constexpr void engine<E, T, W>::backward_scalar_lets(const N& e, T dy) {
  using Lets = region_lets_t<N, site::scalar>;
  std::array<T, Lets::size> env{};
  const auto lc = make_let_context<T, Lets>(ctx_, env);
  sink<T, W, NR, NI, invariant_adjoints::pushed> s{};
  auto ls = make_let_sink<T, Lets>(s);
  auto main = [&]() {
    const auto t = forward<T, S>(e, lc, 0);
    backward<S>(e, t, dy, ls);
  };
  if constexpr (has_scalar_deferred) with_lets_x<0, scalar_defer_mode<E, W, scalar_grads::keep>, site::scalar, T, S, 0>(e, lc, 0, ls, main, sdl_);
  else with_lets<0, let_rules::run, site::scalar, T, S, 0>(e, lc, 0, ls, main);
  static_for<NR>([&](auto r) { ctx_.adj[r.value] += s.red[r.value]; });
  static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
}

/// top() for an expression with lets in its scalar code (eval/let.hpp): each let once.
template <class E, class T, class W>
constexpr T engine<E, T, W>::top_lets(bool final) {
  using Lets = region_lets_t<E, site::scalar>;
  std::array<T, Lets::size> env{};
  const auto lc = make_let_context<T, Lets>(ctx_, env);
  sink<T, W, NR, NI, invariant_adjoints::pushed> s{};
  auto ls = make_let_sink<T, Lets>(s);
  T value = T(0);
  auto main = [&]() { value = forward_backward<T, 0, 0, site::scalar>(e_, lc, 0, T(1), ls).v; };
  if constexpr (has_scalar_deferred) {
    if (final) with_lets_x<0, scalar_defer_mode<E, W, scalar_grads::keep>, site::scalar, T, 0, 0>(e_, lc, 0, ls, main, sdl_);
    else with_lets_x<0, scalar_defer_mode<E, W, scalar_grads::drop>, site::scalar, T, 0, 0>(e_, lc, 0, ls, main, sdl_);
  } else {
    with_lets<0, let_rules::run, site::scalar, T, 0, 0>(e_, lc, 0, ls, main);
  }
  static_for<NR>([&](auto S) {
    if constexpr (P::info[S.value].depth == 0) ctx_.adj[S.value] = s.red[S.value];
  });
  if (final) {
    static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
  }
  return value;
}

/// The rules of the lets deferred to the end of the run (deferred_let::scalar): each once, on
/// the adjoint the scalar code and the loop invariants added to sdl_, into the scalar
/// variables' gradients (the body holds no reduction).
template <class E, class T, class W>
constexpr void engine<E, T, W>::scalar_deferred_rules() {
  static_for<all_lets::size>([&](auto k) {
    using L = typename all_lets::template at<k.value>;
    if constexpr (deferred_let<E, W, L>::deferred) backward_scalar<0>(first_let<L>(e_).arg, sdl_.adj[k.value]);
  });
}

/// The scalar part above the reductions: its value, and (with final) the gradients of the
/// scalar variables; the adjoints of the outermost reductions in any case.
template <class E, class T, class W>
TAD_INLINE constexpr T engine<E, T, W>::top(bool final) {
  if constexpr (region_has_lets<E, site::scalar>()) {
    return top_lets(final);
  } else {
    sink<T, W, NR, NI, invariant_adjoints::pushed> s{};
    // A variable the scalar code reaches starts its sum at -0.0: -0.0 + d is d for every d, so
    // the compiler drops the first addition (0.0 + d is not d when d is -0.0); one E does not
    // reach keeps 0.0, its gradient.
    static_for<NV>([&](auto k) {
      if constexpr (W::template local_mask<E>.test(k.value)) s.var[k.value] = T(-0.0);
    });
    const T value = forward_backward<T, 0, 0, site::scalar>(e_, ctx_, 0, T(1), s).v;
    static_for<NR>([&](auto S) {
      if constexpr (P::info[S.value].depth == 0) ctx_.adj[S.value] = s.red[S.value];
    });
    if (final) {
      // Without loops nothing else has written scalar_grad_ yet.
      static_for<NV>([&](auto k) {
        if constexpr (NR == 0) scalar_grad_[k.value] = s.var[k.value];
        else scalar_grad_[k.value] += s.var[k.value];
      });
    }
    return value;
  }
}

}  // namespace tad::detail
