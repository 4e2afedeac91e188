#pragma once
/// What the entry points (eval/api.hpp) check of their arguments, before anything is evaluated:
/// the expression and the variables (one static_assert naming the problem), each variable's
/// binding, buffers' shapes, overlaps; and the storage of the gradients grad returns.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/matrix.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/bind_extents.hpp>
#include <tad/ops/reductions.hpp>

#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tad::detail {

template <class E>
constexpr void check_expression_type() {
  static_assert(!mixes_precisions_v<E>,
                "tad: an expression mixes float and double variables or arrays; convert the data "
                "to one precision");
}

template <class... X>
inline constexpr bool unique_names_v = [] {
  constexpr std::size_t n = sizeof...(X);
  std::array<std::string_view, n> names{X::name.view()...};
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (names[i] == names[j]) return false;
  return true;
}();

/// The errors of check_binding and check_binding_in, out of line.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_rebound(const char* api, std::string_view name) {
  throw std::invalid_argument(std::string(api) + ": variable '" + std::string(name) +
                              "' is bound to other data than in the expression");
}
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_variable_length(const char* api, std::string_view name,
                                                                             std::size_t expected, std::size_t got) {
  throw shape_error(std::string(api) + ": variable '" + std::string(name) + "'", expected, got);
}
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_variable_shape(const char* api, std::string_view name,
                                                                            std::size_t rows, std::size_t cols,
                                                                            std::size_t expected_rows,
                                                                            std::size_t expected_cols) {
  throw shape_error::with_message(std::string(api) + ": variable '" + std::string(name) + "' has shape " +
                                      shape_string(rows, cols) + ", in the expression " +
                                      shape_string(expected_rows, expected_cols),
                                  rows != expected_rows ? expected_rows : expected_cols,
                                  rows != expected_rows ? rows : cols);
}

/// A variable passed to grad must be the one in the expression: same data, same length (a
/// matrix: same shape).
template <class E, class X>
void check_binding(const E& e, const X& x, const char* api) {
  if constexpr (X::is_array) {
    std::size_t n = x.size;
    [[maybe_unused]] std::size_t rows = 0, cols = 0;
    if constexpr (leaf_rank<X>() == 2) rows = x.rows, cols = x.cols;
    visit_arrays(e, [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (L::is_variable) {
        if (same_name<L::name, X::name>) {
          if (leaf.data != x.data || stride_of(leaf) != stride_of(x)) throw_rebound(api, X::name.view());
          n = leaf.size;
          if constexpr (leaf_rank<X>() == 2 && leaf_rank<L>() == 2) rows = leaf.rows, cols = leaf.cols;
        }
      }
    });
    // The messages are built out of line (cold), so that the passing path saves no registers
    // for them: 23 instructions per call and variable before (decisions.md 71).
    if (x.size != n) throw_variable_length(api, X::name.view(), n, x.size);
    if constexpr (leaf_rank<X>() == 2) {
      if (x.rows != rows || x.cols != cols) throw_variable_shape(api, X::name.view(), x.rows, x.cols, rows, cols);
    }
  }
}

/// An array leaf's view as the checks of a program's buffers see it (eval/program.hpp builds a
/// table of its expression's once): a variable's name (empty: a constant), where it is (null:
/// another element type, which overlaps nothing), its extents.
template <class T>
struct array_view_info {
  std::string_view name;
  const T* data = nullptr;
  std::size_t span = 0;  // elements from data that the view spans (span_of)
  std::size_t stride = 0;
  std::size_t size = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  bool matrix = false;
};
template <class T, class L>
array_view_info<T> view_info(const L& leaf) {
  array_view_info<T> v;
  if constexpr (L::is_variable) v.name = L::name.view();
  if constexpr (std::is_same_v<typename L::value_type, T>) v.data = leaf.data, v.span = span_of(leaf);
  v.stride = stride_of(leaf);
  v.size = leaf.size;
  if constexpr (leaf_rank<L>() == 2) v.rows = leaf.rows, v.cols = leaf.cols, v.matrix = true;
  return v;
}

/// check_binding against a table of the expression's arrays: the same checks, one loop for
/// any expression (a program checks every variable of a call this way).
template <class T>
void check_binding_in(std::span<const array_view_info<T>> arrays, const array_view_info<T>& x, const char* api) {
  std::size_t n = x.size, rows = x.rows, cols = x.cols;
  for (const array_view_info<T>& a : arrays) {
    // A name is a view of its variable type's template argument, so the same variable's two
    // views usually share their characters: compared by address first, then by memcmp.
    const bool same = a.name.size() == x.name.size() && (a.name.data() == x.name.data() || a.name == x.name);
    if (a.name.empty() || !same) continue;
    if (a.data != x.data || a.stride != x.stride) throw_rebound(api, x.name);
    n = a.size;
    if (x.matrix && a.matrix) rows = a.rows, cols = a.cols;
  }
  if (x.size != n) throw_variable_length(api, x.name, n, x.size);
  if (x.matrix && (x.rows != rows || x.cols != cols)) throw_variable_shape(api, x.name, x.rows, x.cols, rows, cols);
}

