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

/// Calls f(leaf) for every array leaf of e.
template <class E, class F>
constexpr void visit_arrays(const E& e, F&& f) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (E::is_array) f(e);
  } else {
    static_for<E::arity>([&](auto k) { visit_arrays(child<k.value>(e), f); });
  }
}

/// How a shape_error names an array leaf: "variable 'x'", or "a constant array (array k)",
/// k counting the array leaves of the expression from the left, from 1.
template <class L>
std::string describe_array(std::size_t position) {
  if constexpr (L::is_variable) return "variable '" + std::string(L::name.view()) + "'";
  else if constexpr (leaf_rank<L>() == 2) return "a constant matrix (array " + std::to_string(position) + " from the left)";
  else return "a constant array (array " + std::to_string(position) + " from the left)";
}

inline constexpr std::size_t no_class = static_cast<std::size_t>(-1);

/// Per leaf (left to right): its region (the post-order slot of the innermost reduction whose
/// argument holds it, or `top` outside every reduction), whether it is an array, and its name if
/// it is a variable.
struct leaf_entry {
  std::size_t region = 0;
  bool is_array = false;
  std::string_view name{};
};

template <class E, std::size_t Slot>
constexpr void list_leaves(leaf_entry* out, std::size_t base, std::size_t region) {
  if constexpr (is_leaf_v<E>) {
    out[base].region = region;
    out[base].is_array = E::is_array;
    if constexpr (requires { E::name; }) {
      if constexpr (E::is_variable) out[base].name = E::name.view();
    }
  } else {
    const std::size_t mine = props<E>::is_reduction ? Slot + props<E>::reductions - 1 : region;
    std::size_t b = base;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      list_leaves<C, child_slot<E, k.value, Slot>()>(out, b, mine);
      b += leaf_count<C>();
    });
  }
}

/// The extent classes of E, numbered by their first array leaf from the left.
template <class E>
struct extents {
  static constexpr std::size_t leaves = leaf_count<E>();
  static constexpr std::size_t top = props<E>::reductions;  // the region outside every reduction
  struct table {
    std::array<std::size_t, leaves> cls{};        // class of each array leaf (no_class otherwise)
    std::array<std::size_t, leaves> position{};   // each array leaf's position among the arrays, from 1
    std::array<std::size_t, top + 1> region{};    // class of each reduction's argument; [top]: of E
    std::size_t classes = 0;
  };
  static constexpr table t = [] {
    std::array<leaf_entry, leaves> l{};
    list_leaves<E, 0>(l.data(), 0, top);
    // Union-find over the leaves: one region, or one variable, is one class.
    std::array<std::size_t, leaves> parent{};
    for (std::size_t i = 0; i < leaves; ++i) parent[i] = i;
    auto find = [&](std::size_t i) {
      while (parent[i] != i) i = parent[i];
      return i;
    };
    for (std::size_t i = 0; i < leaves; ++i) {
      if (!l[i].is_array) continue;
      for (std::size_t j = i + 1; j < leaves; ++j) {
        if (!l[j].is_array) continue;
        if (l[i].region == l[j].region || (!l[i].name.empty() && l[i].name == l[j].name)) {
          const std::size_t a = find(i), b = find(j);
          if (a != b) parent[b < a ? a : b] = b < a ? b : a;  // the root is the leftmost leaf
        }
      }
    }
    table r{};
    std::array<std::size_t, leaves> number{};
    for (auto& c : r.region) c = no_class;
    std::size_t arrays = 0;
    for (std::size_t i = 0; i < leaves; ++i) {
      r.cls[i] = no_class;
      if (!l[i].is_array) continue;
      r.position[i] = ++arrays;
      const std::size_t root = find(i);
      if (root == i) number[i] = r.classes++;
      r.cls[i] = number[root];
      if (r.region[l[i].region] == no_class) r.region[l[i].region] = r.cls[i];
    }
    return r;
  }();
  static constexpr std::size_t classes = t.classes;
};

template <class E>
using extent_array = std::array<std::size_t, extents<E>::classes>;

/// The error of bind_extents, out of line: the string building stays out of the callers.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_length_mismatch(const std::string& first, std::size_t n,
                                                                         const std::string& other, std::size_t m) {
  throw shape_error::with_message("tad: arrays combined elementwise differ in length: " + first + " has length " +
                                      std::to_string(n) + ", " + other + " has length " + std::to_string(m),
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
  throw shape_error::with_message("tad: matrices combined elementwise differ in shape: " + first + " has shape " +
                                      shape_string(r0, c0) + ", " + other + " has shape " + shape_string(r1, c1),
                                  r0 != r1 ? r0 : c0, r0 != r1 ? r1 : c1);
}

/// The length of each extent class of e (rows * cols for a class of matrices); throws
/// shape_error, before anything is evaluated, naming the first array of a class and the first
/// one of that class whose length (a matrix: shape) differs. The arrays of one class all have
/// one rank: make rejects an op whose array children differ in rank.
template <class E>
constexpr extent_array<E> bind_extents(const E& e) {
  using extent_info = extents<E>;
  extent_array<E> ext{};
  std::array<std::size_t, extent_info::classes> first{};  // position of the class's first array
  std::array<std::string (*)(std::size_t), extent_info::classes> describe{};
  [[maybe_unused]] std::array<std::size_t, extent_info::classes> rows{}, cols{};  // classes of matrices
  visit_leaves<0>(e, [&]<std::size_t I>(const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (L::is_array) {
      constexpr std::size_t c = extent_info::t.cls[I];
      constexpr std::size_t position = extent_info::t.position[I];
      if (describe[c] == nullptr) {
        ext[c] = leaf.size;
        if constexpr (leaf_rank<L>() == 2) {
          rows[c] = leaf.rows;
          cols[c] = leaf.cols;
        }
        first[c] = position;
        describe[c] = &describe_array<L>;
      } else if constexpr (leaf_rank<L>() == 2) {
        if (leaf.rows != rows[c] || leaf.cols != cols[c])
          throw_shape_mismatch(describe[c](first[c]), rows[c], cols[c], describe_array<L>(position), leaf.rows, leaf.cols);
      } else if (leaf.size != ext[c]) {
        throw_length_mismatch(describe[c](first[c]), ext[c], describe_array<L>(position), leaf.size);
      }
    }
  });
  return ext;
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
    if constexpr (L::is_array && leaf_rank<L>() == 2 && extents<E>::t.cls[I] == c) {
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
