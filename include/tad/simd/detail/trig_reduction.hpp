#pragma once
/// Argument reduction x = q * pi/2 + r (|r| <= ~pi/4) in double-double, for every finite double:
/// Cody-Waite below 2^20, Payne-Hanek above.

#include <tad/simd/detail/double_double.hpp>

#include <cstdint>

namespace tad::math::detail {

/// pi/2 as three 33-bit parts and a tail: k * part is exact for k < 2^20.
inline constexpr double pio2_1 = 0x1.921fb544p+0;
inline constexpr double pio2_2 = 0x1.0b4611a6p-34;
inline constexpr double pio2_3 = 0x1.3198a2ep-69;
inline constexpr double pio2_4 = 0x1.b839a252049c1p-104;
/// pi/2 as a double-double.
inline constexpr dd pio2_dd{0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54};
inline constexpr double two_over_pi = 0x1.45f306dc9c883p-1;

/// The bits of 2/pi after the binary point, 24 per entry (as fdlibm's ipio2).
inline constexpr std::uint32_t two_over_pi_24[] = {
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163,
    0xABDEBB, 0xC561B7, 0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129,
    0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C, 0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C,
    0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11, 0x8B5A0A, 0x6D1F6D, 0x367ECF,
    0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7, 0x8A5292,
    0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20};

/// x = q * pi/2 + r with q in {0, 1, 2, 3}.
struct quadrant_reduced {
  int q;
  dd r;
};

/// Cody-Waite for 0 <= a < 2^20: every k * pio2_i is exact, the sum is kept in double-double.
constexpr quadrant_reduced reduce_cody_waite(double a) noexcept {
  const double k = nearest_int(a * two_over_pi);
  dd r = two_sum(a, -k * pio2_1);
  r = r + -k * pio2_2;
  r = r + -k * pio2_3;
  r = r + -k * pio2_4;
  return {static_cast<int>(static_cast<long long>(k) & 3), r};
}

/// Payne-Hanek for a >= 2^20: a * 2/pi mod 4 from a 240-bit window of the bits of 2/pi.
constexpr quadrant_reduced reduce_payne_hanek(double a) noexcept {
  constexpr int n = 10;        // window of 2/pi, in 24-bit chunks
  constexpr std::uint64_t limb = 0xFFFFFF;
  const std::uint64_t b = bits(a);
  const int e = static_cast<int>(b >> 52) - 1075;  // a = m * 2^e, m a 53-bit integer
  const std::uint64_t m = (b & mantissa_mask) | (std::uint64_t{1} << 52);
  int i0 = 0;  // chunks before i0 only add multiples of 4 to a * 2/pi
  while (e - 24 * (i0 + 1) >= 2) ++i0;
  const std::uint64_t ml[3] = {m & limb, (m >> 24) & limb, m >> 48};
  std::uint64_t p[n + 3] = {};  // P = m * window, little-endian 24-bit limbs
  for (int j = 0; j < n; ++j) {
    const std::uint64_t c = two_over_pi_24[i0 + n - 1 - j];
    for (int i = 0; i < 3; ++i) p[i + j] += ml[i] * c;
  }
  for (int k = 0; k + 1 < n + 3; ++k) {
    p[k + 1] += p[k] >> 24;
    p[k] &= limb;
  }
  const int s = 24 * (i0 + n) - e;  // a * 2/pi = P * 2^-s (mod 4)
  auto bit = [&p](int pos) { return static_cast<int>((p[pos / 24] >> (pos % 24)) & 1); };
  int q = bit(s) + 2 * bit(s + 1);
  const int len = (s + 23) / 24;   // the fraction F = P mod 2^s lives in limbs [0, len)
  const int w = s - 24 * (len - 1);  // bits of F in the top limb
  const std::uint64_t top = (std::uint64_t{1} << w) - 1;
  p[len - 1] &= top;
  double sign = 1.0;
  if (((p[len - 1] >> (w - 1)) & 1) != 0) {  // F >= 1/2: round q up and use 1 - F (no cancellation)
    q = (q + 1) & 3;
    sign = -1.0;
    std::uint64_t carry = 1;
    for (int k = 0; k < len; ++k) {
      const std::uint64_t v = (~p[k] & limb) + carry;
      p[k] = v & limb;
      carry = v >> 24;
    }
    p[len - 1] &= top;
  }
  dd f{0.0, 0.0};
  for (int k = len - 1; k >= 0; --k) f = f + static_cast<double>(p[k]) * pow2(24 * k - s);
  return {q, f * pio2_dd * sign};
}

/// Reduction of a finite `x`: x = q * pi/2 + r, |r| <= pi/4 (+ rounding).
constexpr quadrant_reduced reduce_pio2(double x) noexcept {
  const double a = mag(x);
  if (a <= 0x1.921fb54442d18p-1) return {0, {x, 0.0}};
  quadrant_reduced t = a < 0x1p20 ? reduce_cody_waite(a) : reduce_payne_hanek(a);
  if (sign_bit(x)) {
    t.q = (4 - t.q) & 3;
    t.r = -t.r;
  }
  return t;
}

}  // namespace tad::math::detail
