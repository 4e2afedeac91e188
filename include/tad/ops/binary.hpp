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

/// `max(a, b)`: NaN if either is NaN. The gradient as PyTorch's `maximum`: all of it to the
/// larger, half to each at a tie, and all of it to both where either is NaN (no comparison holds).
struct max_op {
  static constexpr std::string_view name = "max";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return math::max(a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto) {
    using V = decltype(a);
    const V zero_v = simd::splat<V>(0);
    const V shared = simd::select(a == b, dy * simd::splat<V>(0.5), dy);
    return adjoints{simd::select(a < b, zero_v, shared), simd::select(a > b, zero_v, shared)};
  }
};

/// `min(a, b)`: NaN if either is NaN. The gradient as PyTorch's `minimum`: all of it to the
/// smaller, half to each at a tie, and all of it to both where either is NaN.
struct min_op {
  static constexpr std::string_view name = "min";
  TAD_INLINE static constexpr auto forward(auto a, auto b) { return math::min(a, b); }
  TAD_INLINE static constexpr auto backward(auto dy, auto a, auto b, auto) {
    using V = decltype(a);
    const V zero_v = simd::splat<V>(0);
    const V shared = simd::select(a == b, dy * simd::splat<V>(0.5), dy);
    return adjoints{simd::select(a > b, zero_v, shared), simd::select(a < b, zero_v, shared)};
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
                        "one must be an expression; wrap data (a std::vector, a span, an array) in "   \
                        "tad::constant(data) or tad::var<\"name\">(data)");                             \
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
