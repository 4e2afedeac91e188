#pragma once
/// Binary elementwise functions: pow (any exponent), min, max.

#include <tad/core/expression.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>
#include <tad/simd/math.hpp>

#include <string_view>

namespace tad {

/// `pow(a, b)`. As PyTorch: d/da is 0 where b == 0, d/db is 0 where a == 0 and b >= 0.
struct pow_op {
  static constexpr std::string_view name = "pow";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return math::pow(a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto y) {
    using V = decltype(a);
    const V zero_v = simd::splat<V>(0);
    V da = simd::select(b == zero_v, zero_v, dy * b * math::pow(a, b - simd::splat<V>(1)));
    V db = simd::select((a == zero_v) & (b >= zero_v), zero_v, dy * y * math::log(a));
    return adjoints{da, db};
  }
};

/// `max(a, b)`: NaN if either is NaN; at a tie each side gets half the gradient (PyTorch).
struct max_op {
  static constexpr std::string_view name = "max";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return math::max(a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto) {
    using V = decltype(a);
    const V zero_v = simd::splat<V>(0);
    const V half = dy * simd::splat<V>(0.5);
    V da = simd::select(a > b, dy, simd::select(a == b, half, zero_v));
    V db = simd::select(b > a, dy, simd::select(a == b, half, zero_v));
    return adjoints{da, db};
  }
};

/// `min(a, b)`: NaN if either is NaN; at a tie each side gets half the gradient (PyTorch).
struct min_op {
  static constexpr std::string_view name = "min";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return math::min(a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto) {
    using V = decltype(a);
    const V zero_v = simd::splat<V>(0);
    const V half = dy * simd::splat<V>(0.5);
    V da = simd::select(a < b, dy, simd::select(a == b, half, zero_v));
    V db = simd::select(b < a, dy, simd::select(a == b, half, zero_v));
    return adjoints{da, db};
  }
};

#define TAD_BINARY_FUNCTION(fn, op)                                                                    \
  template <class A, class B>                                                                          \
  constexpr auto fn(const A& a, const B& b) {                                                          \
    constexpr bool ok = operand<A> && operand<B> && (expression<A> || expression<B>);                  \
    if constexpr (detail::poisoned_v<A, B>) {                                                          \
      return detail::invalid_expression{};                                                             \
    } else if constexpr (!ok) {                                                                        \
      static_assert(ok, "tad::" #fn "(a, b): a and b must be tad expressions or numbers, and at least " \
                        "one must be an expression");                                                  \
      return detail::invalid_expression{};                                                             \
    } else {                                                                                           \
      return detail::make_from<op>(a, b);                                                              \
    }                                                                                                  \
  }

TAD_BINARY_FUNCTION(pow, pow_op)
TAD_BINARY_FUNCTION(max, max_op)
TAD_BINARY_FUNCTION(min, min_op)

#undef TAD_BINARY_FUNCTION

}  // namespace tad
