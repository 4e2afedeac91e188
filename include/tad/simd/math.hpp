#pragma once
/// Elementary functions for `float`, `double` and `tad::simd::batch`, usable in constant
/// evaluation: the one entry point the ops use.
///
/// Backends: batches go to `tad::simd` (xsimd); scalars go to `std::` at run time and to
/// tad's own double-double fallbacks (tad/simd/detail/constexpr_math.hpp) in constant
/// evaluation. See doc/math.md for accuracy, ranges, and the xsimd 8.1 results patched here.

#include <tad/simd/batch.hpp>
#include <tad/simd/detail/constexpr_math.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tad::math {

namespace detail {
/// `float`, `double`, or a `tad::simd::batch`.
template <class X>
concept floating = std::is_same_v<X, float> || std::is_same_v<X, double> || simd::is_batch_v<X>;

/// xsimd 8.1's pow(x, y) is exp(y * log|x|) plus sign fixes; this restores std::pow's results
/// for zero, infinite and NaN arguments, |x| == 1, and negative x with |y| >= 2^53.
template <class X>
X pow_special_cases(X x, X y, X r) noexcept {
  using T = simd::scalar_of_t<X>;
  const X zero = simd::splat<X>(0), one = simd::splat<X>(1), half = simd::splat<X>(0.5);
  const X inf = simd::splat<X>(std::numeric_limits<T>::infinity());
  const X ax = simd::abs(x), ay = simd::abs(y);
  const auto y_int = simd::floor(y) == y;
  const auto y_odd = y_int & (ay < simd::splat<X>(T(1) / std::numeric_limits<T>::epsilon() * 2)) &
                     (simd::floor(half * y) != half * y);
  const auto x_neg = (x < zero) | (one / x < zero);  // also -0
  // x = +-0 or +-inf: 0 or inf, negative for a negative x and odd y
  const X zi = simd::select(((x == zero) & (y < zero)) | ((ax == inf) & (y > zero)), inf, zero);
  r = simd::select((x == zero) | (ax == inf), simd::select(y_odd & x_neg, simd::neg(zi), zi), r);
  // y = +-inf: 1 for |x| = 1, else 0 or inf
  const auto to_zero = ((ax < one) & (y > zero)) | ((ax > one) & (y < zero));
  r = simd::select(ay == inf, simd::select(ax == one, one, simd::select(to_zero, zero, inf)), r);
  r = simd::select(simd::isnan(x) | simd::isnan(y), x + y, r);
  // negative finite x, integer y: the sign is set by the parity of y
  const X ar = simd::abs(r);
  r = simd::select((x < zero) & (ax < inf) & y_int, simd::select(y_odd, simd::neg(ar), ar), r);
  return simd::select((y == zero) | (x == one), one, r);
}
}  // namespace detail

