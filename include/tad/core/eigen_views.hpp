#pragma once
/// Eigen matrices, vectors and Maps as tad leaves, without a copy and without including Eigen:
/// an Eigen dense object is recognized by its members (Scalar, IsRowMajor, data(), rows(),
/// cols(), innerStride(), outerStride()). doc/linear-algebra.md, "Eigen interop".
///
///   Eigen owning row-major matrix          -> matrix_var / matrix_constant
///   other row-major (a Map, with strides)  -> strided_matrix_var (rows outerStride() apart)
///   column-major (owning or Map)           -> col_major_matrix_var (columns outerStride() apart)
///   vector (a compile-time row or column)  -> array_var, or strided_array_var (innerStride() apart)

#include <tad/core/col_major.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/leaf_types.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tad::detail {

/// An Eigen dense expression with direct access to its coefficients (Matrix, Array, Map, Ref).
template <class M>
concept eigen_dense = requires(const M& m) {
  typename M::Scalar;
  M::IsRowMajor;
  M::RowsAtCompileTime;
  M::ColsAtCompileTime;
  M::InnerStrideAtCompileTime;
  m.data();
  m.rows();
  m.cols();
  m.innerStride();
  m.outerStride();
} && real<std::remove_cv_t<typename M::Scalar>>;

/// Does M own its coefficients (Eigen::Matrix, Eigen::Array), rather than view them (a Map)?
template <class M>
concept eigen_owning = eigen_dense<M> && requires(M& m) { m.conservativeResize(1, 1); };

template <class M>
inline constexpr bool eigen_vector_v = M::RowsAtCompileTime == 1 || M::ColsAtCompileTime == 1;

inline std::size_t eigen_extent(long n) {
  return static_cast<std::size_t>(n);
}

/// The tad leaf viewing the Eigen object m: a variable named Name, or (Variable false) a constant.
template <bool Variable, fixed_string Name, class M>
auto eigen_leaf(const M& m) {
  using T = std::remove_cv_t<typename M::Scalar>;
  const T* p = m.data();
  const std::size_t rows = eigen_extent(m.rows()), cols = eigen_extent(m.cols());
  if constexpr (eigen_vector_v<M>) {
    const std::size_t n = rows * cols;
    if constexpr (M::InnerStrideAtCompileTime == 1) {  // contiguous by its type
      if constexpr (Variable) return array_var<Name, T>{p, n};
      else return array_constant<T>{p, n};
    } else {
      const std::size_t stride = eigen_extent(m.innerStride());
      if constexpr (Variable) return strided_array_var<Name, T>{p, n, stride};
      else return strided_array_constant<T>{p, n, stride};
    }
  } else {
    if (m.innerStride() != 1) {
      throw std::invalid_argument("tad: an Eigen matrix whose elements are " + std::to_string(m.innerStride()) +
                                  " apart within a " + (M::IsRowMajor ? "row" : "column") +
                                  " (an inner stride) is not a tad view; copy it");
    }
    const std::size_t ld = eigen_extent(m.outerStride());
    if constexpr (!M::IsRowMajor) {
      const std::size_t size = matrix_area(rows, cols, "tad: an Eigen column-major matrix");
      if constexpr (Variable) return col_major_matrix_var<Name, T>{p, size, rows, cols, ld};
      else return col_major_matrix_constant<T>{p, size, rows, cols, ld};
    } else if constexpr (eigen_owning<M>) {
      const std::size_t size = matrix_area(rows, cols, "tad: an Eigen matrix");
      if constexpr (Variable) return matrix_var<Name, T>{p, size, rows, cols};
      else return matrix_constant<T>{p, size, rows, cols};
    } else {
      const std::size_t size = strided_area(rows, cols, ld, "tad: an Eigen row-major Map");
      if constexpr (Variable) return strided_matrix_var<Name, T>{p, size, rows, cols, ld};
      else return strided_matrix_constant<T>{p, size, rows, cols, ld};
    }
  }
}

}  // namespace tad::detail
