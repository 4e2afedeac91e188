#pragma once
/// A product's value and adjoints on Eigen's GEMM and GEMV kernels, called directly
/// (doc/decisions.md 48).
///
/// `dst.noalias() = a * b` instantiates, besides the GEMM kernel, Eigen's dispatch around it:
/// a coefficient-based product for small sizes, two GEMV fallbacks and their evaluators, once
/// per operand type. That dispatch cost as much compile time as the kernels. tad knows its
/// operands (maps with a unit inner stride, or their transposes), so it calls the kernels
/// Eigen's dispatch ends in: `general_matrix_matrix_product` when both extents of the result
/// exceed one, `general_matrix_vector_product` when one of them is one (Eigen makes the same
/// choice at run time). Any other expression (an operand with an inner stride, a rule's
/// expression that is not a plain product) goes through Eigen's public assignment.
///
/// The kernels are Eigen's internal API: used with Eigen 3.4 only (the version tad requires,
/// Debian's libeigen3-dev); with any other version every product takes the public path.

#include <Eigen/Core>

#include <algorithm>
#include <type_traits>

#if EIGEN_VERSION_AT_LEAST(3, 4, 0) && !EIGEN_VERSION_AT_LEAST(3, 4, 90)
#define TAD_EIGEN_KERNELS 1
#else
#define TAD_EIGEN_KERNELS 0
#endif

namespace tad::detail {

/// Can Eigen's kernels read X in place: scalars of T, direct access, a unit inner stride?
template <class X, class T>
inline constexpr bool kernel_operand_v = [] {
  if constexpr (requires(const X& x) {
                  x.data();
                  x.outerStride();
                  X::InnerStrideAtCompileTime;
                  X::IsRowMajor;
                }) {
    return std::is_same_v<typename X::Scalar, T> && X::InnerStrideAtCompileTime == 1;
  } else {
    return false;
  }
}();

#if TAD_EIGEN_KERNELS
/// y (`rows`, unit stride) += alpha M x, M `rows x cols` of storage order O and leading
/// dimension ld, x of stride incx (1 when M is row-major: that kernel loads x in packets).
template <int O, class T>
void kernel_gemv(Eigen::Index rows, Eigen::Index cols, const T* m, Eigen::Index ld, const T* x, Eigen::Index incx,
                 T* y, T alpha) {
  namespace ei = Eigen::internal;
  using lhs = ei::const_blas_data_mapper<T, Eigen::Index, O>;
  using rhs = ei::const_blas_data_mapper<T, Eigen::Index, O == Eigen::ColMajor ? Eigen::RowMajor : Eigen::ColMajor>;
  ei::general_matrix_vector_product<Eigen::Index, T, lhs, O, false, T, rhs, false>::run(rows, cols, lhs(m, ld),
                                                                                       rhs(x, incx), y, 1, alpha);
}

/// c (row-major, m x n, leading dimension n) += a b, a and b read in place by Eigen's kernels.
template <class T, class A, class B>
void kernel_product_add(T* c, const A& a, const B& b) {
  namespace ei = Eigen::internal;
  using Eigen::Index;
  constexpr int oa = A::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor;
  constexpr int ob = B::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor;
  const Index m = a.rows(), k = a.cols(), n = b.cols();
  if (m == 0 || n == 0 || k == 0) return;
  const T* pa = a.data();
  const T* pb = b.data();
  const Index lda = a.outerStride(), ldb = b.outerStride();
  // The stride between consecutive elements of a's row i and of b's column j.
  const Index a_row_step = oa == Eigen::RowMajor ? 1 : lda;
  const Index b_col_step = ob == Eigen::RowMajor ? ldb : 1;
  if (n == 1 && (oa == Eigen::ColMajor || b_col_step == 1)) {
    kernel_gemv<oa>(m, k, pa, lda, pb, b_col_step, c, T(1));  // c = a b, b one column
  } else if (m == 1 && (ob == Eigen::RowMajor || a_row_step == 1)) {
    // c^T = b^T a^T: b^T has the other storage order and the same leading dimension.
    kernel_gemv<ob == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor>(n, k, pb, ldb, pa, a_row_step, c, T(1));
  } else {
    ei::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(m, n, k, 1,
                                                                                                          true);
    ei::general_matrix_matrix_product<Index, T, oa, false, T, ob, false, Eigen::RowMajor, 1>::run(
        m, n, k, pa, lda, pb, ldb, c, 1, n, T(1), blocking, nullptr);
  }
}
#endif

/// Is X an Eigen product of two operands the kernels read in place?
template <class X, class T>
struct kernel_product : std::false_type {};
#if TAD_EIGEN_KERNELS
template <class L, class R, class T>
struct kernel_product<Eigen::Product<L, R, 0>, T>
    : std::bool_constant<kernel_operand_v<std::remove_cvref_t<L>, T> && kernel_operand_v<std::remove_cvref_t<R>, T>> {};
#endif

/// d (a contiguous row-major map) = x, or += x when Add; a product of kernel operands goes to
/// Eigen's kernels, anything else through Eigen's assignment.
template <bool Add, class D, class X>
void assign_product(D& d, const X& x) {
  using T = typename std::remove_cvref_t<D>::Scalar;
#if TAD_EIGEN_KERNELS
  if constexpr (kernel_product<X, T>::value) {
    if constexpr (!Add) std::fill_n(d.data(), d.size(), T(0));
    kernel_product_add(d.data(), x.lhs(), x.rhs());
    return;
  }
#endif
  if constexpr (!kernel_product<X, T>::value) {
    if constexpr (Add) d.noalias() += x; else d.noalias() = x;
  }
}

}  // namespace tad::detail
