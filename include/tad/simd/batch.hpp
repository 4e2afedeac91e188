#pragma once
/// The only header that names xsimd: the batch type for the compiled architecture and thin
/// wrappers (load, store, select, horizontal reductions, elementary functions) over it.

#include <tad/config.hpp>

// g++ 12.2 (Debian 12's) reports -Wuninitialized / -Wmaybe-uninitialized inside its own AVX-512
// intrinsics (`_mm512_undefined_pd()` as the pass-through operand of a masked builtin) wherever
// xsimd's AVX-512 kernels (max, min, nearbyint, shifts) are inlined into a function built with
// -mavx512f (-march=native on an AVX-512 machine). g++ 12 looks up `#pragma GCC diagnostic`
// at every location of the inlining chain, so ignoring both warnings for the code included
// here (the intrinsics' and xsimd's headers, when tad includes them first) silences them
// without hiding them in tad's or the user's code (doc/decisions.md item 17).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cmath>
#include <cstddef>
#include <type_traits>

namespace tad::simd {

/// SIMD batch of `T` for the architecture this translation unit is compiled for.
template <class T>
using batch = xsimd::batch<T>;

/// Number of lanes of `batch<T>`.
template <class T>
inline constexpr std::size_t width = batch<T>::size;

namespace detail {
template <class X>
struct is_batch : std::false_type {};
template <class T, class A>
struct is_batch<xsimd::batch<T, A>> : std::true_type {};
template <class X>
struct is_batch_bool : std::false_type {};
template <class T, class A>
struct is_batch_bool<xsimd::batch_bool<T, A>> : std::true_type {};
}  // namespace detail

/// True for `xsimd::batch<T, A>`.
template <class X>
inline constexpr bool is_batch_v = detail::is_batch<std::remove_cvref_t<X>>::value;
/// True for `xsimd::batch_bool<T, A>` (the mask type of a batch).
template <class X>
inline constexpr bool is_batch_bool_v = detail::is_batch_bool<std::remove_cvref_t<X>>::value;

/// The scalar type of a batch, or the type itself for scalars.
template <class X>
struct scalar_of {
  using type = X;
};
template <class T, class A>
struct scalar_of<xsimd::batch<T, A>> {
  using type = T;
};
template <class X>
using scalar_of_t = typename scalar_of<std::remove_cvref_t<X>>::type;

/// `V(v)`: broadcast a scalar to a batch, or convert it to a scalar type.
template <class V, class S>
constexpr V splat(S s) noexcept {
  if constexpr (is_batch_v<V>) {
    return V(static_cast<typename V::value_type>(s));
  } else {
    return static_cast<V>(s);
  }
}

template <class T>
inline batch<T> load(const T* p) noexcept {
  return batch<T>::load_unaligned(p);
}
template <class T>
inline void store(T* p, const batch<T>& v) noexcept {
  v.store_unaligned(p);
}

/// Lane-wise select; for scalars `m ? a : b`.
template <class M, class V>
constexpr V select(const M& m, const V& a, const V& b) noexcept {
  if constexpr (is_batch_v<V>) {
    return xsimd::select(m, a, b);
  } else {
    return m ? a : b;
  }
}

/// Lane-wise maximum with the hardware's NaN rule: where either is NaN, the result is b (one
/// max instruction). Only for code where a NaN's outcome does not matter (lse_shift_op); the
/// max reduction propagates NaN explicitly.
template <class V>
constexpr V max_fast(const V& a, const V& b) noexcept {
  if constexpr (is_batch_v<V>) {
    return xsimd::max(a, b);
  } else {
    return a > b ? a : b;
  }
}

/// True when a lane of the mask is set.
template <class M>
inline bool any(const M& m) noexcept {
  return xsimd::any(m);
}

/// Converts a mask to 1 (true) or 0 (false) in the value type `V`.
template <class V, class M>
constexpr V mask_to_value(const M& m) noexcept {
  return select(m, splat<V>(1), splat<V>(0));
}

/// Horizontal sum of a batch.
template <class T, class A>
inline T hsum(const xsimd::batch<T, A>& v) noexcept {
  return xsimd::hadd(v);
}

/// Lanes of a batch as a plain array (for horizontal reductions that xsimd 8.1 lacks).
template <class T, class A, class F>
inline T hfold(const xsimd::batch<T, A>& v, F f) noexcept {
  alignas(xsimd::batch<T, A>::arch_type::alignment()) T lanes[xsimd::batch<T, A>::size];
  v.store_aligned(lanes);
  T r = lanes[0];
  for (std::size_t k = 1; k < xsimd::batch<T, A>::size; ++k) r = f(r, lanes[k]);
  return r;
}

// Elementary functions on batches (the scalar versions live in tad/simd/math.hpp; exp is tad's
// own kernel there, math::detail::exp_batch). log, log1p, expm1 and sin are inlined whole,
// xsimd's kernel included (`TAD_FLATTEN`): g++ otherwise calls them out of line from tad's
// loops, spilling every live register around the call (log: 1.46x -> 1.16x the hand-written
// loop in benchmark CG; sin with AVX-512, whose kernel is larger than AVX2's: W1 1.22x -> 1.10x
// at N = 10^3, 1.38x -> 1.10x at 10^5). cos too, though g++ still calls xsimd's AVX-512 cos
// kernel out of line, as in the hand-written loop. Flattening the others measured no gain.
template <class B> TAD_FLATTEN inline B log(const B& x) noexcept { return xsimd::log(x); }
template <class B> TAD_FLATTEN inline B log1p(const B& x) noexcept { return xsimd::log1p(x); }
template <class B> TAD_FLATTEN inline B expm1(const B& x) noexcept { return xsimd::expm1(x); }
template <class B> TAD_FLATTEN inline B sin(const B& x) noexcept { return xsimd::sin(x); }
template <class B> TAD_FLATTEN inline B cos(const B& x) noexcept { return xsimd::cos(x); }
template <class B> inline B tan(const B& x) noexcept { return xsimd::tan(x); }
template <class B> inline B tanh(const B& x) noexcept { return xsimd::tanh(x); }
template <class B> inline B sqrt(const B& x) noexcept { return xsimd::sqrt(x); }
template <class B> inline B pow(const B& x, const B& y) noexcept { return xsimd::pow(x, y); }
template <class B> inline B abs(const B& x) noexcept { return xsimd::abs(x); }
#if defined(__SSE4_1__) || defined(__AVX__)
template <class B> inline B floor(const B& x) noexcept { return xsimd::floor(x); }
template <class B> inline B ceil(const B& x) noexcept { return xsimd::ceil(x); }
#else
// xsimd 8.1's floor and ceil without SSE4.1's round instruction (the SSE2 baseline) return +0
// for -0 and for ceil of (-1, 0); a rounded value always has the sign of its input.
template <class B> inline B floor(const B& x) noexcept { return xsimd::copysign(xsimd::floor(x), x); }
template <class B> inline B ceil(const B& x) noexcept { return xsimd::copysign(xsimd::ceil(x), x); }
#endif
/// Round half to even (the default floating-point rounding mode).
template <class B> inline B round_even(const B& x) noexcept { return xsimd::nearbyint(x); }
template <class B> inline auto isnan(const B& x) noexcept { return xsimd::isnan(x); }
namespace detail {
/// True for xsimd's AVX-512 architectures. xsimd 8.1 has no fused multiply-add kernel for
/// them: its fma, fms and fnma fall back to a multiply and an add (which g++ contracts by
/// itself and clang does not), so tad calls the AVX-512F instructions directly.
template <class A>
inline constexpr bool is_avx512 =
#if XSIMD_WITH_AVX512F
    std::is_base_of_v<xsimd::avx512f, A>;
#else
    false;
#endif
}  // namespace detail

/// x * y + z, fused where the target has FMA instructions. Plain `inline` (tiny, inlined
/// anyway): marking these always-inline changed g++'s inlining order so that it called
/// xsimd's log1p kernel out of line from the custom-gradient benchmark's loop (1.13x slower).
template <class T, class A>
inline xsimd::batch<T, A> fma(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y,
                                  const xsimd::batch<T, A>& z) noexcept {
#if XSIMD_WITH_AVX512F
  if constexpr (detail::is_avx512<A> && std::is_same_v<T, double>) return _mm512_fmadd_pd(x, y, z);
  else if constexpr (detail::is_avx512<A> && std::is_same_v<T, float>) return _mm512_fmadd_ps(x, y, z);
  else
#endif
    return xsimd::fma(x, y, z);
}
/// x * y - z, fused.
template <class T, class A>
inline xsimd::batch<T, A> fms(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y,
                                  const xsimd::batch<T, A>& z) noexcept {
#if XSIMD_WITH_AVX512F
  if constexpr (detail::is_avx512<A> && std::is_same_v<T, double>) return _mm512_fmsub_pd(x, y, z);
  else if constexpr (detail::is_avx512<A> && std::is_same_v<T, float>) return _mm512_fmsub_ps(x, y, z);
  else
#endif
    return xsimd::fms(x, y, z);
}
/// z - x * y, fused.
template <class T, class A>
inline xsimd::batch<T, A> fnma(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y,
                                   const xsimd::batch<T, A>& z) noexcept {
#if XSIMD_WITH_AVX512F
  if constexpr (detail::is_avx512<A> && std::is_same_v<T, double>) return _mm512_fnmadd_pd(x, y, z);
  else if constexpr (detail::is_avx512<A> && std::is_same_v<T, float>) return _mm512_fnmadd_ps(x, y, z);
  else
#endif
    return xsimd::fnma(x, y, z);
}

/// `-x` for a batch or a scalar, as a flip of the sign bit: xsimd 8.1 negates an AVX-512 batch
/// as `0 - x`, which leaves +0 at +0 (the SSE/AVX kernels flip the bit, like this). tad's ops
/// negate with this (doc/decisions.md item 19).
template <class V>
TAD_INLINE constexpr V neg(const V& x) noexcept {
  if constexpr (is_batch_v<V>) {
#if defined(__GNUC__)
    // The compilers' own vector negation (g++ and clang++), also a flip of the sign bit, but one
    // the optimizer knows: `a + neg(b)` becomes `a - b`, `neg(a) * b + c` an fnmadd (a xor with
    // a mask, xsimd's operator^, is opaque to it).
    return V(-x.data);
#else
    return x ^ V(typename V::value_type(-0.0));
#endif
  } else {
    return -x;
  }
}

/// `x * y + z` for a batch or a scalar, rounded once where the target has FMA instructions
/// (batches: simd::fma, a multiply and an add on targets without them; scalars:
/// std::fma when the compiler inlines it as one instruction, `__FMA__`), else `x * y + z`;
/// in a constant expression `x * y + z`. The engine contracts products into sums with these
/// (eval/contract.hpp, doc/decisions.md item 18).
template <class V>
TAD_INLINE constexpr V mul_add(const V& x, const V& y, const V& z) noexcept {
  if constexpr (is_batch_v<V>) {
    return simd::fma(x, y, z);
  } else {
#if defined(__FMA__)
    if (!std::is_constant_evaluated()) return std::fma(x, y, z);
#endif
    return x * y + z;
  }
}
/// `x * y - z`, rounded as mul_add.
template <class V>
TAD_INLINE constexpr V mul_sub(const V& x, const V& y, const V& z) noexcept {
  if constexpr (is_batch_v<V>) {
    return simd::fms(x, y, z);
  } else {
#if defined(__FMA__)
    if (!std::is_constant_evaluated()) return std::fma(x, y, -z);
#endif
    return x * y - z;
  }
}
/// `z - x * y`, rounded as mul_add.
template <class V>
TAD_INLINE constexpr V neg_mul_add(const V& x, const V& y, const V& z) noexcept {
  if constexpr (is_batch_v<V>) {
    return simd::fnma(x, y, z);
  } else {
#if defined(__FMA__)
    if (!std::is_constant_evaluated()) return std::fma(-x, y, z);
#endif
    return z - x * y;
  }
}

}  // namespace tad::simd

namespace tad::simd {
/// Loads a V (a batch, or one scalar) from p.
template <class V, class T>
inline V load_any(const T* p) noexcept {
  if constexpr (is_batch_v<V>) return V::load_unaligned(p); else return *p;
}
/// Loads a V from elements `stride` apart from p (a batch: one element per lane, gathered).
template <class V, class T>
inline V load_strided(const T* p, std::size_t stride) noexcept {
  if constexpr (is_batch_v<V>) {
    alignas(64) T lanes[V::size];
    for (std::size_t k = 0; k < V::size; ++k) lanes[k] = p[k * stride];
    return V::load_aligned(lanes);
  } else {
    return *p;
  }
}
/// Stores a V (a batch, or one scalar) to p.
template <class T, class V>
inline void store_any(T* p, const V& v) noexcept {
  if constexpr (is_batch_v<V>) v.store_unaligned(p); else *p = v;
}
}  // namespace tad::simd
