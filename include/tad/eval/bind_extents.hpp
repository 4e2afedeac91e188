#pragma once
/// Binding an expression's extents at run time (bind_extents): the lengths of its nests and
/// axis classes from its arrays, checked before anything is evaluated, and the shape errors
/// that name the arrays that disagree; the shape of an array-valued expression.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/extents.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace tad::detail {

/// What a shape error adds when an extent 1 meets a longer one: tad does not broadcast a run-time
/// length 1 (decisions.md 24), and the message says how to write it.
inline constexpr const char* unit_hint =
    " (an array of length 1 is not broadcast: pass its element as a scalar, tad::var<\"a\">(a[0]) or "
    "tad::constant(a[0]))";

/// The error of bind_extents, out of line: the string building stays out of the callers.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_length_mismatch(const std::string& first, std::size_t n,
                                                                         const std::string& other, std::size_t m) {
  throw shape_error::with_message("tad: arrays combined elementwise differ in length: " + first + " has length " +
                                      std::to_string(n) + ", " + other + " has length " + std::to_string(m) +
                                      (n == 1 || m == 1 ? unit_hint : ""),
                                  n, m);
}

/// "3 x 4".
inline std::string shape_string(std::size_t rows, std::size_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

/// The error of bind_extents for matrices; expected() and got() are the extents along the
/// first axis that differs.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_shape_mismatch(const std::string& first, std::size_t r0,
                                                                        std::size_t c0, const std::string& other,
                                                                        std::size_t r1, std::size_t c1) {
  // NumPy would broadcast an axis of length 1; tad says how to write it (decisions.md 24).
  const bool one_row = (r0 == 1) != (r1 == 1), one_col = (c0 == 1) != (c1 == 1);
  const char* unit = one_row || one_col ? " (an axis of length 1 is not broadcast: view a 1 x n matrix m as the "
                                          "vector of its elements, a row, tad::var<\"m\">(std::span(m)); an n x 1 "
                                          "one as that vector's column, tad::as_column(tad::var<\"m\">(std::span(m))))"
                                        : "";
  throw shape_error::with_message("tad: matrices combined elementwise differ in shape: " + first + " has shape " +
                                      shape_string(r0, c0) + ", " + other + " has shape " + shape_string(r1, c1) + unit,
                                  r0 != r1 ? r0 : c0, r0 != r1 ? r1 : c1);
}

/// The error of bind_extents for a vector broadcast across a matrix's rows whose length is not
/// the matrix's number of columns; expected() is the extent of whichever of the two fixed it
/// first (the matrix's columns or the vector's length), got() the other's.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_broadcast_mismatch(bool matrix_first, const std::string& matrix,
                                                                            std::size_t rows, std::size_t cols,
                                                                            const std::string& vector, std::size_t n) {
  const std::string m = matrix + " has shape " + shape_string(rows, cols);
  const std::string v = vector + " has length " + std::to_string(n);
  // A vector as long as the rows was most likely meant as a column (NumPy's x[:, None]).
  const std::string column_hint =
      n == rows && n != cols ? "; a vector as long as the rows is a column as tad::as_column(v)"
      : n == 1               ? "; a vector of length 1 is not broadcast: pass its element as a scalar, "
                               "tad::var<\"a\">(a[0]) or tad::constant(a[0])"
                             : "";
  throw shape_error::with_message("tad: shapes do not broadcast: " + (matrix_first ? m + ", " + v : v + ", " + m) +
                                      " (a vector combined with a matrix is one row, repeated for every row: its "
                                      "length must be the number of columns" +
                                      column_hint + ")",
                                  matrix_first ? cols : n, matrix_first ? n : cols);
}

/// The error of bind_extents for two matrices that meet only through a vector broadcast across
/// both (`sum(X + b) + sum(Y * b)`): their numbers of columns must agree, their rows need not.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_columns_mismatch(const std::string& first, std::size_t r0,
                                                                          std::size_t c0, const std::string& other,
                                                                          std::size_t r1, std::size_t c1) {
  throw shape_error::with_message("tad: shapes do not broadcast: " + first + " has shape " + shape_string(r0, c0) + ", " +
                                      other + " has shape " + shape_string(r1, c1) +
                                      " (a vector combined with both is one row of each: their numbers of columns "
                                      "must agree)",
                                  c0, c1);
}

