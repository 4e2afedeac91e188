#pragma once
/// The rules of the reductions: a two-slot state per SIMD lane and per scalar tail, merged
/// across lanes, finished into a value and an auxiliary number, and the elementwise adjoint of
/// the argument (sum, mean, max, min, norm, logsumexp's shift and sum).
/// `needs_value` says whether that adjoint depends on the reduction's own value (if not, the
/// engine may fuse its forward and backward loops).
///
/// What the loops ask of a reduction, by concept rather than by name (eval/engine/ names no op):
/// - `backward(dr, v, value, aux, n)`: the adjoint of one element (or batch) v. value and aux
///   are one T, or for a reduction along axis 0 (engine::down_loop) a batch: one per lane, a
///   lane being a column.
/// - `merges_by_sum`: merge adds the `a` slots and ignores `b`, so the lanes of a batch state
///   may be merged by one horizontal sum (engine::merged_state).
/// - `shift_op`: a shifted reduction's first sweep (logsumexp's maximum), whose finished value
///   sits in the state's `b` while the second sweep accumulates (engine::sweep).

#include <tad/config.hpp>
#include <tad/ops/reduction_concepts.hpp>
#include <tad/simd/batch.hpp>
#include <tad/simd/math.hpp>

#include <cstddef>
#include <limits>
#include <string_view>
#include <type_traits>

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
  static constexpr bool merges_by_sum = true;
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
  static constexpr bool merges_by_sum = true;
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
  /// The elements equal to the extremum share dr, or the NaNs where it is NaN (no element
  /// equals a NaN).
  template <class V, class T>
  static constexpr V backward(const V& dr, const V& v, T value, T count, std::size_t) {
    if constexpr (simd::is_batch_v<T>) {  // one extremum per lane
      const auto hit = (v == value) | (math::isnan(value) & math::isnan(v));
      return simd::select(hit, dr / count, simd::splat<V>(0));
    } else {
      // NOLINTNEXTLINE(misc-redundant-expression): value != value is the constexpr NaN test
      const auto hit = value != value ? math::isnan(v) : v == simd::splat<V>(value);
      return simd::select(hit, dr / simd::splat<V>(count), simd::splat<V>(0));
    }
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
    if constexpr (simd::is_batch_v<T>) {  // one norm per lane
      const V inv = simd::select(value == simd::splat<V>(0), simd::splat<V>(0), simd::splat<V>(1) / value);
      return dr * v * inv;
    } else {
      const T inv = value == T(0) ? T(0) : T(1) / value;
      return dr * v * simd::splat<V>(inv);
    }
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
  using shift_op = lse_shift_op;
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
    if constexpr (simd::is_batch_v<T>) return dr * math::exp(v - value);  // one value per lane
    else return dr * math::exp(v - simd::splat<V>(value));
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

}  // namespace detail

}  // namespace tad