namespace detail {
/// e^x on a batch, over the whole range of T, without branches (doc/decisions.md, "tad's exp").
/// xsimd 8.1's exp returns 0 below the smallest normal result and inf above exp(709.43) (float:
/// exp(88.38)), and converts k to int64 one lane at a time (AVX2 has no such instruction; the
/// conversion is undefined for inf/NaN lanes). Here: x = k ln2 + r with |r| <= ln2/2 (Cody-Waite,
/// ln2 split in two), e^r by its Taylor polynomial (degree 13 for double, 8 for float: the
/// truncation error is below 0.1 ulp), and 2^k built from the bits of k + 1.5 * 2^52 (the same
/// addition rounds x / ln2 to the nearest integer k). 2^k is applied as 2^k1 * 2^k2 with k1
/// clamped to the normal exponents, so results that overflow or are subnormal are rounded once.
template <class X>
TAD_INLINE X exp_batch(X x) noexcept {
  using T = simd::scalar_of_t<X>;
  constexpr bool f64 = std::is_same_v<T, double>;
  using I = std::conditional_t<f64, std::uint64_t, std::uint32_t>;
  using XI = xsimd::batch<I, typename X::arch_type>;
  constexpr int mantissa = f64 ? 52 : 23;
  constexpr T magic = f64 ? 0x1.8p52 : 0x1.8p23f;  // adding it rounds to an integer, kept in the low bits
  constexpr T bias = f64 ? 1023 : 127;
  // e^lo rounds to 0 (half the smallest subnormal), e^hi to inf
  const X lo = simd::splat<X>(f64 ? -746.0 : -104.0), hi = simd::splat<X>(f64 ? 710.0 : 89.0);
  const X xc = xsimd::min(xsimd::max(x, lo), hi);
  const X log2e = simd::splat<X>(f64 ? 0x1.71547652b82fep0 : 0x1.715476p0f);
  const X t = simd::fma(xc, log2e, simd::splat<X>(magic));
  const X k = t - simd::splat<X>(magic);
  X r = simd::fnma(k, simd::splat<X>(f64 ? 0x1.62e42feep-1 : 0x1.62e4p-1f), xc);  // ln2, high part
  r = simd::fnma(k, simd::splat<X>(f64 ? 0x1.a39ef35793c76p-33 : 0x1.7f7d1cp-20f), r);  // low part
  // Taylor coefficients 1/n! to degree 13 (float: 8): e^r = 1 + (r + r^2 q(r)), q by Estrin's
  // scheme (a few levels of FMA instead of Horner's chain of 13: W1 and CG, where exp is one link
  // of a longer chain, were 5 % slower with Horner); adding the 1 last keeps the result within
  // 1 ulp, as with Horner.
  constexpr auto c = [](int n) {
    T f = 1;
    for (int i = 2; i <= n; ++i) f *= static_cast<T>(i);
    return simd::splat<X>(T(1) / f);
  };
  const X r2 = r * r, r4 = r2 * r2;
  auto pair = [&](int n) { return simd::fma(c(n + 1), r, c(n)); };  // c_n + c_(n+1) r
  X q;
  if constexpr (f64) {  // degrees 2-13 of e^r
    const X a = simd::fma(pair(4), r2, pair(2)), b = simd::fma(pair(8), r2, pair(6));
    const X d = simd::fma(pair(12), r2, pair(10));
    q = simd::fma(simd::fma(d, r4, b), r4, a);
  } else {  // degrees 2-8
    q = simd::fma(simd::fma(c(8), r2, pair(6)), r4, simd::fma(pair(4), r2, pair(2)));
  }
  const X p = simd::splat<X>(1) + simd::fma(q, r2, r);
  // 2^k = 2^k1 * 2^k2, k1 in [min normal exponent + 1, max exponent]: p * 2^k1 is exact
  const X k1 = xsimd::min(xsimd::max(k, simd::splat<X>(f64 ? -1021.0 : -125.0)), simd::splat<X>(bias));
  const X k2 = k - k1;
  auto pow2 = [&](const X& n) {
    const XI bits = xsimd::bitwise_cast<XI>(n + simd::splat<X>(magic + bias)) << mantissa;
    return xsimd::bitwise_cast<X>(bits);
  };
  const X e = p * pow2(k1) * pow2(k2);
  return simd::select(xsimd::isnan(x), x, e);
}
}  // namespace detail

