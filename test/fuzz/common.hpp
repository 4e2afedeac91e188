// Shared by the expression fuzzer's translation units (expressions.cpp: the 1-D family and the
// entry point; shapes.cpp: the matrix family): failure reporting, the element types' limits,
// tolerances, reference sums, guarded buffers and the value stream that decodes an input's
// values (test/fuzz/README.md, doc/testing.md "Fuzzing").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include <tad/simd/batch.hpp>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAD_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TAD_FUZZ_ASAN)
#define TAD_FUZZ_ASAN 1
#endif
#ifdef TAD_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace tad_fuzz {

// ---- failure reporting ---------------------------------------------------------------------

/// What the current input is, for the failure message.
struct current_input {
  const char* expr = "";
  const char* type = "";
  std::size_t n = 0, offx = 0, offy = 0;
  const std::vector<double>* x = nullptr;
  const std::vector<double>* y = nullptr;
  double s = 0, k = 0, lo = 0, hi = 0;
  // The matrix family (shapes.cpp): x and y are rows x cols, rows `ld` elements apart; b is a
  // row vector (cols), v a column (rows).
  std::size_t rows = 0, cols = 0, ld = 0;
  const std::vector<double>* b = nullptr;
  const std::vector<double>* v = nullptr;
};
inline current_input g_cur;

inline void print_values(const char* name, const std::vector<double>* v) {
  if (!v) return;
  std::fprintf(stderr, "  %s =", name);
  const std::size_t m = std::min<std::size_t>(v->size(), 24);
  for (std::size_t i = 0; i < m; ++i) std::fprintf(stderr, " %.9g", (*v)[i]);
  if (v->size() > m) std::fprintf(stderr, " ... (%zu values)", v->size());
  std::fprintf(stderr, "\n");
}

[[noreturn]] inline void fail(const char* fmt, ...) {
  if (g_cur.ld != 0)
    std::fprintf(stderr, "\n==tad-fuzz== check failed: %s [%s] %zu x %zu, rows %zu apart, x offset %zu, y offset %zu\n  ",
                 g_cur.expr, g_cur.type, g_cur.rows, g_cur.cols, g_cur.ld, g_cur.offx, g_cur.offy);
  else
    std::fprintf(stderr, "\n==tad-fuzz== check failed: %s [%s] n = %zu, x offset %zu, y offset %zu\n  ",
                 g_cur.expr, g_cur.type, g_cur.n, g_cur.offx, g_cur.offy);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n  s = %.17g, k = %.17g, lo = %.17g, hi = %.17g\n", g_cur.s, g_cur.k, g_cur.lo, g_cur.hi);
  print_values("x", g_cur.x);
  print_values("y", g_cur.y);
  print_values("b", g_cur.b);
  print_values("v", g_cur.v);
  std::fflush(stderr);
  std::abort();
}

// ---- numbers -------------------------------------------------------------------------------

/// The element type's constants, as doubles.
struct limits {
  bool dbl;
  double eps, denorm, min, max;
  std::size_t width;  // SIMD lanes
  /// Rounds a double to the element type.
  double rnd(double v) const { return dbl ? v : static_cast<double>(static_cast<float>(v)); }
};

template <class T>
inline limits limits_of() {
  return {std::is_same_v<T, double>, std::numeric_limits<T>::epsilon(), std::numeric_limits<T>::denorm_min(),
          std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), tad::simd::width<T>};
}

/// How close two results must be: ulps relative to the larger magnitude, plus an absolute term
/// (plus `ulps` subnormal steps, so results in the subnormal range compare sensibly); `skip`
/// accepts anything (documented limits of the batch path).
struct tolerance {
  double ulps = 0, abs = 0;
  bool skip = false;
};
inline constexpr tolerance exact{};
inline tolerance ulps(double u, double a = 0) { return {u, a, false}; }
inline constexpr tolerance skipped{0, 0, true};

/// Do a (SIMD path) and b (scalar path or reference) agree? NaN only with NaN; infinities
/// equal, or a finite value within the tolerance of overflowing; else |a - b| within tolerance.
inline bool agree(double a, double b, const tolerance& t, const limits& L) {
  if (t.skip) return true;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  if (std::isinf(t.abs)) return true;
  if (std::isinf(a) || std::isinf(b)) {
    const double f = std::isinf(a) ? b : a, i = std::isinf(a) ? a : b;
    if (std::isinf(f)) return false;  // opposite infinities
    return (f > 0) == (i > 0) && std::abs(f) * (1 + t.ulps * L.eps) + t.abs >= L.max;
  }
  const double tol = t.ulps * L.eps * std::max(std::abs(a), std::abs(b)) + t.abs + t.ulps * L.denorm;
  return std::abs(a - b) <= tol;
}

