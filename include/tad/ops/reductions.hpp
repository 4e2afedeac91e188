#pragma once
/// Reductions of an array expression to a scalar: sum, mean, max, min, norm, and the composed
/// dot, squared_norm, logsumexp (stable) and softmax_cross_entropy.
///
/// A reduction op accumulates a two-slot state per SIMD lane and per scalar tail, merges states,
/// finishes them into a value and an auxiliary number, and gives the elementwise adjoint of its
/// argument. `needs_value` says whether that adjoint depends on the reduction's own value (if
/// not, the engine may fuse its forward and backward loops).

#include <tad/core/expression.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/elementwise.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>
#include <tad/simd/math.hpp>

#include <cstddef>
#include <limits>
#include <ranges>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tad {

/// Per-lane accumulator of a reduction.
template <class V>
struct reduction_state {
  V a;
  V b;
};
/// A finished reduction: its value and an auxiliary number (e.g. the count of maxima).
template <class T>
struct reduction_result {
  T value;
  T aux;
};

namespace detail {
struct reduction_base {
  static constexpr bool is_reduction = true;
};
template <class V>
constexpr reduction_state<V> state_of(double a, double b) {
  return {simd::splat<V>(a), simd::splat<V>(b)};
}
}  // namespace detail

struct sum_op : detail::reduction_base {
  static constexpr std::string_view name = "sum";
  static constexpr bool needs_value = false;
  template <class V> static constexpr reduction_state<V> init() { return detail::state_of<V>(0, 0); }
  template <class V> static constexpr void accumulate(reduction_state<V>& s, const V& v) { s.a = s.a + v; }
  /// accumulate(s, x * y), rounded once (eval/contract.hpp).
  template <class V> static constexpr void accumulate_product(reduction_state<V>& s, const V& x, const V& y) {
    s.a = simd::mul_add(x, y, s.a);
  }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) { s.a = s.a + o.a; }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t) { return {s.a, T(0)}; }
  template <class V, class T>
  static constexpr V backward(const V& dr, const V&, T, T, std::size_t) { return dr; }
};

/// `mean` of an empty array is NaN.
struct mean_op : detail::reduction_base {
  static constexpr std::string_view name = "mean";
  static constexpr bool needs_value = false;
  template <class V> static constexpr reduction_state<V> init() { return detail::state_of<V>(0, 0); }
  template <class V> static constexpr void accumulate(reduction_state<V>& s, const V& v) { s.a = s.a + v; }
  /// accumulate(s, x * y), rounded once (eval/contract.hpp).
  template <class V> static constexpr void accumulate_product(reduction_state<V>& s, const V& x, const V& y) {
    s.a = simd::mul_add(x, y, s.a);
  }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) { s.a = s.a + o.a; }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t n) {
    return {s.a / static_cast<T>(n), T(0)};
  }
  template <class V, class T>
  static constexpr V backward(const V& dr, const V&, T, T, std::size_t n) { return dr / simd::splat<V>(n); }
};

namespace detail {
/// max (Less = false) or min (Less = true) with the number of elements that attain it, so ties
/// share the gradient equally. NaN anywhere gives NaN, and then the NaN elements share the
/// gradient (PyTorch's evenly_distribute_backward): the state counts NaNs once it holds one.
template <bool Less>
struct extremum_base : reduction_base {
  static constexpr bool needs_value = true;
  static constexpr bool rejects_empty = true;
  template <class V> static constexpr auto better(const V& x, const V& y) { if constexpr (Less) return x < y; else return x > y; }
  template <class V> static constexpr reduction_state<V> init() {
    constexpr double inf = std::numeric_limits<double>::infinity();
    return state_of<V>(Less ? inf : -inf, 0);
  }
  template <class V> static constexpr void accumulate(reduction_state<V>& s, const V& v) {
    merge(s, reduction_state<V>{v, simd::splat<V>(1)});
  }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) {
    const auto o_nan = math::isnan(o.a);
    const auto s_nan = math::isnan(s.a);
    const auto take = better(o.a, s.a) | (o_nan & !s_nan);  // a larger value, or a first NaN
    const auto add = (o.a == s.a) | (o_nan & s_nan);        // a tie, or one more NaN
    s.b = simd::select(take, o.b, simd::select(add, s.b + o.b, s.b));
    s.a = simd::select(take, o.a, s.a);
  }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t) { return {s.a, s.b}; }
  template <class V, class T>
  static constexpr V backward(const V& dr, const V& v, T value, T count, std::size_t) {
    // NOLINTNEXTLINE(misc-redundant-expression): value != value is the constexpr NaN test
    const auto hit = value != value ? math::isnan(v) : v == simd::splat<V>(value);
    return simd::select(hit, dr / simd::splat<V>(count), simd::splat<V>(0));
  }
};
}  // namespace detail

