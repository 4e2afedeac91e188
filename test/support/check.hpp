#pragma once
// Test support: array lengths around the SIMD width, unaligned buffers, random data and
// central differences. Reference gradients are computed in double (also for float tests), from
// central differences of the expression's value, never from tad's own gradient.

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

namespace tad_test {

/// The element types every templated test runs over: float and double, or the one a stage
/// chose (TAD_TEST_REALS in test/CMakeLists.txt).
#ifdef TAD_TEST_REAL
using reals = std::tuple<TAD_TEST_REAL>;
#else
using reals = std::tuple<float, double>;
#endif
/// The element type of a case written for one type that need not be double: double, or the
/// stage's one type (a float-only stage then compiles no double program for it).
using one_real = std::tuple_element_t<std::tuple_size_v<reals> - 1, reals>;

/// The lengths every array test runs at: around the SIMD widths (2, 4, 8) and a large one.
inline const std::vector<std::size_t> lengths{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1000};

/// A buffer whose data starts `offset` elements past a 64-byte boundary (offset 1: unaligned
/// for every SIMD width).
template <class T>
class buffer {
 public:
  explicit buffer(std::size_t n, std::size_t offset = 1) : storage_(n + 64), n_(n) {
    auto addr = reinterpret_cast<std::uintptr_t>(storage_.data());
    std::size_t skip = ((64 - addr % 64) % 64) / sizeof(T) + offset;
    data_ = storage_.data() + skip;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return n_; }
  T* begin() { return data_; }
  T* end() { return data_ + n_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, n_}; }
  std::span<const T> cspan() const { return {data_, n_}; }

 private:
  std::vector<T> storage_;
  std::size_t n_;
  T* data_;
};

/// Runs f, which must throw an E whose what() is `what`.
template <class E, class F>
void expect_message(F&& f, std::string_view what) {
  try {
    f();
    BOOST_FAIL("no exception; expected: " << what);
  } catch (const E& err) {
    BOOST_TEST(std::string_view(err.what()) == what);
  }
}

/// Runs f, which must throw tad::shape_error whose what() is `what`; expected() and got() are
/// checked when given (SIZE_MAX: not checked).
template <class F>
void expect_shape_error(F&& f, std::string_view what, std::size_t expected = static_cast<std::size_t>(-1),
                        std::size_t got = static_cast<std::size_t>(-1)) {
  try {
    f();
    BOOST_FAIL("no tad::shape_error; expected: " << what);
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string_view(err.what()) == what);
    if (expected != static_cast<std::size_t>(-1)) BOOST_TEST(err.expected() == expected);
    if (got != static_cast<std::size_t>(-1)) BOOST_TEST(err.got() == got);
  }
}

/// Fills b with uniform values in [lo, hi) from a fixed seed.
template <class B>
void fill_uniform(B& b, double lo, double hi, unsigned seed = 42) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& v : b) v = static_cast<std::remove_reference_t<decltype(v)>>(d(gen));
}

/// Central difference of f at x: (f(x + h) - f(x - h)) / 2h, with h scaled to |x|.
template <class F>
double central(F&& f, double x, double rel_step = 1e-6) {
  const double h = rel_step * std::max(1.0, std::abs(x));
  return (f(x + h) - f(x - h)) / (2 * h);
}

/// Relative closeness with an absolute floor: |a - b| <= tol * max(1, |b|).
inline bool close(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

/// Tolerance for comparing a gradient computed in T with a double central difference.
template <class T>
constexpr double grad_tol() {
  return std::is_same_v<T, float> ? 2e-3 : 1e-6;
}

}  // namespace tad_test
