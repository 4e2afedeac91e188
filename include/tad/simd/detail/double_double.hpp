#pragma once
/// Bit-level helpers and double-double arithmetic behind tad's constexpr elementary functions.
///
/// Everything here is `constexpr` code on `double` that gives the same results in constant
/// evaluation and at run time (where the tests measure it).

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tad::math::detail {

inline constexpr double inf_v = std::numeric_limits<double>::infinity();
inline constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

/// The IEEE-754 bits of `x`.
constexpr std::uint64_t bits(double x) noexcept { return std::bit_cast<std::uint64_t>(x); }
/// The double whose IEEE-754 bits are `b`.
constexpr double from_bits(std::uint64_t b) noexcept { return std::bit_cast<double>(b); }

inline constexpr std::uint64_t sign_mask = std::uint64_t{1} << 63;
inline constexpr std::uint64_t mantissa_mask = (std::uint64_t{1} << 52) - 1;

constexpr bool is_nan(double x) noexcept { return x != x; }
constexpr bool is_inf(double x) noexcept { return x == inf_v || x == -inf_v; }
constexpr bool sign_bit(double x) noexcept { return (bits(x) & sign_mask) != 0; }
/// |x| by clearing the sign bit (also for -0 and NaN).
constexpr double mag(double x) noexcept { return from_bits(bits(x) & ~sign_mask); }
/// The magnitude of `m` with the sign bit of `s`.
constexpr double copy_sign(double m, double s) noexcept {
  return from_bits((bits(m) & ~sign_mask) | (bits(s) & sign_mask));
}

/// 2^n for -1022 <= n <= 1023.
constexpr double pow2(int n) noexcept {
  return from_bits(static_cast<std::uint64_t>(n + 1023) << 52);
}

/// x * 2^n with a single rounding, also into the subnormal range (musl's scalbn). Overflow
/// returns +-inf without computing it: constant evaluation rejects an overflowing product.
constexpr double scale2(double x, int n) noexcept {
  if (x == 0.0 || is_nan(x) || is_inf(x)) return x;
  if (static_cast<int>((bits(x) >> 52) & 0x7ff) - 1023 + n > 1023) return copy_sign(inf_v, x);
  if (n > 1023) {
    x *= 0x1p1023;
    n -= 1023;
    if (n > 1023) {
      x *= 0x1p1023;
      n = n - 1023 > 1023 ? 1023 : n - 1023;
    }
  } else if (n < -1022) {
    x *= 0x1p-969;  // 2^-1022 * 2^53: stays normal, so the last product rounds once
    n += 969;
    if (n < -1022) {
      x *= 0x1p-969;
      n = n + 969 < -1022 ? -1022 : n + 969;
    }
  }
  return x * pow2(n);
}

/// The integer nearest to `x` (halves away from zero), for |x| < 2^62.
constexpr double nearest_int(double x) noexcept {
  return static_cast<double>(static_cast<long long>(x + (x < 0 ? -0.5 : 0.5)));
}

/// An unevaluated sum hi + lo with |lo| <= ulp(hi) / 2: about 106 significant bits.
struct dd {
  double hi;
  double lo;
};

/// a + b = s + e exactly (Knuth).
constexpr dd two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}
/// a + b = s + e exactly, if |a| >= |b| or a == 0 (Dekker).
constexpr dd quick_two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double e = b - (s - a);
  return {s, e};
}
/// Splits `a` into two halves of at most 26 significant bits (Veltkamp), for |a| < 2^995.
constexpr dd split(double a) noexcept {
  const double c = 134217729.0 * a;  // 2^27 + 1
  const double h = c - (c - a);
  return {h, a - h};
}
/// a * b = p + e exactly: FMA at run time, Dekker's product in constant evaluation.
constexpr dd two_prod(double a, double b) noexcept {
  const double p = a * b;
  // Not Dekker at run time: g++ contracts across statements (-ffp-contract=fast is its C++
  // default), which turns `c - a` in split() into an FMA and breaks the split.
  if (!std::is_constant_evaluated()) return {p, std::fma(a, b, -p)};
  const dd x = split(a);
  const dd y = split(b);
  const double e1 = x.hi * y.hi - p;
  const double e2 = e1 + x.hi * y.lo;
  const double e3 = e2 + x.lo * y.hi;
  return {p, e3 + x.lo * y.lo};
}

constexpr dd operator-(dd a) noexcept { return {-a.hi, -a.lo}; }
constexpr dd operator+(dd a, dd b) noexcept {
  dd s = two_sum(a.hi, b.hi);
  const dd t = two_sum(a.lo, b.lo);
  s = quick_two_sum(s.hi, s.lo + t.hi);
  return quick_two_sum(s.hi, s.lo + t.lo);
}
constexpr dd operator+(dd a, double b) noexcept {
  const dd s = two_sum(a.hi, b);
  return quick_two_sum(s.hi, s.lo + a.lo);
}
constexpr dd operator-(dd a, dd b) noexcept { return a + -b; }
constexpr dd operator*(dd a, dd b) noexcept {
  const dd p = two_prod(a.hi, b.hi);
  const double cross = a.hi * b.lo + a.lo * b.hi;
  return quick_two_sum(p.hi, p.lo + cross);
}
constexpr dd operator*(dd a, double b) noexcept {
  const dd p = two_prod(a.hi, b);
  return quick_two_sum(p.hi, p.lo + a.lo * b);
}
constexpr dd operator/(dd a, dd b) noexcept {
  const double q1 = a.hi / b.hi;
  dd r = a - b * q1;
  const double q2 = r.hi / b.hi;
  r = r - b * q2;
  const double q3 = r.hi / b.hi;
  return quick_two_sum(q1, q2) + q3;
}
constexpr dd operator/(dd a, double b) noexcept { return a / dd{b, 0.0}; }

/// (v.hi + v.lo) * 2^n for v.hi > 0, rounded once also into the subnormal range: where
/// rounding v.hi alone lands on a tie, v.lo breaks it.
constexpr double scale2(dd v, int n) noexcept {
  double r = scale2(v.hi, n);
  if (r >= 0x1p-1022 || n < -1100 || is_nan(r) || is_inf(r)) return r;
  const double d = v.hi - scale2(r, -n);  // what the rounding removed, exactly
  const double half = pow2(-1075 - n);    // half an ulp of the subnormal result, scaled back
  if (d == half && v.lo > 0) r = from_bits(bits(r) + 1);
  if (d == -half && v.lo < 0) r = from_bits(bits(r) - 1);
  return r;
}

}  // namespace tad::math::detail
