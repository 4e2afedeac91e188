#pragma once
/// Reductions along an axis of a matrix expression (`sum(X, axis<1>)`, `max(X, axis<0>)`, ...),
/// `as_column` of one, and softmax and log_softmax (along an axis, or of a vector).

#include <tad/core/expression.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/elementwise.hpp>
#include <tad/ops/make.hpp>
#include <tad/ops/reductions.hpp>
#include <tad/ops/shared.hpp>

#include <cstddef>
#include <type_traits>

namespace tad {

/// `tad::axis<K>`: the axis a reduction runs along, as in NumPy: `sum(X, axis<1>)` sums along
/// each row of the matrix expression X (one value per row, a vector of X's number of rows),
/// `sum(X, axis<0>)` down each column (one value per column, a vector of X's number of columns).
template <int K>
struct axis_t {
  static constexpr int value = K;
};
template <int K>
inline constexpr axis_t<K> axis{};

namespace detail {
/// A reduction along axis `Axis` of a matrix expression (`sum(X, axis<1>)`): an *axis point*.
/// To the engine it is a reduction node (a slot whose value the context holds, its adjoint summed
/// in the sink) whose sweeps over a row run inside the loop over its parent's rows
/// (engine::point_loop); to its parent it is a vector over the rows (props::is_point). Along
/// axis 0 its sweeps run down the rows of a block of columns, inside the loop over its
/// parent's columns (engine::down_loop), and to its parent it is a vector over the columns.
template <class Op, int Axis, bool Column = false>
struct axis_op : Op {
  using axis_base = Op;
  static constexpr bool is_point = true;
  /// Met by a matrix as a column (`as_column(sum(X, axis<1>))`, engine::row_loop).
  static constexpr bool is_column_point = Column;
  static constexpr int axis = Axis;
  /// Set by the engine in its copy of the expression: the values of a block of SIMD-width rows
  /// (one T per row; axis 0: columns), which the parent's code reads as one batch
  /// (engine::point_loop, engine::down_loop).
  const void* rows = nullptr;
};

/// Why an axis reduction's argument is rejected (0: it is not).
template <class E, int K>
constexpr int axis_problem() {
  if constexpr (poisoned_v<E>) return 0;
  else if constexpr (!expression<E>) return 1;
  else if constexpr (has_custom_input_v<E>) return 3;
  else if constexpr (!props<E>::is_array || props<E>::rank != 2) return 2;
  else if constexpr (K != 0 && K != 1) return 4;
  else if constexpr (props<E>::reductions > 0) return 6;
  else if constexpr (props<E>::has_column) return 7;
  else if constexpr (props<E>::is_mask) return 8;
  else return 0;
}
}  // namespace detail

/// One entry point per axis reduction; a misuse gives one error naming the function.
#define TAD_AXIS_REDUCTION_FUNCTION(fn, ...)                                                           \
  template <class E, int K>                                                                           \
  constexpr auto fn(const E& e, axis_t<K>) {                                                          \
    constexpr int problem = detail::axis_problem<E, K>();                                             \
    if constexpr (detail::poisoned_v<E>) {                                                            \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 1) {                                                              \
      static_assert(problem != 1, "tad::" #fn "(e, axis<K>): e must be a tad expression");            \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 3) {                                                              \
      static_assert(problem != 3, "tad::custom_gradient(f, g): f must not call tad::" #fn "(e, "      \
                                  "axis<K>): f runs on one element at a time, so no reduction is "    \
                                  "allowed in f");                                                    \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 2) {                                                              \
      static_assert(problem != 2, "tad::" #fn "(e, axis<K>): e must be a matrix expression (rank 2); " \
                                  "for a vector or a scalar, reduce it whole: tad::" #fn "(e)");      \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 4) {                                                              \
      static_assert(problem != 4, "tad::" #fn "(e, axis<K>): a matrix has axes 0 (down the columns) " \
                                  "and 1 (along the rows); K must be 0 or 1");                        \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 6) {                                                              \
      static_assert(problem != 6, "tad::" #fn "(e, axis<K>): e must not contain a reduction (a full " \
                                  "one or another along an axis); not supported yet: compute it in "  \
                                  "its own expression and pass its value as a constant");            \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 8) {                                                              \
      static_assert(problem != 8, "tad::" #fn "(e, axis<K>): e is a mask (a comparison such as X > 0), "\
                                  "not numbers; to count or sum where it holds, reduce "              \
                                  "tad::where(mask, 1.0, 0.0)");                                     \
      return detail::invalid_expression{};                                                            \
    } else if constexpr (problem == 7) {                                                              \
      static_assert(problem != 7, "tad::" #fn "(e, axis<K>): e must not hold a column "               \
                                  "(tad::as_column); not supported yet in a reduction along an axis"); \
      return detail::invalid_expression{};                                                            \
    } else {                                                                                          \
      return __VA_ARGS__;                                                                             \
    }                                                                                                 \
  }

/// Sum along each row of a matrix expression: `sum(X, axis<1>)[r]` is the sum of row r;
/// `sum(X, axis<0>)[j]` the sum of column j (and so for every reduction below).
TAD_AXIS_REDUCTION_FUNCTION(sum, detail::make<detail::axis_op<sum_op, K>>(e))
/// Mean along each row of a matrix expression (NaN for rows of no elements).
TAD_AXIS_REDUCTION_FUNCTION(mean, detail::make<detail::axis_op<mean_op, K>>(e))
/// Maximum of each row; ties share the gradient equally; a matrix with rows but no columns is
/// an error (std::domain_error), as for max(e) (axis<0>: columns but no rows).
TAD_AXIS_REDUCTION_FUNCTION(max, detail::make<detail::axis_op<max_reduce_op, K>>(e))
/// Minimum of each row, as max(e, axis<1>).
TAD_AXIS_REDUCTION_FUNCTION(min, detail::make<detail::axis_op<min_reduce_op, K>>(e))
/// Euclidean norm of each row; gradient zero at a zero row.
TAD_AXIS_REDUCTION_FUNCTION(norm, detail::make<detail::axis_op<norm_op, K>>(e))
/// `log(sum(exp(x)))` of each row, stable (shifted by the row's maximum); -inf for a row of no
/// elements. Two sweeps over a row forward, one backward.
TAD_AXIS_REDUCTION_FUNCTION(logsumexp, detail::make<detail::axis_op<detail::logsumexp_op, K>>(e))
/// Sum of squares of each row: `sum(square(e), axis<1>)` (its own diagnostics, naming squared_norm).
TAD_AXIS_REDUCTION_FUNCTION(squared_norm, sum(square(e), axis<K>))

namespace detail {
/// A reduction along the rows (axis 1) not yet made a column.
template <class V>
concept vector_point = requires { typename V::op_type; } && op_is_point<typename V::op_type>() &&
                       !op_is_column_point<typename V::op_type>() && V::op_type::axis == 1;
template <class Op>
struct column_point_of;
template <class Op, int Axis>
struct column_point_of<axis_op<Op, Axis, false>> {
  using type = axis_op<Op, Axis, true>;
};
}  // namespace detail

/// `as_column(p)` of a reduction along the rows (`sum(X, axis<1>)`, `logsumexp(X, axis<1>)`,
/// `pick(X, labels)`, ...): its value at row r is met by every element of row r of the matrix it
/// is combined with (NumPy's `keepdims=True`, `p[:, None]`): `X - as_column(max(X, axis<1>))`.
/// The point's sweeps over a row run in the loop over that row, just before the row's own code
/// (engine::row_loop), so the row is read from memory once per pass; its gradient is the
/// point's, with the row's summed adjoint. doc/shapes.md, "Columns of reductions".
template <detail::vector_point V>
constexpr auto as_column(const V& p) noexcept {
  using Op = typename detail::column_point_of<typename V::op_type>::type;
  Op op{};
  static_cast<typename V::op_type::axis_base&>(op) = static_cast<const typename V::op_type::axis_base&>(p.op);
  return node<Op, std::remove_cvref_t<decltype(p.arg)>>{p.arg, op};
}

namespace detail {
/// A reduction along axis K as its matrix meets it: along the rows, a column (as_column); down
/// the columns, as it is (a vector meets a matrix as a row).
template <int K, class P>
constexpr auto kept_axis(const P& p) {
  if constexpr (K == 1) return as_column(p); else return p;
}
}  // namespace detail

/// `softmax(e, axis<1>)`: the softmax of each row of the matrix expression e,
/// `exp(e - as_column(logsumexp(e, axis<1>)))` (PyTorch's `softmax(e, dim=1)`); its gradient
/// is `s * (dy - sum(dy * s, axis<1>))` per row. e appears twice, so an expression (not a leaf)
/// is computed twice per element; a row of -inf gives NaN (as PyTorch's does).
/// `softmax(e, axis<0>)`: of each column, `exp(e - logsumexp(e, axis<0>))`.
TAD_AXIS_REDUCTION_FUNCTION(softmax, [&](const auto& ee) { return exp(ee - detail::kept_axis<K>(logsumexp(ee, axis<K>))); }(detail::row_composite_argument(e)))
/// `log_softmax(e, axis<1>)`: `e - as_column(logsumexp(e, axis<1>))`, each row's log-probabilities
/// (axis<0>: each column's).
TAD_AXIS_REDUCTION_FUNCTION(log_softmax, [&](const auto& ee) { return ee - detail::kept_axis<K>(logsumexp(ee, axis<K>)); }(detail::row_composite_argument(e)))

#undef TAD_AXIS_REDUCTION_FUNCTION

namespace detail {
/// Why softmax(e) / log_softmax(e) without an axis rejects e (0: it does not).
template <class E>
constexpr int softmax_problem() {
  if constexpr (poisoned_v<E>) return 0;
  else if constexpr (!expression<E>) return 1;
  else if constexpr (props<E>::rank != 1) return 2;
  else return 0;
}
}  // namespace detail

/// `softmax(e)` of a vector expression: `exp(e - logsumexp(e))`, one distribution over its
/// elements (of a matrix, along each row: `softmax(e, axis<1>)`).
template <class E>
constexpr auto softmax(const E& e) {
  constexpr int problem = detail::softmax_problem<E>();
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (problem != 0) {
    static_assert(problem != 1, "tad::softmax(e): e must be a tad expression");
    static_assert(problem != 2, "tad::softmax(e): e must be a vector expression (one distribution over its "
                                "elements); of a matrix, along each row: tad::softmax(e, tad::axis<1>)");
    return detail::invalid_expression{};
  } else {
    const auto ee = detail::one_node(e);  // read twice: one node (ops/shared.hpp)
    return exp(ee - logsumexp(ee));
  }
}
/// `log_softmax(e)` of a vector expression: `e - logsumexp(e)`.
template <class E>
constexpr auto log_softmax(const E& e) {
  constexpr int problem = detail::softmax_problem<E>();
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (problem != 0) {
    static_assert(problem != 1, "tad::log_softmax(e): e must be a tad expression");
    static_assert(problem != 2, "tad::log_softmax(e): e must be a vector expression (one distribution over "
                                "its elements); of a matrix, along each row: tad::log_softmax(e, tad::axis<1>)");
    return detail::invalid_expression{};
  } else {
    const auto ee = detail::one_node(e);  // read twice: one node (ops/shared.hpp)
    return ee - logsumexp(ee);
  }
}

}  // namespace tad