/// `max` of an array; empty arrays are an error (std::domain_error).
struct max_reduce_op : detail::extremum_base<false> {
  static constexpr std::string_view name = "max";
};
/// `min` of an array; empty arrays are an error (std::domain_error).
struct min_reduce_op : detail::extremum_base<true> {
  static constexpr std::string_view name = "min";
};

/// Euclidean norm; its gradient at the zero vector is zero (PyTorch).
struct norm_op : detail::reduction_base {
  static constexpr std::string_view name = "norm";
  static constexpr bool needs_value = true;
  template <class V> static constexpr reduction_state<V> init() { return detail::state_of<V>(0, 0); }
  template <class V> static constexpr void accumulate(reduction_state<V>& s, const V& v) { s.a = simd::mul_add(v, v, s.a); }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) { s.a = s.a + o.a; }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t) {
    return {math::sqrt(s.a), T(0)};
  }
  template <class V, class T>
  static constexpr V backward(const V& dr, const V& v, T value, T, std::size_t) {
    const T inv = value == T(0) ? T(0) : T(1) / value;
    return dr * v * simd::splat<V>(inv);
  }
};

namespace detail {
/// The shift of a stable logsumexp: the maximum, or 0 where the maximum is not finite.
/// No gradient flows through it (the shift cancels in the derivative).
struct lse_shift_op : reduction_base {
  static constexpr std::string_view name = "lse_shift";
  static constexpr bool differentiable = false;
  static constexpr bool needs_value = true;
  template <class V> static constexpr reduction_state<V> init() {
    return state_of<V>(-std::numeric_limits<double>::infinity(), 0);
  }
  /// The maximum, one max instruction, whatever it makes of a NaN: a row or array holding a NaN
  /// needs no particular shift, since exp(NaN - m) makes the sum, the value and the gradient NaN
  /// whatever m is (and a NaN shift is not finite, so 0).
  template <class V> static constexpr void accumulate(reduction_state<V>& s, const V& v) {
    s.a = simd::max_fast(s.a, v);
  }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) { accumulate(s, o.a); }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t) {
    const bool finite = s.a - s.a == T(0);
    return {finite ? s.a : T(0), T(0)};
  }
};

