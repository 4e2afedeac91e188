#pragma once
/// Leaves: variables (differentiable, named), runtime constants and compile-time literals, made
/// by var, constant, constant_ref, column_of and row_of (the types: core/leaf_types.hpp).

#include <tad/core/col_major.hpp>
#include <tad/core/eigen_views.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/leaf_types.hpp>

#include <cstddef>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tad {

/// `var<"x">(x)`: a variable named "x". `x` may be a float/double lvalue (bound by reference),
/// an rvalue (copied), or contiguous storage (`std::vector`, `std::span`, array) viewed in place,
/// or a view: `column_of(m, k)` (a strided vector), `col_major(p, rows, cols)` (a matrix), an
/// Eigen matrix, vector or Map (row- or column-major, with strides: core/eigen_views.hpp).
template <fixed_string Name, class X>
constexpr auto var(X&& x) noexcept {
  detail::require_user_name<Name>();
  using U = std::remove_cvref_t<X>;
  if constexpr (real<U>) {
    if constexpr (std::is_lvalue_reference_v<X>) {
      return scalar_var<Name, U, true>{&x, U{}};
    } else {
      return scalar_var<Name, U>{nullptr, x};
    }
  } else if constexpr (detail::eigen_dense<U>) {
    static_assert(std::is_lvalue_reference_v<X> || !detail::eigen_owning<U>,
                  "tad::var<name>(m): m is a temporary Eigen matrix; the variable would dangle. Pass an lvalue");
    return detail::eigen_leaf<true, Name>(x);
  } else if constexpr (detail::is_strided_view_v<U>) {
    return strided_array_var<Name, typename U::value_type>{x.data, x.size, x.stride};
  } else if constexpr (detail::is_col_major_view_v<U>) {
    return col_major_matrix_var<Name, typename U::value_type>{x.data, x.size, x.rows, x.cols, x.ld};
  } else if constexpr (detail::row_major_matrix<U>) {
    static_assert(std::is_lvalue_reference_v<X>,
                  "tad::var<name>(m): m is a temporary matrix; the variable would dangle. Pass an lvalue");
    return matrix_var<Name, detail::range_real_t<U>>{std::ranges::data(x), std::ranges::size(x),
                                                     static_cast<std::size_t>(x.rows()),
                                                     static_cast<std::size_t>(x.cols())};
  } else if constexpr (detail::real_range<U>) {
    static_assert(std::is_lvalue_reference_v<X> || std::ranges::borrowed_range<U>,
                  "tad::var<name>(r): r is a temporary container; the variable would dangle. "
                  "Pass an lvalue or a std::span");
    return array_var<Name, detail::range_real_t<U>>{std::ranges::data(x), std::ranges::size(x)};
  } else {
    static_assert(real<U> || detail::real_range<U>,
                  "tad::var<name>(x): x must be a float or double, or contiguous storage of them");
  }
}

/// `var<"x">(p, n)`: a variable viewing `n` elements starting at `p`.
template <fixed_string Name, real T>
constexpr array_var<Name, T> var(const T* p, std::size_t n) noexcept {
  detail::require_user_name<Name>();
  return {p, n};
}

/// `var<"X">(p, rows, cols)`: a matrix variable viewing `rows x cols` elements starting at `p`,
/// row-major (row r starts at `p + r * cols`). Throws std::length_error if rows * cols overflows.
template <fixed_string Name, real T>
constexpr matrix_var<Name, T> var(const T* p, std::size_t rows, std::size_t cols) {
  detail::require_user_name<Name>();
  return {p, detail::matrix_area(rows, cols, "tad::var<name>(p, rows, cols)"), rows, cols};
}

/// `var<"X">(p, rows, cols, ld)`: a matrix variable viewing `rows x cols` elements whose row r
/// starts at `p + r * ld` (`ld >= cols`; a block of a larger row-major matrix). Its gradient is
/// dense `rows x cols`. Throws std::invalid_argument if ld < cols (and rows > 1),
/// std::length_error if the view's extent overflows.
template <fixed_string Name, real T>
constexpr strided_matrix_var<Name, T> var(const T* p, std::size_t rows, std::size_t cols, std::size_t ld) {
  detail::require_user_name<Name>();
  return {p, detail::strided_area(rows, cols, ld, "tad::var<name>(p, rows, cols, ld)"), rows, cols, ld};
}

