#pragma once
/// Reductions of an array expression to a scalar: sum, mean, max, min, norm, logsumexp
/// (stable), and the composed squared_norm and dot. Along an axis: ops/axis_reductions.hpp;
/// pick and the cross-entropies: ops/cross_entropy.hpp.

#include <tad/core/expression.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/elementwise.hpp>
#include <tad/ops/make.hpp>
#include <tad/ops/reduction_ops.hpp>
#include <tad/simd/batch.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {

/// The length of a sum's argument, as a scalar leaf (for pulled-out loop invariants). It is
/// taken when the sum is built: the argument's arrays are bound then, and an evaluation checks
/// that they agree (bind_extents) before this is read.
struct length_leaf {
  using tad_kind = leaf_kind;
  using value_type = void;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  static constexpr bool is_length = true;
  std::size_t n = 0;
};

/// The number of rows (Rows) or columns of the first matrix leaf of e (0 if it has none).
template <bool Rows, class E>
constexpr std::size_t first_matrix_extent(const E& e) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (E::is_array && leaf_rank<E>() == 2) return Rows ? e.rows : e.cols; else return 0;
  } else if constexpr (props<E>::is_reduction) {
    return 0;
  } else {
    std::size_t n = 0;
    bool found = false;
    static_for<E::arity>([&](auto k) {
      if (!found && props<child_t<k.value, E>>::rank == 2) {
        n = first_matrix_extent<Rows>(child<k.value>(e));
        found = true;
      }
    });
    return n;
  }
}

/// The number of elements of the array expression e: the length of its first array leaf of
/// e's rank (0 if it has none). A vector broadcast across a matrix's rows does not count: the
/// result has the matrix's elements.
template <class E>
constexpr std::size_t first_array_length(const E& e) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (E::is_array) return e.size; else return 0;
  } else if constexpr (props<E>::is_point && !props<E>::is_column_point) {
    // One element per row (axis 1) or per column (axis 0).
    return first_matrix_extent<E::op_type::axis == 1>(e.arg);
  } else if constexpr (props<E>::is_reduction) {
    return 0;
  } else {
    std::size_t n = 0;
    bool found = false;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      if (!found && props<C>::is_array && props<C>::rank == props<E>::rank) {
        n = first_array_length(child<k.value>(e));
        found = true;
      }
    });
    return n;
  }
}

/// `n * s`, but 0 for n == 0 whatever s is (the sum of no terms).
struct length_times_op {
  static constexpr std::string_view name = "length*";
  static constexpr auto forward(auto n, auto s) {
    using V = decltype(s);
    return simd::select(n == simd::splat<V>(0), simd::splat<V>(0), n * s);
  }
  static constexpr auto backward(auto dy, auto n, auto, auto) { return adjoints{zero{}, dy * n}; }
};

/// A scalar term that may leave a sum: no arrays, no reductions, not a mask.
template <class E>
inline constexpr bool loop_free_v = !props<E>::is_array && !props<E>::is_mask && props<E>::reductions == 0 && !props<E>::has_column;

template <class Op, class S>
constexpr auto pulled_out(const S& s, std::size_t n) {
  if constexpr (std::is_same_v<Op, sum_op>) return make<length_times_op>(length_leaf{n}, s); else return s;
}

/// sum and mean are linear: loop-free terms and factors leave them (`sum(a * x - c)` is
/// `a * sum(x) - n * c`), so the loop computes only what depends on the element.
template <class Op, class E>
constexpr auto linear_reduce(const E& e) {
  if constexpr (is_leaf_v<E>) {
    return make<Op>(e);
  } else {
    using O = typename E::op_type;
    if constexpr (E::arity == 2 && (std::is_same_v<O, add_op> || std::is_same_v<O, sub_op> ||
                                    std::is_same_v<O, mul_op>)) {
      using L = std::remove_cvref_t<decltype(e.lhs)>;
      using R = std::remove_cvref_t<decltype(e.rhs)>;
      if constexpr (std::is_same_v<O, mul_op> && props<L>::is_array && loop_free_v<R>) {
        return make<mul_op>(linear_reduce<Op>(e.lhs), e.rhs);
      } else if constexpr (std::is_same_v<O, mul_op> && loop_free_v<L> && props<R>::is_array) {
        return make<mul_op>(e.lhs, linear_reduce<Op>(e.rhs));
      } else if constexpr (std::is_same_v<O, mul_op>) {
        return make<Op>(e);
      } else if constexpr (props<L>::is_array && loop_free_v<R>) {
        return make<O>(linear_reduce<Op>(e.lhs), pulled_out<Op>(e.rhs, first_array_length(e.lhs)));
      } else if constexpr (loop_free_v<L> && props<R>::is_array) {
        return make<O>(pulled_out<Op>(e.lhs, first_array_length(e.rhs)), linear_reduce<Op>(e.rhs));
      } else {
        return make<Op>(e);
      }
    } else if constexpr (std::is_same_v<O, neg_op>) {
      return make<neg_op>(linear_reduce<Op>(e.arg));
    } else {
      return make<Op>(e);
    }
  }
}