/// An array leaf as bind_extents reports it: position, description, rank, shape, row class
/// (a column: rows is its length, cols 1).
struct fixed_by {
  std::size_t position = 0, rows = 0, cols = 0, row_class = no_class, col_class = no_class, region = 0;
  int rank = 0;
  bool column = false;
  std::string (*describe)(std::size_t) = nullptr;
};

/// "X has shape 3 x 4", "c has length 5 as a column", "w has length 3".
inline std::string describe_shape(const fixed_by& f) {
  const std::string d = f.describe(f.position);
  if (f.column) return d + " has length " + std::to_string(f.rows) + " as a column";
  if (f.rank == 2) return d + " has shape " + shape_string(f.rows, f.cols);
  return d + " has length " + std::to_string(f.cols);
}

/// The error of bind_extents when a column is involved (or a matrix's rows meet a vector's
/// length through a variable used as a column and as a vector): expected() is the first
/// array's extent along the axis, got() the other's.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_column_mismatch(const fixed_by& first, const fixed_by& other,
                                                                         std::size_t expected, std::size_t got) {
  const bool column_and_matrix = (first.column && other.rank == 2 && !other.column) || (other.column && first.rank == 2 && !first.column);
  throw shape_error::with_message("tad: shapes do not broadcast: " + describe_shape(first) + ", " + describe_shape(other) +
                                      (column_and_matrix
                                           ? " (a column is one value per row of the matrix it is combined with: its "
                                             "length must be the number of rows)"
                                           : " (a column's length is the number of rows of its matrix, and every use "
                                             "of one variable has its length)"),
                                  expected, got);
}

/// The error of bind_extents along the axis of a reduction along axis 1 (one value per row of its
/// argument's matrices): expected() is the first array's extent along it, got() the other's.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_point_mismatch(const fixed_by& first, const fixed_by& other,
                                                                        std::size_t expected, std::size_t got) {
  throw shape_error::with_message("tad: shapes do not agree: " + describe_shape(first) + ", " + describe_shape(other) +
                                      " (a reduction along axis 1, tad::sum(e, tad::axis<1>), has one value per row "
                                      "of e: the vectors it is combined with have that length, and the matrices of e "
                                      "and of every reduction along axis 1 it meets have that many rows)",
                                  expected, got);
}

/// The error of bind_extents along the axis of a reduction along axis 0 (one value per column of
/// its argument's matrices).
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_down_mismatch(const fixed_by& first, const fixed_by& other,
                                                                       std::size_t expected, std::size_t got) {
  throw shape_error::with_message("tad: shapes do not agree: " + describe_shape(first) + ", " + describe_shape(other) +
                                      " (a reduction along axis 0, tad::sum(e, tad::axis<0>), has one value per "
                                      "column of e: the vectors it is combined with have that length, and the "
                                      "matrices it meets have that many columns)",
                                  expected, got);
}

