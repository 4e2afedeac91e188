#pragma once
/// `tad::matrix<T>`: an owning row-major matrix. What `grad` returns for a matrix variable and
/// `value` for a matrix expression; `var<"X">(m)` and `constant(m)` view one in place.

#include <tad/core/leaves.hpp>

#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tad {

/// A `rows x cols` matrix of T, stored row-major and contiguously (element (r, c) at
/// `data()[r * cols() + c]`). A contiguous range of its `size()` elements in that order.
template <real T>
class matrix {
 public:
  using value_type = T;
  /// Marks row-major storage with rows() and cols(): tad::var and tad::constant make matrix leaves of it.
  static constexpr bool tad_row_major = true;

  matrix() = default;
  /// rows x cols elements, each `fill`. Throws std::length_error if rows * cols overflows.
  matrix(std::size_t rows, std::size_t cols, T fill = T(0))
      : rows_(rows), cols_(cols), data_(detail::matrix_area(rows, cols, "tad::matrix(rows, cols)"), fill) {}
  /// Row by row: `matrix<double>{{1, 2, 3}, {4, 5, 6}}` is 2 x 3. Throws std::invalid_argument
  /// if the rows differ in length.
  matrix(std::initializer_list<std::initializer_list<T>> rows) : rows_(rows.size()) {
    cols_ = rows.size() == 0 ? 0 : rows.begin()->size();
    data_.reserve(rows_ * cols_);
    std::size_t k = 0;
    for (const auto& r : rows) {
      if (r.size() != cols_)
        throw std::invalid_argument("tad::matrix{{...}, ...}: row " + std::to_string(k) + " has " +
                                    std::to_string(r.size()) + " elements, row 0 has " + std::to_string(cols_));
      data_.insert(data_.end(), r.begin(), r.end());
      ++k;
    }
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return data_.size(); }
  bool empty() const noexcept { return data_.empty(); }
  T* data() noexcept { return data_.data(); }
  const T* data() const noexcept { return data_.data(); }
  T* begin() noexcept { return data_.data(); }
  T* end() noexcept { return data_.data() + data_.size(); }
  const T* begin() const noexcept { return data_.data(); }
  const T* end() const noexcept { return data_.data() + data_.size(); }

  /// Element (r, c), unchecked (as std::vector's operator[]).
  T& operator()(std::size_t r, std::size_t c) noexcept { return data_[r * cols_ + c]; }
  const T& operator()(std::size_t r, std::size_t c) const noexcept { return data_[r * cols_ + c]; }
  /// Element (r, c); std::out_of_range if r >= rows() or c >= cols().
  T& at(std::size_t r, std::size_t c) { return data_[checked(r, c)]; }
  const T& at(std::size_t r, std::size_t c) const { return data_[checked(r, c)]; }
  /// Row r as a span of cols() elements; std::out_of_range if r >= rows().
  std::span<T> row(std::size_t r) {
    check_row(r);
    return {data_.data() + r * cols_, cols_};
  }
  std::span<const T> row(std::size_t r) const {
    check_row(r);
    return {data_.data() + r * cols_, cols_};
  }

  friend bool operator==(const matrix&, const matrix&) = default;

 private:
  void check_row(std::size_t r) const {
    if (r >= rows_)
      throw std::out_of_range("tad::matrix::row(" + std::to_string(r) + "): the matrix has " + std::to_string(rows_) +
                              " rows");
  }
  std::size_t checked(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_)
      throw std::out_of_range("tad::matrix::at(" + std::to_string(r) + ", " + std::to_string(c) + "): the matrix is " +
                              std::to_string(rows_) + " x " + std::to_string(cols_));
    return r * cols_ + c;
  }
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::vector<T> data_;
};

}  // namespace tad