inline bool same_bits_or_nan(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

/// A sum of terms as IEEE arithmetic in the element type would give it, in any order: NaN,
/// an infinity, or a finite value within rounding; `overflow` when partial sums may overflow
/// (sums are accumulated in the element type, doc/semantics.md), so anything goes.
struct sum_ref {
  bool nan = false, pinf = false, ninf = false, soft = false;
  double fin = 0, absfin = 0, tol = 0;
  std::size_t n = 0;
  /// A term with its own absolute tolerance; `definite`: an infinite term is an infinity in
  /// every path (not a finite value near overflow in another). An infinity that is not
  /// definite (a product that overflowed here, which another path's FMA keeps exact and adds
  /// to the rest: decisions.md 18) decides neither the sign of an infinite sum nor a NaN
  /// (inf - inf): with it the sum is not compared.
  void add(double t, double t_tol = 0, bool definite = true) {
    ++n;
    if (std::isnan(t)) {
      nan = true;
    } else if (std::isinf(t)) {
      if (definite) (t > 0 ? pinf : ninf) = true;
      else soft = true;
    } else {
      fin += t;
      absfin += std::abs(t);
      tol += t_tol;
    }
  }
  bool overflow(const limits& L) const { return soft || absfin + tol >= L.max / 4; }
  bool expect_nan() const { return nan || (pinf && ninf); }
  /// Does got (the sum times `scale`) agree? `extra`: additional absolute tolerance.
  bool agrees(double got, const limits& L, double scale = 1, double extra = 0) const {
    if (expect_nan()) return std::isnan(got);
    if (overflow(L)) return true;
    if (pinf) return got == std::numeric_limits<double>::infinity();
    if (ninf) return got == -std::numeric_limits<double>::infinity();
    const double want = fin * scale;
    const double t = ((double(n) + 8) * L.eps * absfin + tol) * scale + 2 * L.eps * std::abs(want) +
                     (double(n) + 4) * L.denorm + extra;
    return std::abs(got - want) <= t;
  }
};

inline bool moderate(double v) { return std::isfinite(v) && std::abs(v) >= 1e-3 && std::abs(v) <= 16; }
inline bool moderate_all(const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), moderate); }
inline bool finite_all(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); });
}
inline bool any_nan(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double e) { return std::isnan(e); });
}
/// Finite and at most 2^20 in magnitude: no overflow in squares, products and sums of such.
inline bool tame(double v) { return std::isfinite(v) && std::abs(v) <= 0x1p20; }
inline bool tame_all(const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), tame); }

// ---- buffers -------------------------------------------------------------------------------

/// n elements starting `off` elements past a 64-byte boundary, at the very end of their heap
/// block (AddressSanitizer reports a read or write one element past the end); the whole 8-byte
/// granules before the start are poisoned.
template <class T>
class buffer {
 public:
  buffer(std::size_t n, std::size_t off) : n_(n), off_(off) {
    bytes_ = std::max<std::size_t>((off + n) * sizeof(T), 1);
    base_ = static_cast<T*>(::operator new(bytes_, std::align_val_t(64)));
#ifdef TAD_FUZZ_ASAN
    poisoned_ = off * sizeof(T) / 8 * 8;
    if (poisoned_) ASAN_POISON_MEMORY_REGION(base_, poisoned_);
#endif
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() {
#ifdef TAD_FUZZ_ASAN
    if (poisoned_) ASAN_UNPOISON_MEMORY_REGION(base_, poisoned_);
#endif
    ::operator delete(base_, std::align_val_t(64));
  }
  T* data() { return base_ + off_; }
  std::span<T> span() { return {data(), n_}; }

 private:
  std::size_t n_, off_, bytes_;
  std::size_t poisoned_ = 0;
  T* base_;
};

// ---- inputs --------------------------------------------------------------------------------

/// Byte i of the input, 0 past its end.
inline unsigned byte_at(const std::uint8_t* data, std::size_t size, std::size_t i) { return i < size ? data[i] : 0u; }

/// What the first three bytes mean in both families (doc/testing.md "Input format"): byte 0 the
/// expression (modulo the family's size), byte 1 bit 0 double and bit 2 positive padding values,
/// byte 2 bits 0-2 and 3-5 the misalignments of x and y.
struct input_head {
  std::size_t expr, offx, offy;
  bool dbl, pad_positive;
};
inline input_head decode_head(const std::uint8_t* data, std::size_t size, std::size_t family_size) {
  const unsigned b1 = byte_at(data, size, 1), b2 = byte_at(data, size, 2);
  return {byte_at(data, size, 0) % family_size, b2 & 7u, (b2 >> 3) & 7u, (b1 & 1u) != 0, (b1 & 4u) != 0};
}

/// Transcendental functions: xsimd's batch against glibc's scalar. doc/math.md asserts 2 ulps
/// for exp, expm1, log, log1p, 2 to 4 for sin/cos/tan at random points and 4 for tanh,
/// sigmoid, softplus; 4 ulps covers each.
inline constexpr double fn_ulps = 4;

// ---- the value stream ----------------------------------------------------------------------

class value_stream {
 public:
  /// Values start at byte `start` (past the input's header).
  value_stream(const std::uint8_t* data, std::size_t size, bool pad_positive, std::size_t start = 4)
      : p_(data), size_(size), i_(std::min<std::size_t>(size, start)), pad_positive_(pad_positive) {
    for (std::size_t k = 0; k < size; ++k) state_ = state_ * 6364136223846793005ull + data[k] + 1442695040888963407ull;
  }
  /// The next value in T; `partner` is x[i] while y[i] is decoded (ties between x and y).
  template <class T>
  T next(T partner) {
    T v;
    if (i_ + 3 <= size_) {
      const unsigned sel = p_[i_];
      const unsigned m = p_[i_ + 1] | (unsigned(p_[i_ + 2]) << 8);
      i_ += 3;
      v = decode<T>(sel, m, partner);
    } else {
      state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
      const double u = double(state_ >> 11) * 0x1p-53;  // [0, 1)
      double mag = 0.05 + 3.95 * u;
      if (!pad_positive_ && ((state_ >> 7) & 1u)) mag = -mag;
      v = static_cast<T>(mag);
    }
    prev_ = double(v);
    return v;
  }

