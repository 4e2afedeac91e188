#pragma once
// Test support for matrix products: logical matrices in double, stored as row-major, strided
// (rows ld apart, NaN padding) or column-major (columns ld apart, NaN padding) buffers of T,
// and reference products and gradients by plain loops (the closed forms dA = dY B^T,
// dB = A^T dY), independent of tad and Eigen.

#include <tad/linalg.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace tad_test::linalg {

/// A logical matrix, row-major, in double.
struct dmat {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;
  dmat(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  double& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
  double operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};

inline dmat random_matrix(std::size_t r, std::size_t c, unsigned seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  dmat m(r, c);
  for (double& x : m.v) x = u(gen);
  return m;
}

inline dmat product(const dmat& a, const dmat& b) {
  dmat y(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t q = 0; q < a.cols; ++q)
      for (std::size_t j = 0; j < b.cols; ++j) y(i, j) += a(i, q) * b(q, j);
  return y;
}
inline dmat transposed(const dmat& a) {
  dmat t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

enum class layout { row, strided, col };

/// A logical matrix stored in a buffer of T in one of the layouts, one element past a 64-byte
/// boundary (unaligned), with NaN in every element outside the matrix.
template <class T>
struct stored {
  layout how;
  std::size_t rows, cols, ld;
  std::vector<T> storage;
  T* data;
  stored(const dmat& m, layout l) : how(l), rows(m.rows), cols(m.cols) {
    ld = l == layout::row ? cols : l == layout::strided ? cols + 3 : rows + 2;
    const std::size_t outer = l == layout::col ? cols : rows;
    storage.assign(outer * ld + 64, std::numeric_limits<T>::quiet_NaN());
    data = storage.data() + 1;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) at(i, j) = static_cast<T>(m(i, j));
  }
  T& at(std::size_t i, std::size_t j) { return how == layout::col ? data[j * ld + i] : data[i * ld + j]; }
};

/// The tad leaf of a stored matrix, as a variable named Name or a constant.
template <tad::fixed_string Name, layout L, class T>
auto var_of(const stored<T>& s) {
  if constexpr (L == layout::row) return tad::var<Name>(static_cast<const T*>(s.data), s.rows, s.cols);
  else if constexpr (L == layout::strided) return tad::var<Name>(static_cast<const T*>(s.data), s.rows, s.cols, s.ld);
  else return tad::var<Name>(tad::col_major(static_cast<const T*>(s.data), s.rows, s.cols, s.ld));
}
template <layout L, class T>
auto constant_of(const stored<T>& s) {
  if constexpr (L == layout::row) return tad::constant(static_cast<const T*>(s.data), s.rows, s.cols);
  else if constexpr (L == layout::strided) return tad::constant(static_cast<const T*>(s.data), s.rows, s.cols, s.ld);
  else return tad::constant(tad::col_major(static_cast<const T*>(s.data), s.rows, s.cols, s.ld));
}

/// Tolerance of a gradient computed in T against a reference in double, relative to the
/// reference's largest magnitude: k terms summed per element.
template <class T>
double tolerance(std::size_t k) {
  return (std::is_same_v<T, float> ? 3e-6 : 1e-14) * static_cast<double>(k + 8);
}

/// max |got - want| / max(1, max |want|) over all elements; `got` holds rows x cols row-major.
template <class G>
double relative_error(const G& got, const dmat& want) {
  double worst = 0, scale = 1;
  for (double w : want.v) scale = std::max(scale, std::abs(w));
  BOOST_TEST_REQUIRE(std::size(got) == want.v.size());
  for (std::size_t i = 0; i < want.v.size(); ++i) {
    const double g = static_cast<double>(std::data(got)[i]);
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(g - want.v[i]));
  }
  return worst / scale;
}

}  // namespace tad_test::linalg
