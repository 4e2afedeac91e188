#pragma once
/// tad::value, evaluate, grad, grad_into, vjp and vjp_into of an expression that holds a matrix
/// product or a stage, and the gradients of one whose lets the engine cannot share
/// (eval/api.hpp dispatches to products_api: detail::gradient_program): a tad::program built for
/// the call.

#include <tad/core/matrix.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/program/declaration.hpp>

#include <cstddef>
#include <type_traits>
#include <vector>

namespace tad::detail {

/// The program is built for the call (its workspace allocated per call, and so the staging of
/// a strided or column-major gradient buffer; build a tad::program to reuse one).
template <class E>
struct products_api<E, std::enable_if_t<has_products_v<E> || has_lets_v<E>>> {
  static auto value(const E& e) {
    program<E> p(e);
    if constexpr (is_array_v<E>) {
      using T = value_type_t<E>;
      const std::size_t rows = p.result_rows(), cols = p.result_cols();
      if constexpr (rank_v<E> == 2) {
        matrix<T> out(rows, cols);
        p.evaluate(out);
        return out;
      } else {
        std::vector<T> out(rows * cols);
        p.evaluate(out);
        return out;
      }
    } else {
      return p.value();
    }
  }
  template <class Out>
  static void evaluate(const E& e, Out& out) {
    program<E>(e).evaluate(out);
  }
  template <class... X>
  static auto grad(const E& e, const X&... x) {
    (check_binding(e, x, "tad::grad"), ...);
    return program<E>(e).grad(x...);
  }
  template <class... X, class... T2>
  static auto grad_into(const E& e, const wrt_target<X, T2>&... t) {
    return program<E>(e).grad_into(t...);
  }
  /// The seed is checked against the program's result shape with tad::vjp's message.
  template <class Seed, class... X>
  static auto vjp(const E& e, const Seed& seed, const X&... x) {
    (check_binding(e, x, "tad::vjp"), ...);
    const program<E> p(e);
    check_seed(seed, {p.result_rows(), p.result_cols()}, rank_v<E> == 2, "tad::vjp(e, seed, x...): seed");
    return p.vjp(seed, x...);
  }
  template <class Seed, class... X, class... T2>
  static auto vjp_into(const E& e, const Seed& seed, const wrt_target<X, T2>&... t) {
    const program<E> p(e);
    check_seed(seed, {p.result_rows(), p.result_cols()}, rank_v<E> == 2, "tad::vjp_into(e, seed, ...): seed");
    return p.vjp_into(seed, t...);
  }
};
}  // namespace tad::detail