/// `constant(c)`: a runtime value that is not differentiated. Arithmetic values are copied;
/// contiguous storage and views (`column_of`, `col_major`) are viewed in place.
template <class X>
constexpr auto constant(X&& x) noexcept {
  using U = std::remove_cvref_t<X>;
  if constexpr (std::is_arithmetic_v<U>) {
    return scalar_constant<U>{x};
  } else if constexpr (detail::eigen_dense<U>) {
    static_assert(std::is_lvalue_reference_v<X> || !detail::eigen_owning<U>,
                  "tad::constant(m): m is a temporary Eigen matrix; the constant would dangle. Pass an lvalue");
    return detail::eigen_leaf<false, "">(x);
  } else if constexpr (detail::is_strided_view_v<U>) {
    return strided_array_constant<typename U::value_type>{x.data, x.size, x.stride};
  } else if constexpr (detail::is_col_major_view_v<U>) {
    return col_major_matrix_constant<typename U::value_type>{x.data, x.size, x.rows, x.cols, x.ld};
  } else if constexpr (detail::row_major_matrix<U>) {
    static_assert(std::is_lvalue_reference_v<X>,
                  "tad::constant(m): m is a temporary matrix; the constant would dangle. Pass an lvalue");
    return matrix_constant<detail::range_real_t<U>>{std::ranges::data(x), std::ranges::size(x),
                                                    static_cast<std::size_t>(x.rows()),
                                                    static_cast<std::size_t>(x.cols())};
  } else if constexpr (detail::real_range<U>) {
    static_assert(std::is_lvalue_reference_v<X> || std::ranges::borrowed_range<U>,
                  "tad::constant(r): r is a temporary container; the constant would dangle. "
                  "Pass an lvalue or a std::span");
    return array_constant<detail::range_real_t<U>>{std::ranges::data(x), std::ranges::size(x)};
  } else {
    static_assert(std::is_arithmetic_v<U> || detail::real_range<U>,
                  "tad::constant(x): x must be arithmetic, or contiguous storage of float/double");
  }
}

/// `constant(p, n)`: a non-differentiated array viewing `n` elements starting at `p`.
template <real T>
constexpr array_constant<T> constant(const T* p, std::size_t n) noexcept {
  return {p, n};
}

/// `constant(p, rows, cols)`: a non-differentiated matrix viewing `rows x cols` row-major
/// elements starting at `p`. Throws std::length_error if rows * cols overflows.
template <real T>
constexpr matrix_constant<T> constant(const T* p, std::size_t rows, std::size_t cols) {
  return {p, detail::matrix_area(rows, cols, "tad::constant(p, rows, cols)"), rows, cols};
}

/// `constant(p, rows, cols, ld)`: a non-differentiated matrix viewing `rows x cols` elements
/// whose row r starts at `p + r * ld` (`ld >= cols`); errors as var's.
template <real T>
constexpr strided_matrix_constant<T> constant(const T* p, std::size_t rows, std::size_t cols, std::size_t ld) {
  return {p, detail::strided_area(rows, cols, ld, "tad::constant(p, rows, cols, ld)"), rows, cols, ld};
}

/// `column_of(m, k)`: column k of the row-major matrix storage m (`tad::matrix`, or a type with
/// `rows()`, `cols()` and `tad_row_major`) as a strided vector view of `m.rows()` elements,
/// `m.cols()` apart, for `var<"c">(...)` or `constant(...)`. std::out_of_range if k >= cols.
template <detail::row_major_matrix M>
constexpr auto column_of(const M& m, std::size_t k) {
  using T = detail::range_real_t<M>;
  const auto cols = static_cast<std::size_t>(m.cols());
  if (k >= cols)
    throw std::out_of_range("tad::column_of(m, " + std::to_string(k) + "): m has " + std::to_string(cols) + " columns");
  const std::size_t rows = static_cast<std::size_t>(m.rows());
  // No offset into storage of no rows (its data may be null).
  return strided_view<T>{rows == 0 ? std::ranges::data(m) : std::ranges::data(m) + k, rows, cols};
}
/// `column_of(p, rows, cols, k)`: column k of `rows x cols` row-major elements at p (rows `ld`
/// apart with the five-argument form) as a strided vector view. std::out_of_range if k >= cols.
template <real T>
constexpr strided_view<T> column_of(const T* p, std::size_t rows, std::size_t cols, std::size_t k) {
  if (k >= cols)
    throw std::out_of_range("tad::column_of(p, rows, cols, " + std::to_string(k) + "): there are " +
                            std::to_string(cols) + " columns");
  return {rows == 0 ? p : p + k, rows, cols};
}
template <real T>
constexpr strided_view<T> column_of(const T* p, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t k) {
  if (k >= cols)
    throw std::out_of_range("tad::column_of(p, rows, cols, ld, " + std::to_string(k) + "): there are " +
                            std::to_string(cols) + " columns");
  return {rows == 0 ? p : p + k, rows, ld};
}
/// `row_of(m, r)`: row r of the row-major matrix storage m as a contiguous span (a vector for
/// `var` or `constant`). std::out_of_range if r >= rows.
template <detail::row_major_matrix M>
constexpr auto row_of(M& m, std::size_t r) {
  const auto rows = static_cast<std::size_t>(m.rows()), cols = static_cast<std::size_t>(m.cols());
  if (r >= rows)
    throw std::out_of_range("tad::row_of(m, " + std::to_string(r) + "): m has " + std::to_string(rows) + " rows");
  return std::span(std::ranges::data(m) + r * cols, cols);  // r < rows: the storage is not empty
}

/// `constant_ref(c)`: a non-differentiated scalar that reads the lvalue `c` at every evaluation,
/// so a parameter can change between evaluations without rebuilding the expression.
template <class T>
  requires std::is_arithmetic_v<T>
constexpr scalar_constant_ref<T> constant_ref(const T& c) noexcept {
  return {&c, T{}};
}

}  // namespace tad