/// bind_extents' error when `self` has extent `got` along axis class c, fixed at `expected` by
/// `first` (rf: the first array of self's region, if any); point_class: c holds the axis of a
/// point along the rows. Out of line and cold: the string
/// building and the choice of message stay out of the callers (g++'s inlining budget).
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_extent_mismatch(const fixed_by& rf, const fixed_by& first,
                                                                         const fixed_by& self, std::size_t c,
                                                                         bool column_class, bool point_class,
                                                                         std::size_t expected, std::size_t got) {
  // The region's first array is named when it has this axis (combined with self elementwise).
  const fixed_by& f = rf.describe != nullptr && (rf.row_class == c || rf.col_class == c) ? rf : first;
  if (point_class) throw_point_mismatch(f, self, expected, got);
  // Along c: a matrix's rows or a column's length (true), or a last axis (false).
  const bool f_rows = f.column || (f.rank == 2 && f.row_class == c);
  const bool self_rows = self.column || (self.rank == 2 && self.row_class == c);
  // Matrices whose rows meet across regions in a class with a column meet through it.
  if (f.column || self.column || f_rows != self_rows || (column_class && f_rows && f.region != self.region))
    throw_column_mismatch(f, self, expected, got);
  const std::string a = f.describe(f.position), b = self.describe(self.position);
  if (f.rank == 2 && self.rank == 2 && f.row_class != self.row_class)
    throw_columns_mismatch(a, f.rows, f.cols, b, self.rows, self.cols);
  if (f.rank == 2 && self.rank == 2) throw_shape_mismatch(a, f.rows, f.cols, b, self.rows, self.cols);
  if (f.rank == 1 && self.rank == 1) throw_length_mismatch(a, f.cols, b, self.cols);
  if (f.rank == 2) throw_broadcast_mismatch(true, a, f.rows, f.cols, b, self.cols);
  throw_broadcast_mismatch(false, b, self.rows, self.cols, a, f.cols);
}

/// throw_extent_mismatch for an expression with a point down the columns (down_class: c holds its
/// axis); a separate function, so expressions without one keep their code (g++'s register
/// allocation in the loops of SMX moved with an extra argument, log/benchmarks.md "Columns").
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_extent_mismatch_down(
    const fixed_by& rf, const fixed_by& first, const fixed_by& self, std::size_t c, bool column_class,
    bool point_class, bool down_class, std::size_t expected, std::size_t got) {
  const fixed_by& f = rf.describe != nullptr && (rf.row_class == c || rf.col_class == c) ? rf : first;
  // Arrays of one region that disagree (inside the point's argument) get the usual message.
  if (down_class && f.region != self.region) throw_down_mismatch(f, self, expected, got);
  throw_extent_mismatch(rf, first, self, c, column_class, point_class, expected, got);
}