/// Is x the variable e knows by x's name (or is no variable of e so named)? A scalar `x`
/// against e's array `x`, a matrix against an array, or float against double is not: the
/// engine finds a variable by name, so such an x would get another variable's gradient.
template <class E, class X>
constexpr bool matches_leaf() {
  using L = typename var_named<E, X::name>::type;
  return std::is_void_v<L> || std::is_same_v<L, X>;
}

/// Why grad's arguments are rejected: 0 none, 1 an earlier error (silent), 2 e is
/// array-valued, 3 an x is not a variable, 4 an x is listed twice, 5 e is not an expression,
/// 6 an x is not e's variable of that name (another kind or element type), 7 an x is a column
/// (as_column(v): the gradient is v's).
template <class E, class... X>
constexpr int grad_problem() {
  if constexpr (poisoned_v<E, X...>) return 1;
  else if constexpr (!expression<E>) return 5;
  else if constexpr (is_array_v<E>) return 2;
  else if constexpr ((is_column_v<X> || ...)) return 7;
  else if constexpr (!(variable<X> && ...)) return 3;
  else if constexpr (!unique_names_v<X...>) return 4;
  else if constexpr (!(matches_leaf<E, X>() && ...)) return 6;
  else return 0;
}

/// The name (a `variable_name<...>`) of the first x that is not e's variable of that name.
template <class E, class... X>
constexpr auto mismatched_name() {
  return first_non_void(std::conditional_t<matches_leaf<E, X>(), std::type_identity<void>,
                                           std::type_identity<name_type_t<X::name>>>{}...);
}
/// The error for such an x, instantiated with its name so that both compilers show it.
template <class Name, bool Into>
constexpr void report_mismatched_variable() {
  if constexpr (!Into) {
    static_assert(always_false<Name>,
                  "tad::grad(e, x...): an x has the name of a variable of e but is another variable "
                  "(a scalar against an array or a matrix, or another element type); pass the "
                  "variable e was built from");
  } else {
    static_assert(always_false<Name>,
                  "tad::grad_into(e, wrt(x, buffer)...): an x has the name of a variable of e but is "
                  "another variable (a scalar against an array or a matrix, or another element "
                  "type); pass the variable e was built from");
  }
}

/// The name (a `variable_name<...>`) of the first variable of X... listed twice.
template <class... X>
constexpr auto repeated_name() {
  using list = std::tuple<X...>;
  constexpr std::size_t k = [] {
    constexpr std::size_t n = sizeof...(X);
    std::array<std::string_view, n> names{X::name.view()...};
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        if (names[i] == names[j]) return i;
    return std::size_t{0};
  }();
  return std::type_identity<name_type_t<std::tuple_element_t<k, list>::name>>{};
}
/// The error for a variable listed twice, instantiated with its name (`variable_name<'x'>`),
/// so that both compilers show the name.
template <class Name, bool Into>
constexpr void report_repeated_variable() {
  if constexpr (!Into) {
    static_assert(always_false<Name>, "tad::grad(e, x...): a variable is listed twice");
  } else {
    static_assert(always_false<Name>, "tad::grad_into(e, wrt(x, buffer)...): a variable is listed twice");
  }
}