/// Marks logsumexp in reduce: `m + log(sum(exp(e - m)))` with m = lse_shift(e).
struct lse_op_marker {};

template <class Op, class E>
constexpr auto reduce(const E& e) {
  if constexpr (std::is_same_v<Op, lse_op_marker>) {
    const auto m = make<lse_shift_op>(e);
    return m + log(reduce<sum_op>(exp(e - m)));
  } else if constexpr (std::is_same_v<Op, sum_op> || std::is_same_v<Op, mean_op>) {
    return linear_reduce<Op>(e);
  } else {
    return make<Op>(e);
  }
}

/// Why a reduction's argument is rejected (0: it is not; 3: it is inside a custom_gradient's
/// forward, whose inputs are scalar placeholders, checked before "not an array").
template <class E>
constexpr int reduction_problem() {
  if constexpr (poisoned_v<E>) return 0;
  else if constexpr (!expression<E>) return 1;
  else if constexpr (has_custom_input_v<E>) return 3;
  else if constexpr (!props<E>::is_array && props<E>::has_column) return 4;
  else if constexpr (!props<E>::is_array) return 2;
  else if constexpr (props<E>::is_mask) return 5;
  else return 0;
}
}  // namespace detail

/// One entry point per reduction; a misuse gives one error naming the function.
#define TAD_REDUCTION_FUNCTION(fn, op)                                                              \
  template <class E>                                                                                \
  constexpr auto fn(const E& e) {                                                                   \
    constexpr int problem = detail::reduction_problem<E>();                                         \
    if constexpr (detail::poisoned_v<E>) {                                                          \
      return detail::invalid_expression{};                                                          \
    } else if constexpr (problem == 1) {                                                            \
      static_assert(problem != 1, "tad::" #fn "(e): e must be a tad expression");                   \
      return detail::invalid_expression{};                                                          \
    } else if constexpr (problem == 2) {                                                            \
      static_assert(problem != 2, "tad::" #fn "(e): e must be an array expression, not a scalar");  \
      return detail::invalid_expression{};                                                          \
    } else if constexpr (problem == 4) {                                                            \
      static_assert(problem != 4, "tad::" #fn "(e): e holds a column (tad::as_column) but no "     \
                                  "matrix; a column is one value per row of the matrix it is "     \
                                  "combined with, so combine it with one: " #fn "(X * as_column(c))"); \
      return detail::invalid_expression{};                                                          \
    } else if constexpr (problem == 5) {                                                            \
      static_assert(problem != 5, "tad::" #fn "(e): e is a mask (a comparison such as x > 0), not "  \
                                  "numbers; to count or sum where it holds, reduce "                \
                                  "tad::where(mask, 1.0, 0.0)");                                   \
      return detail::invalid_expression{};                                                          \
    } else if constexpr (problem == 3) {                                                            \
      static_assert(problem != 3, "tad::custom_gradient(f, g): f must not call tad::" #fn "(e): f " \
                                  "runs on one element at a time, so no reduction is allowed in "   \
                                  "f. Compute the reduction outside and pass it to the custom "     \
                                  "gradient as an input");                                          \
      return detail::invalid_expression{};                                                          \
    } else {                                                                                        \
      return detail::reduce<op>(e);                                                                 \
    }                                                                                               \
  }

/// Sum of an array expression (0 for an empty array).
TAD_REDUCTION_FUNCTION(sum, sum_op)
/// Mean of an array expression (NaN for an empty array).
TAD_REDUCTION_FUNCTION(mean, mean_op)
/// Maximum of an array expression; ties share the gradient equally.
TAD_REDUCTION_FUNCTION(max, max_reduce_op)
/// Minimum of an array expression; ties share the gradient equally.
TAD_REDUCTION_FUNCTION(min, min_reduce_op)
/// Euclidean norm; gradient zero at the zero vector.
TAD_REDUCTION_FUNCTION(norm, norm_op)
/// `log(sum(exp(x)))`, computed as `m + log(sum(exp(x - m)))` with m the maximum (0 if not
/// finite); -inf for an empty array. Three loops: maximum, sum, gradient.
TAD_REDUCTION_FUNCTION(logsumexp, detail::lse_op_marker)

#undef TAD_REDUCTION_FUNCTION

/// Sum of squares.
template <class E> constexpr auto squared_norm(const E& e) { return sum(square(e)); }
/// Inner product `sum(a * b)`.
template <class A, class B> constexpr auto dot(const A& a, const B& b) { return sum(a * b); }

}  // namespace tad