/// The extents of e's nests; throws shape_error, before anything is evaluated, naming the
/// first array that fixed an axis and the first one that disagrees with it, with both shapes.
/// Where an array of the disagreeing one's own region came before it (combined with it
/// elementwise: `b * c` in `sum(X + b) + sum(b * c)`), that one is named, not the array that
/// fixed the class elsewhere (X).
template <class E>
constexpr extent_array<E> bind_extents(const E& e) {
  using extent_info = extents<E>;
  static_assert(!extent_info::t.point_with_matrix,
                "tad: a reduction along an axis (tad::sum(e, tad::axis<1>)) is combined elementwise with a "
                "matrix; its result is one value per row, a vector, and a vector combined with a matrix "
                "would be one of its rows: not supported yet. For one value per row of the matrix, make it a "
                "column: X - tad::as_column(tad::max(X, tad::axis<1>)) (NumPy's keepdims=True); or reduce it "
                "(tad::sum, tad::mean), or combine it with vectors");
  static_assert(!extent_info::t.down_mixed,
                "tad: a reduction along axis 0 (tad::sum(e, tad::axis<0>)) meets a reduction along axis 1 or "
                "a column (tad::as_column) in one loop (combined elementwise, or in two reductions over "
                "matrices of one shape, which run in one loop): not supported yet; compute one of them in "
                "its own expression");
  static_assert(!extent_info::t.column_without_matrix,
                "tad: a column (tad::as_column) is combined with no matrix: a column is one value per row "
                "of the matrix it is combined with elementwise (X * as_column(c)); alone, or with vectors "
                "only (an outer product), it is not supported yet");
  constexpr std::size_t NA = extent_info::classes;
  // Per axis class: its extent and the array that fixed it; per region: its first array.
  std::array<std::size_t, NA> ext{};
  std::array<fixed_by, NA> first{};
  std::array<fixed_by, extent_info::top + 1> region_first{};
  visit_leaves<0>(e, [&]<std::size_t I>(const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (L::is_array || is_column_v<L>) {
      constexpr int rank = is_column_v<L> ? 1 : leaf_rank<L>();
      constexpr std::size_t region = extent_info::t.region_of[I];
      constexpr bool column = is_column_v<L>;
      std::size_t lr = 1, lc = 0;
      if constexpr (column) lr = leaf.vec.size, lc = 1;
      else if constexpr (rank == 2) lr = leaf.rows, lc = leaf.cols;
      else lc = leaf.size;
      const fixed_by self{extent_info::t.position[I], lr, lc, extent_info::t.row[I], extent_info::t.col[I], region,
                          column ? 1 : rank, column, &describe_array<L>};
      // The axes of this leaf, rows first.
      auto check = [&](std::size_t c, std::size_t extent) {
        if (first[c].describe == nullptr) {
          ext[c] = extent;
          first[c] = self;
        } else if (ext[c] != extent) {
          if constexpr (extent_info::has_down) {
            throw_extent_mismatch_down(region_first[region], first[c], self, c, extent_info::t.class_column[c],
                                       extent_info::t.class_point[c], extent_info::t.class_down[c], ext[c], extent);
          } else if constexpr (extent_info::has_columns || extent_info::has_points) {
            throw_extent_mismatch(region_first[region], first[c], self, c, extent_info::t.class_column[c],
                                  extent_info::t.class_point[c], ext[c], extent);
          } else {
            // Without columns, throw_extent_mismatch's choices written out here, as they were
            // before columns: moving them out of line moved g++ 12's spill slots in the W1
            // benchmark's loop (same instructions, 4-7 % slower on AMD Zen 4; log/benchmarks.md).
            const fixed_by& f = region_first[region].describe != nullptr &&
                                        (c == extent_info::t.col[I] || region_first[region].rank == 2)
                                    ? region_first[region]
                                    : first[c];
            const std::string a = f.describe(f.position), b = describe_array<L>(self.position);
            if (f.rank == 2 && rank == 2 && f.row_class != self.row_class)
              throw_columns_mismatch(a, f.rows, f.cols, b, lr, lc);
            if (f.rank == 2 && rank == 2) throw_shape_mismatch(a, f.rows, f.cols, b, lr, lc);
            if (f.rank == 1 && rank == 1) throw_length_mismatch(a, f.cols, b, lc);
            if (f.rank == 2) throw_broadcast_mismatch(true, a, f.rows, f.cols, b, lc);
            throw_broadcast_mismatch(false, b, lr, lc, a, f.cols);
          }
        }
      };
      if constexpr (column) check(extent_info::t.row[I], lr);
      else if constexpr (rank == 2) check(extent_info::t.row[I], lr), check(extent_info::t.col[I], lc);
      else check(extent_info::t.col[I], lc);
      if (region_first[region].describe == nullptr) region_first[region] = self;
    }
  });
  extent_array<E> r{};
  for (std::size_t n = 0; n < extent_info::nests; ++n) {
    const std::size_t rc = extent_info::t.nest_row[n];
    r.rows[n] = rc == no_class ? 1 : ext[rc];
    r.cols[n] = ext[extent_info::t.nest_col[n]];
    r.len[n] = r.rows[n] * r.cols[n];  // no overflow: some matrix leaf has this shape (matrix_area)
  }
  return r;
}

/// The shape of a matrix-valued expression.
struct matrix_shape {
  std::size_t rows = 0;
  std::size_t cols = 0;
};
/// The shape of the matrix-valued expression e: that of the first matrix leaf of its top class.
template <class E>
constexpr matrix_shape top_shape(const E& e) {
  constexpr std::size_t c = extents<E>::t.region[extents<E>::top];
  matrix_shape r{};
  bool found = false;
  visit_leaves<0>(e, [&]<std::size_t I>(const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (L::is_array && leaf_rank<L>() == 2 && extents<E>::t.nest_of[I] == c) {
      if (!found) r = {leaf.rows, leaf.cols};
      found = true;
    }
  });
  return r;
}

/// The length of the array-valued expression e (its top region's class).
template <class E>
constexpr std::size_t top_length(const extent_array<E>& ext) {
  constexpr std::size_t c = extents<E>::t.region[extents<E>::top];
  if constexpr (c == no_class) return 0;
  else return ext[c];
}

}  // namespace tad::detail
