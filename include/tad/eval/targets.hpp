#pragma once
/// Gradient destinations (`tad::wrt(x, buffer)`), and the staging of those the engine cannot
/// write in place: an Eigen buffer with strides or in column-major order. The engine writes a
/// matrix's gradient row by row into contiguous storage; such a target gets it in a staging
/// buffer first, then copied into place (one pass over the parameter).

#include <cstddef>
#include <tuple>
#include <utility>

namespace tad {

/// A gradient destination for `grad_into`: a variable and the caller's buffer for its gradient.
template <class X, class T>
struct wrt_target {
  X var;
  T* data = nullptr;
  std::size_t size = 0;  // elements of the gradient (rows * cols for a matrix)
  bool shaped = false;   // the buffer knows its shape (a tad::matrix, an Eigen matrix): checked
  std::size_t rows = 0;
  std::size_t cols = 0;
  /// 0: contiguous, row-major. Else element (r, c) of the gradient is at
  /// `data[r * row_stride + c * col_stride]` (an Eigen buffer with strides, or column-major;
  /// a strided vector: rows = size, cols = 1) and the gradient goes through a staging buffer.
  std::size_t row_stride = 0;
  std::size_t col_stride = 0;
};

namespace detail {

template <class X, class T>
constexpr bool staged(const wrt_target<X, T>& t) noexcept {
  return t.row_stride != 0;
}
/// The elements from t.data that t's buffer spans (for the overlap checks).
template <class X, class T>
constexpr std::size_t target_span(const wrt_target<X, T>& t) noexcept {
  if (!staged(t) || t.size == 0) return t.size;
  return (t.rows - 1) * t.row_stride + (t.cols - 1) * t.col_stride + 1;
}
/// The staging elements the targets need.
template <class... X, class... T>
constexpr std::size_t staging_size(const wrt_target<X, T>&... t) noexcept {
  return ((staged(t) ? t.size : 0) + ... + std::size_t{0});
}

/// Copies a staged gradient (row-major, `from`) into its target's buffer, in the order of the
/// buffer's smaller stride (a column-major buffer column by column).
template <class X, class T>
void copy_staged(const T* from, const wrt_target<X, T>& t) {
  if (!staged(t)) return;
  const std::size_t rs = t.row_stride, cs = t.col_stride;
  if (t.cols > 1 && cs <= rs) {
    for (std::size_t r = 0; r < t.rows; ++r)
      for (std::size_t c = 0; c < t.cols; ++c) t.data[r * rs + c * cs] = from[r * t.cols + c];
  } else {
    for (std::size_t c = 0; c < t.cols; ++c)
      for (std::size_t r = 0; r < t.rows; ++r) t.data[r * rs + c * cs] = from[r * t.cols + c];
  }
}

/// Sets every element of t's gradient to v, in t's layout.
template <class X, class T>
void fill_target(const wrt_target<X, T>& t, T v) {
  if (!staged(t)) {
    for (std::size_t i = 0; i < t.size; ++i) t.data[i] = v;
    return;
  }
  for (std::size_t r = 0; r < t.rows; ++r)
    for (std::size_t c = 0; c < t.cols; ++c) t.data[r * t.row_stride + c * t.col_stride] = v;
}

/// `run(targets...)` with every staged target replaced by a contiguous one in `area`
/// (`staging_size(t...)` elements, consecutive), then the staged gradients copied into place.
template <class T, class Run, class... X>
auto through_staging(T* area, Run&& run, const wrt_target<X, T>&... t) {
  std::size_t at = 0;
  const auto contiguous = [&](auto target) {
    if (staged(target)) {
      target.data = area + at;
      at += target.size;
      target.row_stride = target.col_stride = 0;
    }
    return target;
  };
  const std::tuple<wrt_target<X, T>...> dense{contiguous(t)...};  // braces: left to right
  const auto value = std::apply(run, dense);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (copy_staged(std::get<K>(dense).data, t), ...);
  }(std::index_sequence_for<X...>{});
  return value;
}

}  // namespace detail
}  // namespace tad
