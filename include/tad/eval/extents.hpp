#pragma once
/// Extent classes: which arrays of an expression must have one length, and which may differ.
///
/// Arrays that meet in one elementwise computation (the argument of one reduction, not looking
/// inside the reductions it contains, or the array-valued expression itself) are combined
/// element by element, so they must have one length. So must every occurrence of one variable.
/// Everything else may differ: `sum(square(r)) + 0.01 * squared_norm(w)` with r of length 5 and
/// w of length 3 is one loss. A class of arrays that must agree is an *extent class*; the engine
/// runs one loop (a *nest*) per class and pass (doc/design.md, "Nests"). The classes are computed
/// at compile time from the expression's type; the lengths are bound at run time, once, before
/// anything is written.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/elementwise.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace tad::detail {

template <class E>
constexpr std::size_t leaf_count() {
  if constexpr (is_leaf_v<E>) {
    return 1;
  } else {
    std::size_t n = 0;
    static_for<E::arity>([&](auto k) { n += leaf_count<child_t<k.value, E>>(); });
    return n;
  }
}

template <class E, std::size_t K, std::size_t I>
constexpr std::size_t child_leaf_offset() {
  std::size_t n = I;
  static_for<K>([&](auto j) { n += leaf_count<child_t<j.value, E>>(); });
  return n;
}

/// Calls `f.template operator()<I>(leaf)` for every leaf of e, I its position from the left.
template <std::size_t I, class E, class F>
TAD_INLINE constexpr void visit_leaves(const E& e, F&& f) {
  if constexpr (is_leaf_v<E>) {
    f.template operator()<I>(e);
  } else {
    static_for<E::arity>([&](auto k) TAD_INLINE_LAMBDA {
      visit_leaves<child_leaf_offset<E, k.value, I>()>(child<k.value>(e), f);
    });
  }
}

/// Calls f(leaf) for every array leaf of e (for a column, its vector).
template <class E, class F>
constexpr void visit_arrays(const E& e, F&& f) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (is_column_v<E>) f(e.vec);
    else if constexpr (E::is_array) f(e);
  } else {
    static_for<E::arity>([&](auto k) { visit_arrays(child<k.value>(e), f); });
  }
}

/// How a shape_error names an array leaf: "variable 'x'", or "a constant array (array k)",
/// k counting the array leaves of the expression from the left, from 1.
template <class L>
std::string describe_array(std::size_t position) {
  if constexpr (is_column_v<L> && !L::is_variable) return "a constant column (array " + std::to_string(position) + " from the left)";
  else if constexpr (L::is_variable) return "variable '" + std::string(L::name.view()) + "'";
  else if constexpr (leaf_rank<L>() == 2) return "a constant matrix (array " + std::to_string(position) + " from the left)";
  else return "a constant array (array " + std::to_string(position) + " from the left)";
}

inline constexpr std::size_t no_class = static_cast<std::size_t>(-1);

/// Per leaf (left to right): its region (the post-order slot of the innermost reduction whose
/// argument holds it, or `top` outside every reduction), whether it is an array, its rank, and
/// its name if it is a variable.
struct leaf_entry {
  std::size_t region = 0;
  bool is_array = false;  // a column too
  bool column = false;
  bool strided = false;  // a matrix with rows ld apart
  bool point = false;    // an axis point (sum(X, axis<1>)): a vector over its argument's rows
  bool down = false;     // ... along axis 0 (sum(X, axis<0>)): a vector over its argument's columns
  int rank = 0;
  std::string_view name{};
  std::string_view let{};   // the innermost let whose body holds it (tad::let<"z">), if any
  std::size_t let_pos = 0;  // its position among that body's leaves
};

template <class E, std::size_t Slot>
constexpr void list_leaves(leaf_entry* out, std::size_t base, std::size_t region, std::string_view let = {},
                           std::size_t let_base = 0) {
  if constexpr (is_leaf_v<E>) {
    out[base].let = let;
    out[base].let_pos = base - let_base;
    out[base].region = region;
    out[base].is_array = E::is_array || is_column_v<E>;
    out[base].column = is_column_v<E>;
    out[base].strided = is_strided_v<E>;
    out[base].rank = is_column_v<E> ? 1 : leaf_rank<E>();
    if constexpr (requires { E::name; }) {
      if constexpr (E::is_variable) out[base].name = E::name.view();
    }
  } else {
    const std::size_t mine = props<E>::is_reduction ? Slot + props<E>::reductions - 1 : region;
    if constexpr (is_let_node_v<E>) let = E::op_type::let_name.view(), let_base = base;
    std::size_t b = base;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      list_leaves<C, child_slot<E, k.value, Slot>()>(out, b, mine, let, let_base);
      b += leaf_count<C>();
    });
  }
}