/// e^x (batches: detail::exp_batch, correct over the whole range). Both are always inlined, as
/// are sigmoid and softplus, which call it, and the ops' forward and backward: g++ otherwise
/// calls the kernel out of line from tad's loops (W3 1.13x -> 0.89x the xsimd loop inlined, CG
/// 1.17x -> 1.04x; doc/log/benchmarks.md).
template <detail::floating X>
TAD_INLINE constexpr X exp(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return detail::exp_batch(x);
  } else {
    if (std::is_constant_evaluated()) return detail::exp(x);
    return std::exp(x);
  }
}
/// Natural logarithm: log(0) = -inf, log(x < 0) = NaN.
template <detail::floating X>
constexpr X log(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    using T = simd::scalar_of_t<X>;
    if constexpr (std::is_same_v<T, double>) {  // xsimd 8.1 returns ~-746.5 for every subnormal
      const auto sub = x < simd::splat<X>(std::numeric_limits<double>::min());
      const X l = simd::log(simd::select(sub, x * simd::splat<X>(0x1p54), x));
      return simd::select(sub, l - simd::splat<X>(54 * 0x1.62e42fefa39efp-1), l);
    } else {
      return simd::log(x);
    }
  } else {
    if (std::is_constant_evaluated()) return detail::log(x);
    return std::log(x);
  }
}
/// log(1 + x), accurate for small |x|; `log1p(-0) = -0` (xsimd 8.1's kernel returns +0).
template <detail::floating X>
constexpr X log1p(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::select(x == simd::splat<X>(0), x, simd::log1p(x));
  } else {
    if (std::is_constant_evaluated()) return detail::log1p(x);
    return std::log1p(x);
  }
}
/// e^x - 1, accurate for small |x|; `expm1(-0) = -0` (xsimd 8.1's kernel returns +0).
template <detail::floating X>
constexpr X expm1(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    // xsimd 8.1 returns inf above ~709.43 (float: 88.38): e^x - 1 = e (e + 2), e = e^(x/2) - 1
    using T = simd::scalar_of_t<X>;
    const auto big = x > simd::splat<X>(std::is_same_v<T, float> ? 87.0 : 708.0);
    if (__builtin_expect(!simd::any(big), 1)) return simd::select(x == simd::splat<X>(0), x, simd::expm1(x));
    const X e = simd::expm1(simd::select(big, x * simd::splat<X>(0.5), x));
    return simd::select(big, e * (e + simd::splat<X>(2)), e);
  } else {
    if (std::is_constant_evaluated()) return detail::expm1(x);
    return std::expm1(x);
  }
}
/// Sine (radians).
template <detail::floating X>
constexpr X sin(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::sin(x);
  } else {
    if (std::is_constant_evaluated()) return detail::sin(x);
    return std::sin(x);
  }
}
/// Cosine (radians).
template <detail::floating X>
constexpr X cos(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::cos(x);
  } else {
    if (std::is_constant_evaluated()) return detail::cos(x);
    return std::cos(x);
  }
}
/// Tangent (radians).
template <detail::floating X>
constexpr X tan(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::tan(x);
  } else {
    if (std::is_constant_evaluated()) return detail::tan(x);
    return std::tan(x);
  }
}
/// Hyperbolic tangent: tanh(+-inf) = +-1.
template <detail::floating X>
constexpr X tanh(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::tanh(x);
  } else {
    if (std::is_constant_evaluated()) return detail::tanh(x);
    return std::tanh(x);
  }
}
/// Square root: sqrt(-0) = -0, sqrt(x < 0) = NaN.
template <detail::floating X>
constexpr X sqrt(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::sqrt(x);
  } else {
    if (std::is_constant_evaluated()) return detail::sqrt(x);
    return std::sqrt(x);
  }
}
/// x^y with the special cases of std::pow.
template <detail::floating X>
constexpr X pow(X x, X y) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return detail::pow_special_cases(x, y, simd::pow(x, y));
  } else {
    if (std::is_constant_evaluated()) return detail::pow(x, y);
    return std::pow(x, y);
  }
}
/// |x|.
template <detail::floating X>
constexpr X abs(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::abs(x);
  } else {
    if (std::is_constant_evaluated()) return detail::abs(x);
    return std::abs(x);
  }
}
/// Largest integer <= x.
template <detail::floating X>
constexpr X floor(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::floor(x);
  } else {
    if (std::is_constant_evaluated()) return detail::floor(x);
    return std::floor(x);
  }
}
/// Smallest integer >= x.
template <detail::floating X>
constexpr X ceil(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::ceil(x);
  } else {
    if (std::is_constant_evaluated()) return detail::ceil(x);
    return std::ceil(x);
  }
}
/// Nearest integer, halves to even (run time: assumes the default rounding mode).
template <detail::floating X>
constexpr X round_even(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::round_even(x);
  } else {
    if (std::is_constant_evaluated()) return detail::round_even(x);
    return std::nearbyint(x);
  }
}
/// True where x is NaN: `bool` for scalars, the batch's mask type for batches.
template <detail::floating X>
constexpr auto isnan(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::isnan(x);
  } else {
    return x != x;  // NOLINT(misc-redundant-expression): the constexpr NaN test
  }
}
/// NaN if either argument is NaN, else the larger (`a` when they compare equal).
template <detail::floating X>
constexpr X max(X a, X b) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::select(simd::isnan(a) | simd::isnan(b), a + b, simd::select(a < b, b, a));
  } else {
    return detail::max(a, b);
  }
}
/// NaN if either argument is NaN, else the smaller (`a` when they compare equal).
template <detail::floating X>
constexpr X min(X a, X b) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::select(simd::isnan(a) | simd::isnan(b), a + b, simd::select(b < a, b, a));
  } else {
    return detail::min(a, b);
  }
}
/// -1, 0 or +1; +0 for both zeros and for NaN (PyTorch's and TensorFlow's `sign`).
template <detail::floating X>
constexpr X sign(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    const X zero = simd::splat<X>(0), one = simd::splat<X>(1);
    return simd::select(x > zero, one, zero) - simd::select(x < zero, one, zero);
  } else {
    return detail::sign(x);
  }
}
/// 1 / (1 + e^-x), evaluated without overflow: e = e^-|x|, then 1/(1+e) or e/(1+e).
template <detail::floating X>
TAD_INLINE constexpr X sigmoid(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    const X one = simd::splat<X>(1);
    const X e = math::exp(-simd::abs(x));
    return simd::select(x >= simd::splat<X>(0), one / (one + e), e / (one + e));
  } else {
    if (std::is_constant_evaluated()) return detail::sigmoid(x);
    const X e = std::exp(-std::abs(x));
    return x >= X(0) ? X(1) / (X(1) + e) : e / (X(1) + e);
  }
}
/// log(1 + e^x), evaluated as log1p(e^-|x|) + max(x, 0); NaN stays NaN.
template <detail::floating X>
TAD_INLINE constexpr X softplus(X x) noexcept {
  if constexpr (simd::is_batch_v<X>) {
    return simd::log1p(math::exp(-simd::abs(x))) + math::max(x, simd::splat<X>(0));
  } else {
    if (std::is_constant_evaluated()) return detail::softplus(x);
    return std::log1p(std::exp(-std::abs(x))) + detail::max(x, X(0));
  }
}

}  // namespace tad::math