 private:
  template <class T>
  T decode(unsigned sel, unsigned m, T partner) {
    using lim = std::numeric_limits<T>;
    const bool neg = sel & 0x80u;
    const unsigned kind = sel & 0x7fu;
    const double frac = double(m) / 65536.0;
    const double sgn = neg ? -1.0 : 1.0;
    double v;
    switch (kind) {
      case 64: return neg ? -lim::quiet_NaN() : lim::quiet_NaN();
      case 65: return T(sgn * lim::infinity());
      case 66: return T(sgn * 0.0);
      case 67: return T(sgn * lim::denorm_min());
      case 68: return T(sgn * double(lim::min()) * (0.5 + 0.5 * frac));  // subnormal
      case 69: return T(sgn * lim::min());
      case 70: return T(sgn * lim::max());
      case 71: return T(sgn * 1e30);
      case 72: return T(sgn * (std::is_same_v<T, float> ? 1e38 : 1e300));
      case 73: return T(sgn * (std::is_same_v<T, float> ? 1e-30 : 1e-300));
      case 74: return T(sgn * 1e-7 * (1 + frac));
      case 75: {  // near k pi/2, nudged by 0..3 ulps
        const int k = int(m & 0xfffu) - 2048;
        T t = T(sgn * k * 1.5707963267948966);
        for (unsigned j = 0; j < (m >> 12) % 4u; ++j) t = std::nextafter(t, lim::infinity());
        return t;
      }
      case 76: return T(neg ? -prev_ : prev_);  // a tie with the previous value
      case 77: return neg ? -partner : partner;  // a tie between x[i] and y[i]
      case 78: {  // any finite magnitude
        const int lo = lim::min_exponent - lim::digits, hi = lim::max_exponent - 1;
        const int e = lo + int((m >> 6) % unsigned(hi - lo + 1));
        return std::ldexp(T(sgn * (1 + double(m & 63u) / 64)), e);
      }
      case 79: {  // near exp's overflow (ln max) or underflow (-ln denorm_min) threshold
        const double thr = (m & 1u) ? std::log(double(lim::max())) : -std::log(double(lim::denorm_min()));
        return T(sgn * (thr + double((m >> 1) % 256u) / 128.0 - 1));
      }
      case 80: case 81: case 82: case 83: case 84: case 85: case 86: case 87:
        v = double(m % 128u) / 2;  // integers and halves: round's ties, pow's integer exponents
        return T(sgn * v);
      case 88: case 89: case 90: case 91:
        v = (1 + frac) * std::ldexp(1.0, 4 + int(kind - 88) * 6);  // large moderate: 16 .. 2^23
        return T(sgn * v);
      default:  // moderate: (1 + frac) 2^e, e in [-9, 3]
        v = (1 + frac) * std::ldexp(1.0, int(kind % 13u) - 9);
        return T(sgn * v);
    }
  }

  const std::uint8_t* p_;
  std::size_t size_, i_;
  bool pad_positive_;
  std::uint64_t state_ = 0x9e3779b97f4a7c15ull;
  double prev_ = 1;
};

// ---- the matrix family (shapes.cpp) --------------------------------------------------------

/// Runs one input of the matrix family (byte 1 bit 3 set; doc/testing.md "Fuzzing").
void fuzz_shapes(const std::uint8_t* data, std::size_t size);
/// Prints the matrix family (fuzz.replay --list).
void list_shapes();
/// The matrix family's size, and how many inputs it has run (the replayer's summary).
std::size_t shapes_family_size();
inline std::size_t g_shapes_runs = 0;

}  // namespace tad_fuzz
