#pragma once
/// Column-major matrix views (doc/shapes.md, "Column-major matrices"): `tad::col_major(p, rows,
/// cols[, ld])` and the leaves `var<"X">(...)` and `constant(...)` make of it.

#include <tad/core/fixed_string.hpp>
#include <tad/core/leaf_types.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tad {

/// `rows x cols` elements stored column by column, columns `ld` elements apart (`ld >= rows`):
/// element (r, c) at `data[c * ld + r]` (Fortran, BLAS and Eigen's default order). What
/// `col_major` returns, and what `var` and `constant` take for a column-major matrix.
template <real T>
struct col_major_view {
  using value_type = T;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;
};

namespace detail {
/// rows * cols of a column-major view, after checking ld >= rows and that the span fits
/// std::size_t; std::invalid_argument or std::length_error naming `api`.
inline constexpr std::size_t col_major_area(std::size_t rows, std::size_t cols, std::size_t ld, const char* api) {
  if (cols > 1 && ld < rows)
    throw std::invalid_argument(std::string(api) + ": ld (" + std::to_string(ld) + ") is less than rows (" +
                                std::to_string(rows) + "): columns would overlap");
  if (cols > 1 && ld != 0 && cols - 1 > (static_cast<std::size_t>(-1) - rows) / ld)
    throw std::length_error(std::string(api) + ": (cols - 1) * ld + rows overflows std::size_t");
  return matrix_area(rows, cols, api);
}
}  // namespace detail

/// A differentiable column-major matrix named `Name` (`var<"X">(col_major(p, rows, cols))`).
/// The engine computes matrices row by row, so a row of it is read as a gather (one element
/// per lane, `ld` apart); its gradient is a dense row-major `rows x cols` matrix, as for every
/// matrix variable (doc/shapes.md, "Column-major matrices").
template <fixed_string Name, real T>
struct col_major_matrix_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = true;
  static constexpr bool col_major = true;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;  // elements from one column's start to the next's
};

/// A runtime column-major matrix that is not differentiated (`constant(col_major(p, rows, cols))`).
template <real T>
struct col_major_matrix_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = false;
  static constexpr bool col_major = true;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;
};

/// `col_major(p, rows, cols)`: the `rows x cols` elements at p in column-major order (column c
/// at `p + c * rows`), for `var<"X">(...)` or `constant(...)`. std::length_error if the view's
/// extent overflows std::size_t.
template <real T>
constexpr col_major_view<T> col_major(const T* p, std::size_t rows, std::size_t cols) {
  return {p, detail::col_major_area(rows, cols, rows, "tad::col_major(p, rows, cols)"), rows, cols, rows};
}

/// `col_major(p, rows, cols, ld)`: column c at `p + c * ld` (`ld >= rows`: a block of a larger
/// column-major matrix, or an Eigen `Map` with an outer stride). std::invalid_argument if
/// ld < rows (and cols > 1), std::length_error if the view's extent overflows.
template <real T>
constexpr col_major_view<T> col_major(const T* p, std::size_t rows, std::size_t cols, std::size_t ld) {
  return {p, detail::col_major_area(rows, cols, ld, "tad::col_major(p, rows, cols, ld)"), rows, cols, ld};
}

namespace detail {
template <class V>
struct is_col_major_view : std::false_type {};
template <class T>
struct is_col_major_view<col_major_view<T>> : std::true_type {};
/// Is V a col_major_view?
template <class V>
inline constexpr bool is_col_major_view_v = is_col_major_view<V>::value;
}  // namespace detail

}  // namespace tad
