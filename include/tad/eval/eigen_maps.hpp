#pragma once
/// Eigen's view of a product's operands and buffers (eval/program.hpp): row-major, strided,
/// column-major and transposed leaves as Eigen Maps, and where a product's buffers are.

#include <tad/core/expression.hpp>
#include <tad/core/leaf_types.hpp>
#include <tad/core/node.hpp>
#include <tad/ops/linalg.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <span>
#include <type_traits>

namespace tad::detail {

template <class T>
using eigen_rm = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using eigen_cm = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

/// An operand of a product as the program sees it: the transpose of `inner` or `inner` itself;
/// a view (read in place) or an expression (evaluated into a buffer).
template <class O>
struct untransposed {
  using type = O;
};
template <class A>
struct untransposed<node<transpose_op, A>> {
  using type = A;
};
template <class O>
struct operand_of {
  static constexpr bool transposed = is_transpose_node_v<O>;
  using inner = typename untransposed<O>::type;
  template <class I>
  static constexpr bool view_v = [] {
    if constexpr (is_leaf_v<I>) return I::is_array && !is_column_v<I>; else return false;
  }();
  static constexpr bool view = view_v<inner>;
  static constexpr int rank = props<inner>::rank;
  template <class P>
  static constexpr const auto& inner_of(const P& o) {
    if constexpr (transposed) return o.arg; else return o;
  }
};

/// A leaf view as an Eigen map of `rows x cols` (a vector: one row or one column).
template <class T, class L>
auto view_map(const L& l, std::size_t rows, std::size_t cols) {
  using Eigen::Index;
  const auto r = static_cast<Index>(rows), c = static_cast<Index>(cols);
  if constexpr (is_col_major_v<L>) {
    return Eigen::Map<const eigen_cm<T>, 0, Eigen::OuterStride<>>(l.data, r, c, Eigen::OuterStride<>(static_cast<Index>(l.ld)));
  } else if constexpr (is_strided_v<L>) {
    return Eigen::Map<const eigen_rm<T>, 0, Eigen::OuterStride<>>(l.data, r, c, Eigen::OuterStride<>(static_cast<Index>(l.ld)));
  } else if constexpr (is_gathered_v<L>) {
    const auto s = static_cast<Index>(l.stride);
    using stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    return Eigen::Map<const eigen_rm<T>, 0, stride>(l.data, r, c, rows == 1 ? stride(s * c, s) : stride(s, 1));
  } else {
    return Eigen::Map<const eigen_rm<T>>(l.data, r, c);
  }
}
template <class T>
auto dense_map(T* p, std::size_t rows, std::size_t cols) {
  return Eigen::Map<eigen_rm<T>>(p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
template <class T>
auto const_map(const T* p, std::size_t rows, std::size_t cols) {
  return Eigen::Map<const eigen_rm<T>>(p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}

/// Where a product's buffers are (offsets into the workspace) and the shapes Eigen sees.
struct product_layout {
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::size_t a_rows = 0, a_cols = 0;  // the left operand's inner (untransposed) matrix
  std::size_t b_rows = 0, b_cols = 0;  // the right operand's
  std::size_t dy = none;               // the adjoint of the result
  std::size_t a = none, da = none;     // an evaluated left operand and its adjoint
  std::size_t b = none, db = none;
};

/// A contiguous buffer's span in the workspace.
template <class T>
std::span<T> ws_span(T* ws, std::size_t offset, std::size_t n) {
  return {ws + offset, n};
}

}  // namespace tad::detail
