#pragma once
/// Comparisons (non-differentiable masks), mask logic, `where(mask, a, b)` and `clamp`.

#include <tad/core/expression.hpp>
#include <tad/core/parameter.hpp>
#include <tad/core/zero.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>
#include <tad/simd/math.hpp>

#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace tad {

namespace detail {
struct mask_op_base {
  static constexpr bool differentiable = false;
  static constexpr bool is_mask = true;
};
}  // namespace detail

struct less_op : detail::mask_op_base {
  static constexpr std::string_view name = "<";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a < b; }
};
struct less_equal_op : detail::mask_op_base {
  static constexpr std::string_view name = "<=";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a <= b; }
};
struct greater_op : detail::mask_op_base {
  static constexpr std::string_view name = ">";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a > b; }
};
struct greater_equal_op : detail::mask_op_base {
  static constexpr std::string_view name = ">=";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a >= b; }
};
struct equal_op : detail::mask_op_base {
  static constexpr std::string_view name = "==";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return a == b; }
};
/// Unordered: true when either side is NaN, as `!=` on scalars (xsimd 8.1's batch `!=` is
/// ordered, false for NaN, so batches negate `==`).
struct not_equal_op : detail::mask_op_base {
  static constexpr std::string_view name = "!=";
  TAD_INLINE static constexpr auto forward(auto a, auto b) {
    if constexpr (simd::is_batch_v<decltype(a)>) return ~(a == b); else return a != b;
  }
};
struct and_op : detail::mask_op_base {
  static constexpr std::string_view name = "&&";
  TAD_INLINE static constexpr auto forward(auto a, auto b) {
    if constexpr (simd::is_batch_bool_v<decltype(a)>) return a & b; else return a && b;
  }
};
struct or_op : detail::mask_op_base {
  static constexpr std::string_view name = "||";
  TAD_INLINE static constexpr auto forward(auto a, auto b) {
    if constexpr (simd::is_batch_bool_v<decltype(a)>) return a | b; else return a || b;
  }
};
struct not_op : detail::mask_op_base {
  static constexpr std::string_view name = "!";
  TAD_INLINE static constexpr auto forward(auto a) {
    if constexpr (simd::is_batch_bool_v<decltype(a)>) return ~a; else return !a;
  }
};

