#pragma once
/// tad's own elementary functions on float and double, usable in constant evaluation.
///
/// `tad::math` runs these only in constant evaluation (std:: at run time, xsimd for batches).
/// The kernels in `f64` work in double-double and round once at the end; float goes through
/// double. Accuracy and valid ranges are measured in test/simd/math.cpp, listed in doc/math.md.

#include <tad/simd/detail/double_double.hpp>
#include <tad/simd/detail/trig_reduction.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace tad::math::detail {

/// ln 2 as two 42-bit parts and a tail: k * part is exact for |k| < 2^11.
inline constexpr double ln2_1 = 0x1.62e42fefa38p-1;
inline constexpr double ln2_2 = 0x1.ef35793c76p-45;
inline constexpr double ln2_3 = 0x1.cc01f97b57a08p-87;
inline constexpr dd ln2_dd{0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
inline constexpr double inv_ln2 = 0x1.71547652b82fep+0;

/// 1 / i! in double-double, for the Taylor series below (evaluated by Horner's rule, with
/// enough terms for 2^-80 relative at the largest reduced argument).
inline constexpr std::array<dd, 26> inv_factorial = [] {
  std::array<dd, 26> c{};
  c[0] = {1.0, 0.0};
  for (std::size_t i = 1; i < 26; ++i) c[i] = c[i - 1] / static_cast<double>(i);
  return c;
}();

/// e^z = 2^k * (1 + m): k the integer nearest z / ln 2, m = expm1 of the reduced argument.
struct exp_split { int k; dd m; };
/// Splits e^z for |z.hi| < 746.
constexpr exp_split exp_reduce(dd z) noexcept {
  const double k = nearest_int(z.hi * inv_ln2);
  dd r = two_sum(z.hi, -k * ln2_1);
  r = r + -k * ln2_2;
  r = r + z.lo;
  r = r + -k * ln2_3;  // |r| <= ln2 / 2: expm1(r) = r (1 + r / 2! + ... + r^19 / 20!)
  dd p = inv_factorial[20];
  for (std::size_t i = 19; i >= 1; --i) p = p * r + inv_factorial[i];
  return {static_cast<int>(k), p * r};
}

/// e^z - 1 in double-double for |z.hi| <= 50.
constexpr dd expm1_dd(dd z) noexcept {
  const auto [k, m] = exp_reduce(z);
  const dd scaled{scale2(m.hi, k), scale2(m.lo, k)};
  // 2^k - 1, exactly: a double for |k| <= 53, else a double-double
  const dd c = k > 53 ? dd{pow2(k), -1.0} : k < -53 ? dd{-1.0, pow2(k)} : dd{pow2(k) - 1.0, 0.0};
  return scaled + c;
}

/// e^-a = 2^k * v for 0 <= a < 746, v in [0.7, 1.5] in double-double.
struct scaled_dd { int k; dd v; };
constexpr scaled_dd exp_neg(double a) noexcept {
  const auto [k, m] = exp_reduce({-a, 0.0});
  return {k, dd{1.0, 0.0} + m};
}

/// 1 / (2i + 1) in double-double.
inline constexpr std::array<dd, 17> inv_odd = [] {
  std::array<dd, 17> c{};
  for (std::size_t i = 0; i < 17; ++i) c[i] = dd{1.0, 0.0} / static_cast<double>(2 * i + 1);
  return c;
}();

/// log(1 + f) in double-double for |f| <= 0.42: 2 atanh(s), s = f / (2 + f), |s| < 0.174.
constexpr dd log1p_kernel(dd f) noexcept {
  const dd s = f / (dd{2.0, 0.0} + f);
  const dd s2 = s * s;
  dd p = inv_odd[16];  // atanh(s) = s (1 + s^2 / 3 + ... + s^32 / 33)
  for (std::size_t i = 16; i-- > 0;) p = p * s2 + inv_odd[i];
  const dd a = p * s;
  return {2.0 * a.hi, 2.0 * a.lo};
}

/// log(x) in double-double for finite x > 0 (subnormals included).
constexpr dd log_dd(double x) noexcept {
  int e = 0;
  if (x < 0x1p-1022) {
    x *= 0x1p54;
    e = -54;
  }
  const std::uint64_t b = bits(x);
  e += static_cast<int>(b >> 52) - 1023;
  double m = from_bits((b & mantissa_mask) | (std::uint64_t{1023} << 52));  // [1, 2)
  if (m > 0x1.6a09e667f3bcdp+0) {
    m *= 0.5;
    ++e;
  }
  return ln2_dd * static_cast<double>(e) + log1p_kernel({m - 1.0, 0.0});  // m - 1 is exact
}

/// log(1 + a) in double-double for a > -1, a.hi finite.
constexpr dd log1p_dd(dd a) noexcept {
  if (mag(a.hi) < 0.29) return log1p_kernel(a);  // 1 + a within [1/sqrt2, sqrt2]: no rounding
  const dd u = dd{1.0, 0.0} + a;  // log(u.hi + u.lo) = log(u.hi) + log1p(u.lo / u.hi), and
  return log_dd(u.hi) + u.lo / u.hi;  // log1p(t) = t to 2^-106 relative here
}

/// sin(r) in double-double for |r| <= ~pi/4: r (1 - r^2 / 3! + ... + r^24 / 25!).
constexpr dd sin_kernel(dd r) noexcept {
  const dd r2 = r * r;
  dd p = inv_factorial[25];
  for (std::size_t i = 25; i >= 3; i -= 2) p = -(p * r2) + inv_factorial[i - 2];  // i - 2 = 23, 21, ..., 1
  return p * r;
}
/// cos(r) in double-double for |r| <= ~pi/4: 1 - r^2 / 2! + ... + r^24 / 24!.
constexpr dd cos_kernel(dd r) noexcept {
  const dd r2 = r * r;
  dd p = inv_factorial[24];
  for (std::size_t i = 24; i >= 2; i -= 2) p = -(p * r2) + inv_factorial[i - 2];  // i - 2 = 22, 20, ..., 0
  return p;
}

namespace f64 {

constexpr double exp(double x) noexcept {
  if (is_nan(x)) return x;
  if (x > 709.8) return inf_v;
  if (x < -745.2) return 0.0;
  const auto [k, m] = exp_reduce({x, 0.0});
  return scale2(dd{1.0, 0.0} + m, k);
}
constexpr double expm1(double x) noexcept {
  if (is_nan(x) || mag(x) < 0x1p-60) return x;
  if (x > 50.0) return exp(x);
  if (x < -40.0) return -1.0;
  return expm1_dd({x, 0.0}).hi;
}
constexpr double log(double x) noexcept {
  if (is_nan(x) || x == inf_v) return x;
  if (x == 0.0) return -inf_v;
  if (x < 0.0) return nan_v;
  return log_dd(x).hi;
}
constexpr double log1p(double x) noexcept {
  if (is_nan(x) || x == inf_v || mag(x) < 0x1p-60) return x;
  if (x == -1.0) return -inf_v;
  if (x < -1.0) return nan_v;
  return log1p_dd({x, 0.0}).hi;
}
constexpr double sqrt(double x) noexcept {
  if (is_nan(x) || x == 0.0 || x == inf_v) return x;
  if (x < 0.0) return nan_v;
  int e = 0;
  if (x < 0x1p-1022) {
    x *= 0x1p108;
    e = -108;
  }
  const std::uint64_t b = bits(x);
  e += static_cast<int>(b >> 52) - 1023;
  double m = from_bits((b & mantissa_mask) | (std::uint64_t{1023} << 52));
  if (e % 2 != 0) {  // m in [1, 4), e even
    m *= 2.0;
    --e;
  }
  double y = 0.5 * (1.0 + m);
  for (int i = 0; i < 6; ++i) y = 0.5 * (y + m / y);  // Newton: within an ulp
  // round correctly: step to a neighbour while m lies beyond the midpoint towards it
  auto beyond_mid = [m](double c, double d) {  // sign of m - ((c + d) / 2)^2, exactly
    const double h = 0.5 * (d - c);
    const dd c2 = two_prod(c, c);
    const dd t = two_sum(m, -c2.hi) + -c2.lo + -(2.0 * c * h) + -(h * h);
    return (h > 0) == (t.hi > 0);
  };
  for (int i = 0; i < 2; ++i) {
    const double up = from_bits(bits(y) + 1), down = from_bits(bits(y) - 1);
    if (beyond_mid(y, up)) y = up;
    else if (beyond_mid(y, down)) y = down;
  }
  return scale2(y, e / 2);
}
constexpr double sin(double x) noexcept {
  if (is_nan(x) || is_inf(x)) return nan_v;
  if (mag(x) < 0x1p-26) return x;
  const auto [q, r] = reduce_pio2(x);
  const dd v = (q & 1) != 0 ? cos_kernel(r) : sin_kernel(r);
  return q >= 2 ? -v.hi : v.hi;
}
constexpr double cos(double x) noexcept {
  if (is_nan(x) || is_inf(x)) return nan_v;
  if (mag(x) < 0x1p-27) return 1.0;
  const auto [q, r] = reduce_pio2(x);
  const dd v = (q & 1) != 0 ? sin_kernel(r) : cos_kernel(r);
  return q == 1 || q == 2 ? -v.hi : v.hi;
}
constexpr double tan(double x) noexcept {
  if (is_nan(x) || is_inf(x)) return nan_v;
  if (mag(x) < 0x1p-27) return x;
  const auto [q, r] = reduce_pio2(x);
  const dd s = sin_kernel(r), c = cos_kernel(r);
  return (q & 1) != 0 ? -(c / s).hi : (s / c).hi;
}
constexpr double tanh(double x) noexcept {
  const double a = mag(x);
  if (is_nan(x) || a < 0x1p-28) return x;
  if (a > 22.0) return copy_sign(1.0, x);  // also +-inf
  const dd e = expm1_dd({2.0 * a, 0.0});   // tanh(a) = (e^2a - 1) / (e^2a + 1)
  return copy_sign((e / (e + 2.0)).hi, x);
}
constexpr double sigmoid(double x) noexcept {
  if (is_nan(x)) return x;
  if (x > 40.0) return 1.0;
  if (x < -745.2) return 0.0;
  const auto [k, v] = exp_neg(mag(x));
  const dd e{scale2(v.hi, k), scale2(v.lo, k)};  // e^-|x| (a subnormal low part is harmless next to 1)
  if (x >= 0.0) return (dd{1.0, 0.0} / (e + 1.0)).hi;
  return scale2(v / (e + 1.0), k);  // e^x / (1 + e^x), scaled (and rounded) once
}
constexpr double softplus(double x) noexcept {
  if (is_nan(x) || x > 745.2) return x;  // log1p(e^-x) underflows
  if (x < -745.2) return 0.0;
  const auto [k, v] = exp_neg(mag(x));
  if (x < 0.0 && k < -60) {  // log1p(e^x) = e^x - e^2x / 2, rounded once
    return scale2(v + -scale2((v * v).hi, k - 1), k);
  }
  const dd e{scale2(v.hi, k), scale2(v.lo, k)};
  return (log1p_dd(e) + (x > 0.0 ? x : 0.0)).hi;
}
constexpr double round_even(double x) noexcept {
  const double a = mag(x);
  if (!(a < 0x1p52)) return x;  // NaN, inf, or already an integer
  return copy_sign((a + 0x1p52) - 0x1p52, x);  // rounds to nearest, ties to even
}
constexpr double floor(double x) noexcept {
  const double r = round_even(x);
  return copy_sign(r > x ? r - 1.0 : r, x);  // a zero result keeps the sign of x, as std::floor
}
constexpr double ceil(double x) noexcept {
  const double r = round_even(x);
  return copy_sign(r < x ? r + 1.0 : r, x);
}
constexpr bool is_integer(double y) noexcept { return floor(y) == y; }
constexpr bool is_odd_integer(double y) noexcept {
  return is_integer(y) && mag(y) < 0x1p53 && !is_integer(0.5 * y);
}
constexpr double pow(double x, double y) noexcept {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (is_nan(x) || is_nan(y)) return nan_v;
  if (is_inf(y)) {
    const double a = mag(x);
    if (a == 1.0) return 1.0;
    return (a < 1.0) == (y > 0.0) ? 0.0 : inf_v;
  }
  const bool odd = is_odd_integer(y);
  if (x == 0.0 || is_inf(x)) {  // C99 Annex F: magnitude 0 or inf, sign of x for odd y
    const double r = (x == 0.0) == (y < 0.0) ? inf_v : 0.0;
    return odd ? copy_sign(r, x) : r;
  }
  double sign = 1.0;
  if (x < 0.0) {
    if (!is_integer(y)) return nan_v;
    sign = odd ? -1.0 : 1.0;
    x = -x;
  }
  const dd l = log_dd(x);
  const double z = y * l.hi;
  if (z > 710.0) return sign * inf_v;
  if (z < -746.0) return sign * 0.0;
  const auto [k, m] = exp_reduce(two_prod(y, l.hi) + y * l.lo);  // e^(y log x)
  return sign * scale2(dd{1.0, 0.0} + m, k);
}

}  // namespace f64

// The float/double entry points: float computes in double and rounds once more.
template <class T> constexpr T exp(T x) noexcept { return static_cast<T>(f64::exp(x)); }
template <class T> constexpr T expm1(T x) noexcept { return static_cast<T>(f64::expm1(x)); }
template <class T> constexpr T log(T x) noexcept { return static_cast<T>(f64::log(x)); }
template <class T> constexpr T log1p(T x) noexcept { return static_cast<T>(f64::log1p(x)); }
template <class T> constexpr T sqrt(T x) noexcept { return static_cast<T>(f64::sqrt(x)); }
template <class T> constexpr T sin(T x) noexcept { return static_cast<T>(f64::sin(x)); }
template <class T> constexpr T cos(T x) noexcept { return static_cast<T>(f64::cos(x)); }
template <class T> constexpr T tan(T x) noexcept { return static_cast<T>(f64::tan(x)); }
template <class T> constexpr T tanh(T x) noexcept { return static_cast<T>(f64::tanh(x)); }
template <class T> constexpr T sigmoid(T x) noexcept { return static_cast<T>(f64::sigmoid(x)); }
template <class T> constexpr T softplus(T x) noexcept { return static_cast<T>(f64::softplus(x)); }
template <class T> constexpr T pow(T x, T y) noexcept { return static_cast<T>(f64::pow(x, y)); }
template <class T> constexpr T round_even(T x) noexcept { return static_cast<T>(f64::round_even(x)); }
template <class T> constexpr T floor(T x) noexcept { return static_cast<T>(f64::floor(x)); }
template <class T> constexpr T ceil(T x) noexcept { return static_cast<T>(f64::ceil(x)); }
template <class T> constexpr T abs(T x) noexcept { return static_cast<T>(mag(x)); }
/// -1, 0 or +1 (+0 for both zeros and for NaN).
template <class T> constexpr T sign(T x) noexcept {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
}
/// NaN if either argument is NaN, else the larger (`a` when they compare equal).
template <class T> constexpr T max(T a, T b) noexcept {
  // NOLINTNEXTLINE(misc-redundant-expression): x != x is the constexpr NaN test
  return a != a ? a : b != b ? b : a < b ? b : a;
}
/// NaN if either argument is NaN, else the smaller (`a` when they compare equal).
template <class T> constexpr T min(T a, T b) noexcept {
  // NOLINTNEXTLINE(misc-redundant-expression): x != x is the constexpr NaN test
  return a != a ? a : b != b ? b : b < a ? b : a;
}

}  // namespace tad::math::detail
