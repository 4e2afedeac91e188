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
/// choice at run time), and a loop of its own for a small product (as Eigen's `*` does: below
/// 20 for rows + depth + cols, the kernels' blocking and packing cost more than the
/// arithmetic). Any other expression (an operand with an inner stride, a rule's
/// expression that is not a plain product) goes through Eigen's public assignment.
///
/// The kernels are Eigen's internal API: used with Eigen 3.4 only (the version tad requires,
/// Debian's libeigen3-dev); with any other version every product takes the public path.
///
/// A GEMM packs blocks of its operands into two buffers. Eigen takes them from the stack up to
/// EIGEN_STACK_ALLOCATION_LIMIT (128 KB) and from the heap above it, at every call; given
/// memory (a program's workspace, `pack`) that holds them, the kernel packs there instead.

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
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

/// Below this sum of a product's extents (rows + depth + cols) the kernels cost more than the
/// arithmetic: a program's 4 x 4 x 4 products took 1.6x the time of Eigen's `*`, which runs
/// them coefficient by coefficient. The same threshold as Eigen's (20 unless a program
/// defines EIGEN_GEMM_TO_COEFFBASED_THRESHOLD before including Eigen).
inline constexpr Eigen::Index small_product_extents = EIGEN_GEMM_TO_COEFFBASED_THRESHOLD;

/// c (row-major, m x n, leading dimension n) += a b coefficient by coefficient, for the small
/// products below small_product_extents: a(i, p) at a[i ai + p ap], b(p, j) at b[p bp + j bj].
/// One function per T whatever the storage orders (doc/decisions.md 50).
template <class T>
void small_product_add(T* c, Eigen::Index m, Eigen::Index n, Eigen::Index k, const T* a, Eigen::Index ai,
                       Eigen::Index ap, const T* b, Eigen::Index bp, Eigen::Index bj) {
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      const T* x = a + i * ai;
      const T* y = b + j * bj;
      T s = c[i * n + j];
      for (Eigen::Index p = 0; p < k; ++p, x += ap, y += bp) s += *x * *y;
      c[i * n + j] = s;
    }
  }
}

/// The blocking of one GEMM into a row-major m x n destination over depth k: the cache blocks
/// Eigen's gemm_blocking_space computes, with the packing buffers placed in caller memory.
template <class T>
class placed_blocking : public Eigen::internal::level3_blocking<T, T> {
 public:
  placed_blocking(Eigen::Index m, Eigen::Index n, Eigen::Index k) {
    // Eigen computes a row-major product as its transpose: n rows, m columns.
    this->m_mc = n;
    this->m_nc = m;
    this->m_kc = k;
    Eigen::internal::computeProductBlockingSizes<T, T, 1, Eigen::Index>(this->m_kc, this->m_mc, this->m_nc, 1);
  }
  /// The elements of T both buffers take, each aligned for Eigen's packet stores.
  std::size_t elements() const { return 2 * align + size(this->m_mc) + size(this->m_nc); }
  /// Places the buffers in [p, p + elements()).
  void place(T* p) {
    this->m_blockA = aligned(p);
    this->m_blockB = aligned(this->m_blockA + size(this->m_mc));
  }

 private:
  static constexpr std::size_t align = EIGEN_MAX_ALIGN_BYTES / sizeof(T) > 0 ? EIGEN_MAX_ALIGN_BYTES / sizeof(T) : 1;
  std::size_t size(Eigen::Index extent) const {
    return static_cast<std::size_t>(this->m_kc) * static_cast<std::size_t>(extent);
  }
  static T* aligned(T* p) {
    void* at = p;
    std::size_t space = align * sizeof(T);  // an aligned address is at most this far
    return static_cast<T*>(std::align(align * sizeof(T), sizeof(T), at, space));
  }
};

/// The elements of T a GEMM into an m x n destination over depth k packs into (0 when Eigen's
/// kernels are not used).
template <class T>
std::size_t gemm_pack_elements(std::size_t m, std::size_t n, std::size_t k) {
  if (m == 0 || n == 0 || k == 0 || m + n + k < static_cast<std::size_t>(small_product_extents)) return 0;
  return placed_blocking<T>(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k))
      .elements();
}

/// c (row-major, m x n, leading dimension n) += a b, a and b read in place by Eigen's kernels
/// (by small_product_add when the product is small); the GEMM's packing buffers in `pack` when
/// it is large enough, else where Eigen puts them.
template <class T, class A, class B>
void kernel_product_add(T* c, const A& a, const B& b, std::span<T> pack) {
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
  if (m + n + k < small_product_extents) {
    small_product_add(c, m, n, k, pa, oa == Eigen::RowMajor ? lda : 1, a_row_step, pb, b_col_step,
                      ob == Eigen::RowMajor ? 1 : ldb);
  } else if (n == 1 && (oa == Eigen::ColMajor || b_col_step == 1)) {
    kernel_gemv<oa>(m, k, pa, lda, pb, b_col_step, c, T(1));  // c = a b, b one column
  } else if (m == 1 && (ob == Eigen::RowMajor || a_row_step == 1)) {
    // c^T = b^T a^T: b^T has the other storage order and the same leading dimension.
    kernel_gemv<ob == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor>(n, k, pb, ldb, pa, a_row_step, c, T(1));
  } else {
    placed_blocking<T> blocking(m, n, k);
    if (blocking.elements() <= pack.size()) blocking.place(pack.data());
    ei::general_matrix_matrix_product<Index, T, oa, false, T, ob, false, Eigen::RowMajor, 1>::run(
        m, n, k, pa, lda, pb, ldb, c, 1, n, T(1), blocking, nullptr);
  }
}
#endif

#if !TAD_EIGEN_KERNELS
template <class T>
std::size_t gemm_pack_elements(std::size_t, std::size_t, std::size_t) {
  return 0;
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
/// Eigen's kernels (packing into `pack` when it is large enough), anything else through
/// Eigen's assignment.
template <bool Add, class D, class X, class T = typename std::remove_cvref_t<D>::Scalar>
void assign_product(D& d, const X& x, [[maybe_unused]] std::span<T> pack = {}) {
#if TAD_EIGEN_KERNELS
  if constexpr (kernel_product<X, T>::value) {
    if constexpr (!Add) std::fill_n(d.data(), d.size(), T(0));
    kernel_product_add(d.data(), x.lhs(), x.rhs(), pack);
    return;
  }
#endif
  if constexpr (!kernel_product<X, T>::value) {
    if constexpr (Add) d.noalias() += x; else d.noalias() = x;
  }
}

}  // namespace tad::detail