/// One static_assert for the problem P of the arguments of grad (Into: of grad_into) of e (type E).
template <int P, bool Into, class E, class... X>
constexpr void report_grad_problem() {
  if constexpr (P == 4) {
    report_repeated_variable<typename decltype(repeated_name<X...>())::type, Into>();
  } else if constexpr (P == 6) {
    report_mismatched_variable<typename decltype(mismatched_name<E, X...>())::type, Into>();
  } else if constexpr (P == 7 && !Into) {
    static_assert(P != 7, "tad::grad(e, x...): an x is a column (tad::as_column(v)); pass the vector v "
                          "itself: its gradient is the vector's, summed along each row");
  } else if constexpr (P == 7) {
    static_assert(P != 7, "tad::grad_into(e, wrt(x, buffer)...): an x is a column (tad::as_column(v)); "
                          "pass the vector v itself: its gradient is the vector's, summed along each row");
  } else if constexpr (!Into) {
    static_assert(P != 5, "tad::grad(e, x...): e must be a tad expression (a number or a container "
                          "is not; build e from tad::var and tad::constant)");
    static_assert(P != 2, "tad::grad(e, x...): e is array-valued; a gradient needs a scalar. "
                          "Reduce it (sum, mean, ...) or use tad::vjp(e, seed, x...)");
    static_assert(P != 3, "tad::grad(e, x...): every x must be a variable made by tad::var");
  } else {
    static_assert(P != 5, "tad::grad_into(e, wrt(x, buffer)...): e must be a tad expression (a "
                          "number or a container is not; build e from tad::var and tad::constant)");
    static_assert(P != 2, "tad::grad_into(e, wrt(x, buffer)...): e is array-valued; a gradient needs a "
                          "scalar. Reduce it (sum, mean, ...) or use tad::vjp_into");
    static_assert(P != 3, "tad::grad_into(e, wrt(x, buffer)...): every x must be a variable made by tad::var");
  }
}

/// What grad returns for a variable after a reported error: shaped like the real result, so the
/// caller's code does not add errors of its own.
template <class X>
struct quiet {
  using type = double;
};
template <expression X>
  requires(detail::props<X>::is_array)
struct quiet<X> {
  using type = std::conditional_t<detail::props<X>::rank == 2, matrix<double>, std::vector<double>>;
};
template <class X>
using quiet_t = typename quiet<X>::type;

/// The gradient of a variable: a number, a std::vector, or a tad::matrix of the variable's shape.
template <class T, class X>
using gradient_t = std::conditional_t<X::is_array, std::conditional_t<leaf_rank<X>() == 2, matrix<T>, std::vector<T>>, T>;

template <class T, class X>
constexpr T* gradient_data(gradient_t<T, X>& g) {
  if constexpr (X::is_array) return g.data(); else return &g;
}

template <class T, class X>
constexpr gradient_t<T, X> make_gradient(const X& x) {
  if constexpr (!X::is_array) return T(0);
  else if constexpr (leaf_rank<X>() == 2) return matrix<T>(x.rows, x.cols);
  else return std::vector<T>(x.size);
}

/// check_shape's error, out of line (no string is built unless it throws).
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_buffer_shape(const matrix_shape& got,
                                                                      const matrix_shape& expected, const char* what,
                                                                      std::string_view name) {
  const bool rows_differ = got.rows != expected.rows;
  std::string message = what;
  if (!name.empty()) message += " of '" + std::string(name) + "'";
  throw shape_error::with_message(message + " has shape " + shape_string(got.rows, got.cols) + ", expected " +
                                      shape_string(expected.rows, expected.cols),
                                  rows_differ ? expected.rows : expected.cols, rows_differ ? got.rows : got.cols);
}
/// A buffer of shape `got` where `expected` is needed: shape_error "<what>[ of '<name>'] has
/// shape ..., expected ...".
inline void check_shape(const matrix_shape& got, const matrix_shape& expected, const char* what,
                        std::string_view name = {}) {
  if (got.rows != expected.rows || got.cols != expected.cols) throw_buffer_shape(got, expected, what, name);
}
/// A buffer's shape against a matrix expression's (a buffer that does not know its shape is
/// checked by its length only).
template <class Out>
void check_out_shape(const Out& out, const matrix_shape& shape, const char* what) {
  if constexpr (row_major_matrix<std::remove_cvref_t<Out>>) {
    check_shape({static_cast<std::size_t>(out.rows()), static_cast<std::size_t>(out.cols())}, shape, what);
  }
}

template <class X>
constexpr std::size_t length_of(const X& x) {
  if constexpr (X::is_array) return x.size; else return 1;
}

/// vjp's seed as a constant of e's rank: a matrix of e's shape for a matrix expression (a
/// flat seed is read row-major), an array otherwise (the caller has checked its length).
template <class Seed, class E>
constexpr auto seed_constant(const Seed& seed, const E& e) {
  if constexpr (props<E>::rank == 2) {
    const matrix_shape shape = top_shape(e);
    return constant(std::ranges::data(seed), shape.rows, shape.cols);
  } else {
    return constant(std::span(std::ranges::data(seed), std::ranges::size(seed)));
  }
}

/// Do [p, p + n) and [q, q + m) overlap?
template <class T, class U>
bool overlaps(const T* p, std::size_t n, const U* q, std::size_t m) {
  if constexpr (!std::is_same_v<T, U>) {
    return false;
  } else {
    if (n == 0 || m == 0) return false;
    std::less<const T*> lt;
    return lt(p, q + m) && lt(q, p + n);
  }
}

}  // namespace tad::detail