/// Per reduction slot s, entry `leaves + s` of the table: an axis point (`sum(X, axis<1>)`) is
/// an array of rank 1 in the region of its parent, whose one axis is its argument's rows (along
/// axis 0, `sum(X, axis<0>)`: its argument's columns).
template <class E, std::size_t Slot>
constexpr void list_points(leaf_entry* out, std::size_t leaves, std::size_t region) {
  if constexpr (!is_leaf_v<E>) {
    const std::size_t mine = props<E>::is_reduction ? Slot + props<E>::reductions - 1 : region;
    static_for<E::arity>([&](auto k) {
      list_points<child_t<k.value, E>, child_slot<E, k.value, Slot>()>(out, leaves, mine);
    });
    if constexpr (props<E>::is_point) {
      leaf_entry& p = out[leaves + mine];
      p.region = region;
      p.is_array = true;
      p.point = true;
      p.column = props<E>::is_column_point;  // as_column(sum(X, axis<1>)): a column of its parent
      p.down = E::op_type::axis == 0;
      p.rank = 1;
    }
  }
}

/// The axis classes and nests of E.
///
/// Every array leaf has a last axis (a vector's only one, a matrix's columns) and a matrix also
/// a row axis. Within one region (the argument of one reduction, not looking inside the
/// reductions it holds, or E itself) the arrays are combined element by element with NumPy's
/// right-aligned rule: every last axis is one axis, and so is every matrix's row axis; a vector
/// in a region with matrices is a row, broadcast across the rows. Every occurrence of one
/// variable has the same axes. An *axis class* is a set of axes that must have one extent.
///
/// A region runs in the *nest* of its axes: (row class, last class) if it holds a matrix,
/// (none, last class) otherwise. A nest is one loop per pass: flat over its elements, or (a
/// *row nest*, when one of its regions broadcasts a vector across matrix rows, holds a column or
/// a strided matrix) over the rows,
/// each row a flat loop over the columns (eval/engine/rows.hpp). Nests are numbered by their first array
/// leaf from the left, axis classes likewise.
///
/// An axis point (`sum(X, axis<1>)`) is an extra entry after the leaves (`leaves + slot`): a
/// vector in its parent's region whose axis is its argument's row axis. Its argument's region is
/// a row nest; its parent's region is a *point nest*, a loop over rows that runs the point's
/// sweeps over each row (engine::point_loop).
template <class E>
struct extents {
  static constexpr std::size_t leaves = leaf_count<E>();
  static constexpr std::size_t top = props<E>::reductions;  // the region outside every reduction
  static constexpr std::size_t entries = leaves + top;      // the leaves, then one per reduction slot
  struct table {
    std::array<std::size_t, entries> row{};        // axis class of a matrix leaf's rows, or of a column (no_class otherwise)
    std::array<std::size_t, entries> col{};        // axis class of an array leaf's last axis (no_class otherwise, and for a column)
    std::array<std::size_t, entries> nest_of{};    // nest of an array leaf's region (no_class otherwise)
    std::array<std::size_t, entries> position{};   // each array leaf's position among the arrays, from 1
    std::array<std::size_t, entries> region_of{};  // each array leaf's region (a reduction's argument, or E)
    std::array<std::size_t, top + 1> region{};    // nest of each reduction's argument; [top]: of E
    std::array<std::size_t, entries> nest_row{};   // per nest: its row axis class (no_class: a vector nest)
    std::array<std::size_t, entries> nest_col{};   // per nest: its last axis class
    std::array<bool, entries> nest_rows{};         // per nest: a row nest (a vector broadcast across rows, a column, a point's argument)
    std::array<bool, entries> nest_columns{};      // per nest: it holds a column (as_column): per-row values
    std::array<bool, entries> nest_points{};       // per nest: a region of it holds an axis point
    std::array<bool, entries> nest_column_points{};  // per nest: ... a column point (as_column(sum(X, axis<1>)))
    std::array<bool, entries> nest_down{};         // per nest: a region of it holds a point along axis 0 (sum(X, axis<0>))
    std::array<bool, entries> column{};            // per leaf: a column
    std::array<bool, 2 * entries> class_column{};  // per axis class: a column's axis is in it
    std::array<bool, 2 * entries> class_point{};   // per axis class: an axis point's axis is in it (along the rows)
    std::array<bool, 2 * entries> class_down{};    // per axis class: ... a point's down the columns (axis 0)
    bool column_without_matrix = false;           // a region holds a column but no matrix (unsupported)
    bool point_with_matrix = false;               // a region holds an axis point and a matrix (unsupported)
    bool down_mixed = false;                      // a nest with a point along axis 0 and one along axis 1 or a column (unsupported)
    std::size_t classes = 0;                      // axis classes
    std::size_t nests = 0;
  };
  static constexpr table t = [] {
    std::array<leaf_entry, entries> l{};
    list_leaves<E, 0>(l.data(), 0, top);
    list_points<E, 0>(l.data(), leaves, top);
    // Union-find over the axes: 2 i is entry i's row axis, 2 i + 1 its last axis.
    std::array<std::size_t, 2 * entries> parent{};
    for (std::size_t i = 0; i < 2 * entries; ++i) parent[i] = i;
    auto find = [&](std::size_t i) {
      while (parent[i] != i) i = parent[i];
      return i;
    };
    auto unite = [&](std::size_t i, std::size_t j) {
      const std::size_t a = find(i), b = find(j);
      if (a != b) parent[b < a ? a : b] = b < a ? b : a;  // the root is the leftmost axis
    };
    // Within a region every last axis is one axis, and every row axis: a matrix's rows and a
    // column's only axis (2 i + 1, its vector's length). Every use of one variable has its
    // shape: its last axes (a column's vector's) are one, and a matrix's rows.
    auto row_axis = [&](std::size_t i) { return l[i].column ? 2 * i + 1 : l[i].rank == 2 ? 2 * i : no_class; };
    auto last_axis = [&](std::size_t i) { return l[i].column ? no_class : 2 * i + 1; };
    for (std::size_t i = 0; i < entries; ++i) {
      if (!l[i].is_array) continue;
      for (std::size_t j = i + 1; j < entries; ++j) {
        if (!l[j].is_array) continue;
        if (l[i].region == l[j].region) {
          if (last_axis(i) != no_class && last_axis(j) != no_class) unite(last_axis(i), last_axis(j));
          if (row_axis(i) != no_class && row_axis(j) != no_class) unite(row_axis(i), row_axis(j));
        }
        // An axis point's one axis is its argument's rows (j = leaves + s, i in region s); a
        // column point's is its row axis; a point along axis 0's, its argument's last axis.
        if (l[j].point && !l[j].down && l[i].region == j - leaves && row_axis(i) != no_class)
          unite(l[j].column ? row_axis(j) : last_axis(j), row_axis(i));
        if (l[j].down && l[i].region == j - leaves && last_axis(i) != no_class) unite(last_axis(j), last_axis(i));
        // So has every copy of one leaf of a let's body (the let is one node: `let<"z">(X * w)`
        // used in two reductions, X a constant: both copies of X are one matrix).
        const bool same_let_leaf = !l[i].let.empty() && l[i].let == l[j].let && l[i].let_pos == l[j].let_pos;
        if ((!l[i].name.empty() && l[i].name == l[j].name) || same_let_leaf) {
          unite(2 * i + 1, 2 * j + 1);
          if (l[i].rank == 2 && l[j].rank == 2) unite(2 * i, 2 * j);
        }
      }
    }
    table r{};
    std::array<std::size_t, 2 * entries> number{};
    for (auto& c : r.region) c = no_class;
    for (std::size_t a = 0; a < 2 * entries; ++a) number[a] = no_class;
    auto class_of = [&](std::size_t axis) {
      const std::size_t root = find(axis);
      if (number[root] == no_class) number[root] = r.classes++;
      return number[root];
    };
    // A region's row class (the rows of its matrices), last class, and whether it holds a
    // vector (a row) or a column.
    std::array<std::size_t, top + 1> region_row{}, region_col{};
    std::array<bool, top + 1> region_vector{}, region_matrix{}, region_column{}, region_strided{}, region_point{},
        region_column_point{}, region_down{};
    for (auto& c : region_row) c = no_class;
    for (auto& c : region_col) c = no_class;
    std::size_t arrays = 0;
    for (std::size_t i = 0; i < entries; ++i) {
      r.row[i] = r.col[i] = r.nest_of[i] = no_class;
      if (!l[i].is_array) continue;
      const std::size_t g = l[i].region;
      r.position[i] = ++arrays;
      r.region_of[i] = g;
      r.column[i] = l[i].column;
      if (row_axis(i) != no_class) r.row[i] = class_of(row_axis(i));
      if (last_axis(i) != no_class) r.col[i] = region_col[g] = class_of(last_axis(i));
      if (l[i].strided) region_strided[g] = true;
      if (l[i].column) r.class_column[r.row[i]] = true;
      if (l[i].down) r.class_down[r.col[i]] = true, region_down[g] = true;
      else if (l[i].point && !l[i].column) r.class_point[r.col[i]] = true, region_point[g] = true;
      if (l[i].point && l[i].column) region_column_point[g] = true;
      if (l[i].column) region_column[g] = true;
      else if (l[i].rank == 2) region_row[g] = r.row[i], region_matrix[g] = true;
      else region_vector[g] = true;
    }
    for (std::size_t g = 0; g <= top; ++g) {
      if (region_column[g] && !region_matrix[g]) r.column_without_matrix = true;
      if (region_point[g] && region_matrix[g]) r.point_with_matrix = true;
    }
    for (std::size_t i = 0; i < entries; ++i) {
      if (!l[i].is_array) continue;
      const std::size_t g = l[i].region;
      if (r.region[g] == no_class) {
        std::size_t n = 0;
        while (n < r.nests && !(r.nest_row[n] == region_row[g] && r.nest_col[n] == region_col[g])) ++n;
        if (n == r.nests) {
          r.nest_row[n] = region_row[g];
          r.nest_col[n] = region_col[g];
          ++r.nests;
        }
        r.region[g] = n;
        if (region_matrix[g] && (region_vector[g] || region_column[g] || region_strided[g])) r.nest_rows[n] = true;
        if (g < top && l[leaves + g].point) r.nest_rows[n] = true;  // a point's sweeps run per row
        if (region_column[g]) r.nest_columns[n] = true;
        if (region_point[g]) r.nest_points[n] = true;
        if (region_column_point[g]) r.nest_column_points[n] = true;
        if (region_down[g]) r.nest_down[n] = true;
      }
      r.nest_of[i] = r.region[g];
    }
    for (std::size_t n = 0; n < r.nests; ++n)
      if (r.nest_down[n] && (r.nest_points[n] || r.nest_columns[n] || r.nest_column_points[n])) r.down_mixed = true;
    return r;
  }();
  static constexpr std::size_t classes = t.classes;
  static constexpr std::size_t nests = t.nests;
  /// Does E hold a column (as_column) anywhere?
  static constexpr bool has_columns = [] {
    for (bool c : t.column) if (c) return true;
    return false;
  }();
  /// Does E hold a point down the columns (sum(X, axis<0>)) anywhere?
  static constexpr bool has_down = [] {
    for (std::size_t n = 0; n < nests; ++n) if (t.nest_down[n]) return true;
    return false;
  }();
  /// Does E hold an axis point (sum(X, axis<1>), sum(X, axis<0>)) anywhere?
  static constexpr bool has_points = [] {
    for (std::size_t n = 0; n < nests; ++n) if (t.nest_points[n] || t.nest_down[n]) return true;
    return false;
  }();
};

/// The extents bound at run time: per nest its element count, rows and columns (a vector nest:
/// rows 1), per axis class its extent. Indexing gives a nest's element count.
template <class E>
struct extent_array {
  static constexpr std::size_t NN = extents<E>::nests;
  std::array<std::size_t, NN> len{};
  std::array<std::size_t, NN> rows{};
  std::array<std::size_t, NN> cols{};
  constexpr std::size_t operator[](std::size_t n) const { return len[n]; }
};

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
/// allocation in the loops of SMX moved with an extra argument, benchmarks.md "Columns").
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
            // benchmark's loop (same instructions, 4-7 % slower on AMD Zen 4; benchmarks.md).
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
