#pragma once
/// `pick(z, labels)` (one element per row) and the softmax cross-entropies, with probability
/// targets or class-index labels.

#include <tad/core/expression.hpp>
#include <tad/ops/axis_reductions.hpp>
#include <tad/ops/make.hpp>
#include <tad/ops/reductions.hpp>
#include <tad/ops/shared.hpp>

#include <cstddef>
#include <ranges>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {
/// The op of `pick(z, labels)`: row r's element at column labels[r]. An axis point whose sweep
/// is that one element (engine::pick_sweep); its rules are sum's, of one element. The labels
/// are viewed in place and checked at every evaluation (engine::check_labels).
template <class I>
struct pick_op : sum_op {
  static constexpr std::string_view name = "pick";
  static constexpr bool picks = true;
  const I* labels = nullptr;
  std::size_t count = 0;
};
/// Is Op a pick's (the op of `pick(z, labels)`, or an axis_op over it)?
template <class Op>
inline constexpr bool is_pick_v = requires { Op::picks; };
/// Contiguous storage of integers (class indices), not of bool.
template <class R>
concept label_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                      std::is_integral_v<std::remove_cv_t<std::ranges::range_value_t<R>>> &&
                      !std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<R>>, bool>;
}  // namespace detail

/// `pick(z, labels)`: the vector of `z(r, labels[r])` over the rows r of the matrix expression
/// z (NumPy's `z[arange(n), labels]`, PyTorch's `z.gather(1, labels[:, None])`); row r's
/// gradient is its adjoint at that column, 0 elsewhere. labels: one integer per row of z, each a
/// column of z, viewed in place (pass an lvalue or a std::span) and checked at every evaluation
/// before anything is written: tad::shape_error if their number is not z's number of rows,
/// std::out_of_range for a label outside [0, cols).
template <class Z, class R>
constexpr auto pick(const Z& z, R&& labels) {
  using U = std::remove_cvref_t<R>;
  constexpr int problem = detail::axis_problem<Z, 1>();
  if constexpr (detail::poisoned_v<Z>) {
    return detail::invalid_expression{};
  } else if constexpr (!detail::label_range<U>) {
    static_assert(detail::label_range<U>,
                  "tad::pick(z, labels): labels must be contiguous storage of integers, one class index per row of z");
    return detail::invalid_expression{};
  } else if constexpr (!std::is_lvalue_reference_v<R> && !std::ranges::borrowed_range<U>) {
    static_assert(std::is_lvalue_reference_v<R> || std::ranges::borrowed_range<U>,
                  "tad::pick(z, labels): labels is a temporary container; the expression would dangle. "
                  "Pass an lvalue or a std::span");
    return detail::invalid_expression{};
  } else if constexpr (problem == 1) {
    static_assert(problem != 1, "tad::pick(z, labels): z must be a tad expression");
    return detail::invalid_expression{};
  } else if constexpr (problem == 3) {
    static_assert(problem != 3, "tad::custom_gradient(f, g): f must not call tad::pick(z, labels): f runs on "
                                "one element at a time");
    return detail::invalid_expression{};
  } else if constexpr (problem == 2) {
    static_assert(problem != 2, "tad::pick(z, labels): z must be a matrix expression (rank 2): one row per "
                                "sample, one column per class");
    return detail::invalid_expression{};
  } else if constexpr (problem == 6) {
    static_assert(problem != 6, "tad::pick(z, labels): z must not contain a reduction (a full one or one "
                                "along an axis); not supported yet");
    return detail::invalid_expression{};
  } else if constexpr (problem == 7) {
    static_assert(problem != 7, "tad::pick(z, labels): z must not hold a column (tad::as_column); not "
                                "supported yet");
    return detail::invalid_expression{};
  } else {
    auto n = detail::make<detail::axis_op<detail::pick_op<std::remove_cv_t<std::ranges::range_value_t<U>>>, 1>>(z);
    if constexpr (!detail::poisoned_v<decltype(n)>) {
      n.op.labels = std::ranges::data(labels);
      n.op.count = std::ranges::size(labels);
    }
    return n;
  }
}

namespace detail {
template <class E>
constexpr bool is_matrix_expression() {
  if constexpr (expression<E>) return props<std::remove_cvref_t<E>>::rank == 2; else return false;
}
}  // namespace detail

/// Softmax cross-entropy `-sum(t * log(softmax(z)))` of logits `z` and target probabilities
/// `t`: `sum(t) * logsumexp(z) - dot(t, z)`, one distribution over all elements of vectors. Of
/// two matrices of one shape, one distribution per row: the vector of the rows' cross-entropies
/// `sum(t, axis<1>) * logsumexp(z, axis<1>) - sum(t * z, axis<1>)` (TensorFlow's
/// softmax_cross_entropy_with_logits; PyTorch's cross_entropy(reduction='none') with
/// probability targets), which a loss averages: `mean(softmax_cross_entropy(Z, T))`.
template <class Z, class T>
  requires(!detail::label_range<T>)
constexpr auto softmax_cross_entropy(const Z& z, const T& t) {
  constexpr bool zm = detail::is_matrix_expression<Z>();
  constexpr bool tm = detail::is_matrix_expression<T>();
  if constexpr (zm && !expression<T> && !detail::poisoned_v<T>) {
    static_assert(detail::always_false<Z>,
                  "tad::softmax_cross_entropy(z, labels): z is a matrix and labels are not a tad expression: "
                  "labels must be contiguous storage of integers, one class index per row of z (probability "
                  "targets: a matrix expression of z's shape)");
    return invalid_expression{};
  } else if constexpr (zm != tm) {
    static_assert(detail::always_false<Z>,
                  "tad::softmax_cross_entropy(z, t): z and t must both be matrices (one distribution "
                  "per row) or both vectors (one distribution)");
    return invalid_expression{};
  } else if constexpr (zm) {
    const auto zz = detail::row_composite_argument(z);  // a rule in z: a stage (ops/shared.hpp)
    return sum(t, axis<1>) * logsumexp(zz, axis<1>) - sum(t * zz, axis<1>);
  } else {
    // z is read twice: one node, so that a rule in it runs once (ops/shared.hpp).
    const auto zz = detail::one_node(z);
    return sum(t) * logsumexp(zz) - dot(t, zz);
  }
}

/// Softmax cross-entropy of a matrix of logits `z` with class-index labels, one per row: the
/// vector `logsumexp(z, axis<1>) - pick(z, labels)` (PyTorch's
/// `cross_entropy(reduction='none')` with class indices, TensorFlow's
/// `sparse_softmax_cross_entropy_with_logits`). labels as for pick.
template <class Z, class R>
  requires detail::label_range<std::remove_cvref_t<R>>
constexpr auto softmax_cross_entropy(const Z& z, R&& labels) {
  if constexpr (detail::poisoned_v<Z>) {
    return invalid_expression{};
  } else if constexpr (!detail::is_matrix_expression<Z>()) {
    static_assert(detail::is_matrix_expression<Z>(),
                  "tad::softmax_cross_entropy(z, labels): z must be a matrix expression (rank 2): one row per "
                  "sample, one column per class, one label per row");
    return invalid_expression{};
  } else {
    const auto zz = detail::row_composite_argument(z);  // a rule in z: a stage (ops/shared.hpp)
    return logsumexp(zz, axis<1>) - pick(zz, std::forward<R>(labels));
  }
}

}  // namespace tad