/// `where(m, a, b)`: `a` where the mask holds, else `b`; the gradient goes to the chosen side.
struct where_op {
  static constexpr std::string_view name = "where";
  TAD_INLINE static constexpr auto forward(auto m, auto a, auto b) { return simd::select(m, a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto m, auto, auto, auto) {
    const auto z = simd::splat<decltype(dy)>(0);
    return adjoints{zero{}, simd::select(m, dy, z), simd::select(m, z, dy)};
  }
};

/// `clamp(x, lo, hi) = min(max(x, lo), hi)` (PyTorch); NaN in x or a bound gives NaN. The gradient
/// is the derivative of that formula, with PyTorch's subgradient at the bounds: x gets it on
/// [lo, hi] including the bounds (none where x is NaN), lo where x < lo, hi where the result is
/// hi by the upper clamp (x > hi, or everywhere x < lo when lo > hi). Bounds that are parameters
/// (numbers, constant_ref, lit) must satisfy lo <= hi: checked before anything runs (as
/// clip_gradient); bounds computed by expressions follow the formula (doc/semantics.md).
struct clamp_op {
  static constexpr std::string_view name = "clamp";
  TAD_INLINE static constexpr auto forward(auto x, auto lo, auto hi) {
    return math::min(math::max(x, lo), hi);
  }
  TAD_INLINE static constexpr auto backward(auto dy, auto x, auto lo, auto hi, auto) {
    const auto z = simd::splat<decltype(dy)>(0);
    const auto below = x < lo;
    return adjoints{simd::select((x >= lo) & (x <= hi), dy, z), simd::select(below & (lo <= hi), dy, z),
                    simd::select((x > hi) | (below & (lo > hi)), dy, z)};
  }
  /// Called by the engine before any loop (and by clamp() for numbers): parameter bounds only.
  template <class T, class N>
  static constexpr void validate(const N& n) {
    using L = std::remove_cvref_t<decltype(n.b)>;
    using H = std::remove_cvref_t<decltype(n.c)>;
    if constexpr (detail::is_parameter_leaf_v<L> && detail::is_parameter_leaf_v<H>) {
      if (!(detail::parameter_value<T>(n.b) <= detail::parameter_value<T>(n.c)))
        throw std::invalid_argument("tad::clamp(x, lo, hi): lo must not exceed hi, and neither may be NaN");
    }
  }
};

namespace detail {
template <class E>
inline constexpr bool is_mask_expr_v = [] {
  if constexpr (expression<E>) return props<E>::is_mask; else return false;
}();
template <class L, class R>
concept comparable = operand<L> && operand<R> && (expression<L> || expression<R>) &&
                     !is_mask_expr_v<L> && !is_mask_expr_v<R>;
}  // namespace detail

template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator<(const L& l, const R& r) { return detail::make_from<less_op>(l, r); }
template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator<=(const L& l, const R& r) { return detail::make_from<less_equal_op>(l, r); }
template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator>(const L& l, const R& r) { return detail::make_from<greater_op>(l, r); }
template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator>=(const L& l, const R& r) { return detail::make_from<greater_equal_op>(l, r); }
template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator==(const L& l, const R& r) { return detail::make_from<equal_op>(l, r); }
template <class L, class R> requires detail::comparable<L, R>
constexpr auto operator!=(const L& l, const R& r) { return detail::make_from<not_equal_op>(l, r); }
/// `e < data` with data that is not a tad expression or a number (a std::vector, say): one
/// error saying to wrap it, instead of every operator< the compiler knows as candidates.
TAD_DETAIL_REJECT_DATA_OPERAND(<)
TAD_DETAIL_REJECT_DATA_OPERAND(<=)
TAD_DETAIL_REJECT_DATA_OPERAND(>)
TAD_DETAIL_REJECT_DATA_OPERAND(>=)
TAD_DETAIL_REJECT_DATA_OPERAND(==)
TAD_DETAIL_REJECT_DATA_OPERAND(!=)

template <class L, class R> requires(detail::is_mask_expr_v<L> && detail::is_mask_expr_v<R>)
constexpr auto operator&&(const L& l, const R& r) { return detail::make<and_op>(l, r); }
template <class L, class R> requires(detail::is_mask_expr_v<L> && detail::is_mask_expr_v<R>)
constexpr auto operator||(const L& l, const R& r) { return detail::make<or_op>(l, r); }
template <class M> requires detail::is_mask_expr_v<M>
constexpr auto operator!(const M& m) { return detail::make<not_op>(m); }

/// `where(mask, a, b)`; `mask` is a comparison of expressions, `a` and `b` expressions or numbers.
template <class M, class A, class B>
constexpr auto where(const M& m, const A& a, const B& b) {
  constexpr bool ok = detail::is_mask_expr_v<M> && operand<A> && operand<B>;
  if constexpr (detail::poisoned_v<M, A, B>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::where(mask, a, b): mask must be a comparison of tad expressions and "
                      "a, b expressions or numbers");
    return detail::invalid_expression{};
  } else {
    return detail::make<where_op>(m, detail::as_expr(a), detail::as_expr(b));
  }
}

/// `clamp(x, lo, hi)`: `min(max(x, lo), hi)`. Throws std::invalid_argument when number bounds have
/// lo > hi or a NaN (here; for constant_ref bounds at evaluation); literal bounds: a compile error.
template <class X, class L, class H>
constexpr auto clamp(const X& x, const L& lo, const H& hi) {
  constexpr bool ok = expression<X> && operand<L> && operand<H>;
  if constexpr (detail::poisoned_v<X, L, H>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::clamp(x, lo, hi): x must be a tad expression, lo and hi expressions or numbers");
    return detail::invalid_expression{};
  } else {
    using LE = detail::as_expr_t<L>;
    using HE = detail::as_expr_t<H>;
    if constexpr (detail::is_literal_v<LE> && detail::is_literal_v<HE>) {
      static_assert(LE::template as<long double>() <= HE::template as<long double>(),
                    "tad::clamp(x, lo, hi): lo must not exceed hi");
    }
    auto n = detail::make_from<clamp_op>(x, lo, hi);
    if constexpr (!detail::poisoned_v<decltype(n)> && !detail::is_constant_ref_v<LE> &&
                  !detail::is_constant_ref_v<HE>) {
      clamp_op::validate<long double>(n);  // number bounds are known now: fail at construction
    }
    return n;
  }
}

}  // namespace tad