/// logsumexp along an axis (`logsumexp(X, axis<1>)`): each row is swept twice, first for the
/// shift m (lse_shift_op: the maximum, 0 if it is not finite), then for `sum(exp(x - m))`
/// (engine::sweep); the value is `m + log(sum)`, -inf for a row of no elements. The state's `b`
/// holds m during the second sweep. Its adjoint, `dr * exp(x - value)`, is the row's softmax.
struct logsumexp_op : reduction_base {
  static constexpr std::string_view name = "logsumexp";
  static constexpr bool needs_value = true;
  /// Two forward sweeps per row: the shift, then the shifted sum.
  static constexpr bool shifted = true;
  template <class V> static constexpr reduction_state<V> init() { return state_of<V>(0, 0); }
  template <class V> TAD_INLINE static constexpr void accumulate(reduction_state<V>& s, const V& v) {
    s.a = s.a + math::exp(v - s.b);
  }
  template <class V> static constexpr void merge(reduction_state<V>& s, const reduction_state<V>& o) { s.a = s.a + o.a; }
  template <class T> static constexpr reduction_result<T> finish(const reduction_state<T>& s, std::size_t) {
    return {s.b + math::log(s.a), T(0)};
  }
  template <class V, class T>
  TAD_INLINE static constexpr V backward(const V& dr, const V& v, T value, T, std::size_t) {
    return dr * math::exp(v - simd::splat<V>(value));
  }
  /// accumulate, returning the term it added, exp(v - shift): what a row's sweep keeps in the
  /// gradient of a matrix variable that is the argument itself (plan::stash_var).
  template <class V> TAD_INLINE static constexpr V accumulate_kept(reduction_state<V>& s, const V& v) {
    const V e = math::exp(v - s.b);
    s.a = s.a + e;
    return e;
  }
  /// What turns a kept term into the gradient, backward(dr, v, value) = dr exp(v - value) =
  /// kept * (dr exp(shift - value)): the factor in parentheses, once per row.
  template <class T> static constexpr T kept_scale(T dr, T value, T shift) { return dr * math::exp(shift - value); }
};

/// The elementwise adjoint of a reduction along axis 0 (`sum(X, axis<0>)`), whose value and
/// auxiliary number differ from lane to lane (a lane is a column, engine::down_loop): Op's
/// `backward` with those numbers as batches. One T is Op's own backward.
template <class Op, class V>
TAD_INLINE constexpr V lane_backward(const V& dr, const V& v, const V& value, const V& aux, std::size_t n) {
  if constexpr (!simd::is_batch_v<V>) {
    return Op::backward(dr, v, value, aux, n);
  } else if constexpr (std::is_base_of_v<mean_op, Op>) {
    return dr / simd::splat<V>(n);
  } else if constexpr (std::is_base_of_v<sum_op, Op>) {
    return dr;
  } else if constexpr (std::is_base_of_v<extremum_base<false>, Op> || std::is_base_of_v<extremum_base<true>, Op>) {
    // As Op::backward: the elements equal to the extremum, or the NaNs where it is NaN (no
    // element equals a NaN).
    const auto hit = (v == value) | (math::isnan(value) & math::isnan(v));
    return simd::select(hit, dr / aux, simd::splat<V>(0));
  } else if constexpr (std::is_base_of_v<norm_op, Op>) {
    const V inv = simd::select(value == simd::splat<V>(0), simd::splat<V>(0), simd::splat<V>(1) / value);
    return dr * v * inv;
  } else {
    static_assert(std::is_base_of_v<logsumexp_op, Op>, "tad: internal: a reduction along axis 0 without a lane rule");
    return dr * math::exp(v - value);
  }
}

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
TAD_AXIS_REDUCTION_FUNCTION(softmax, exp(e - detail::kept_axis<K>(logsumexp(e, axis<K>))))
/// `log_softmax(e, axis<1>)`: `e - as_column(logsumexp(e, axis<1>))`, each row's log-probabilities
/// (axis<0>: each column's).
TAD_AXIS_REDUCTION_FUNCTION(log_softmax, e - detail::kept_axis<K>(logsumexp(e, axis<K>)))

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
    return exp(e - logsumexp(e));
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
    return e - logsumexp(e);
  }
}

/// Sum of squares.
template <class E> constexpr auto squared_norm(const E& e) { return sum(square(e)); }
/// Inner product `sum(a * b)`.
template <class A, class B> constexpr auto dot(const A& a, const B& b) { return sum(a * b); }

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
    return sum(t, axis<1>) * logsumexp(z, axis<1>) - sum(t * z, axis<1>);
  } else {
    return sum(t) * logsumexp(z) - dot(t, z);
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
    return logsumexp(z, axis<1>) - pick(z, std::forward<R>(labels));
  }
}

}  // namespace tad
