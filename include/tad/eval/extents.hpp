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
/// anything is written (eval/bind_extents.hpp).

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/indexing.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace tad::detail {

template <class E>
struct leaf_count_t : std::integral_constant<std::size_t, 1> {};
template <class Op, class... C>
struct leaf_count_t<node<Op, C...>> : std::integral_constant<std::size_t, (leaf_count_t<C>::value + ...)> {};
template <class E>
constexpr std::size_t leaf_count() {
  return leaf_count_t<E>::value;
}

template <class E, std::size_t K, std::size_t I>
constexpr std::size_t child_leaf_offset() {
  std::size_t n = I;
  static_for<K>([&](auto j) { n += leaf_count<child_t<j.value, E>>(); });
  return n;
}

/// The child of M whose leaves hold M's I-th leaf (from the left, from 0).
template <class M, std::size_t I>
constexpr std::size_t child_with_leaf() {
  std::size_t found = 0;
  static_for<M::arity>([&](auto j) {
    constexpr std::size_t first = child_leaf_offset<M, j.value, 0>();
    if (first <= I && I < first + leaf_count<child_t<j.value, M>>()) found = j.value;
  });
  return found;
}

/// The I-th leaf of e from the left, by reference (const if e is).
template <std::size_t I, class N>
TAD_INLINE constexpr auto& leaf_ref(N& e) {
  using M = std::remove_const_t<N>;
  if constexpr (is_leaf_v<M>) {
    return e;
  } else {
    constexpr std::size_t k = child_with_leaf<M, I>();
    return leaf_ref<I - child_leaf_offset<M, k, 0>()>(child<k>(e));
  }
}

/// Calls `f.template operator()<I>(leaf)` for every leaf of e, I its position from the left
/// (from the first, I0). One loop over the leaves, each reached by leaf_ref (shared by every
/// visitor of e's type): a walk of the tree per visitor was a function per node per visitor
/// (doc/compile-times.md).
template <std::size_t I0, class E, class F>
TAD_INLINE constexpr void visit_leaves(const E& e, F&& f) {
  static_for<leaf_count<E>()>([&](auto i) TAD_INLINE_LAMBDA { f.template operator()<I0 + i.value>(leaf_ref<i.value>(e)); });
}

/// Calls f(leaf) for every array leaf of e (for a column, its vector), from the left.
template <class E, class F>
constexpr void visit_arrays(const E& e, F&& f) {
  static_for<leaf_count<E>()>([&](auto i) {
    const auto& leaf = leaf_ref<i.value>(e);
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (is_column_v<L>) f(leaf.vec);
    else if constexpr (L::is_array) f(leaf);
  });
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
    out[base].strided = is_strided_v<E> || is_col_major_v<E>;  // computed row by row
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
/// The loop kind that runs a nest: one loop function per kind, one header each under
/// eval/engine/. extents::table::kind chooses it from the nest's properties (kind_of below), and
/// engine::loops dispatches on it; a new kind is a value here, a rule in kind_of and a header.
enum class nest_kind {
  flat,    ///< one loop over the nest's elements (engine::loop, flat.hpp)
  rows,    ///< row by row: a vector broadcast across rows, a column, a point's argument (row_loop, rows.hpp)
  points,  ///< blocks of rows whose code reads axis points along the rows (point_loop, points.hpp)
  down,    ///< blocks of columns whose code reads points down the columns (down_loop, down.hpp)
};

/// The loop kind of nest n of an extents table, by precedence: a point down the columns needs
/// column blocks, a point along the rows row blocks, a vector across rows (or a column, or a
/// point's argument) rows; anything else is one flat loop.
template <class Table>
constexpr nest_kind kind_of(const Table& t, std::size_t n) {
  if (t.nest_down[n]) return nest_kind::down;
  if (t.nest_points[n]) return nest_kind::points;
  if (t.nest_rows[n]) return nest_kind::rows;
  return nest_kind::flat;
}

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
    std::array<nest_kind, entries> kind{};         // per nest: the loop that runs it (kind_of)
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
    for (std::size_t n = 0; n < r.nests; ++n) {
      if (r.nest_down[n] && (r.nest_points[n] || r.nest_columns[n] || r.nest_column_points[n])) r.down_mixed = true;
      r.kind[n] = kind_of(r, n);
    }
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

}  // namespace tad::detail
