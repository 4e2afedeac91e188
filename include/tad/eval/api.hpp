#pragma once
/// Entry points: value, evaluate, grad, grad_into (no allocation), vjp, vjp_into.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/matrix.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/engine.hpp>
#include <tad/ops/reductions.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tad {

/// A gradient destination for `grad_into`: a variable and the caller's buffer for its gradient.
template <class X, class T>
struct wrt_target {
  X var;
  T* data = nullptr;
  std::size_t size = 0;
  bool shaped = false;  // the buffer knows its shape (a tad::matrix): rows and cols are checked
  std::size_t rows = 0;
  std::size_t cols = 0;
};

/// `wrt(x, buffer)`: write the gradient of array variable x into `buffer` (same length as x);
/// for a matrix variable, `buffer` is a tad::matrix of its shape, or any contiguous storage of
/// rows * cols elements, written row-major; `wrt(s, out)`: write the gradient of scalar
/// variable s into `out`.
template <class X, class Buf>
constexpr auto wrt(const X& x, Buf&& buf) {
  using invalid = wrt_target<detail::invalid_expression, double>;
  if constexpr (detail::poisoned_v<X>) {
    return invalid{};
  } else if constexpr (detail::is_column_v<X>) {
    static_assert(!detail::is_column_v<X>, "tad::wrt(x, buffer): x is a column (tad::as_column(v)); pass the "
                                           "vector v itself: its gradient is the vector's");
    return invalid{};
  } else if constexpr (!variable<X>) {
    static_assert(variable<X>, "tad::wrt(x, buffer): x must be a variable made by tad::var");
    return invalid{};
  } else {
    using T = typename X::value_type;
    if constexpr (X::is_array) {
      constexpr bool ok = std::ranges::contiguous_range<Buf> && std::is_same_v<std::ranges::range_value_t<Buf>, T>;
      if constexpr (!ok) {
        static_assert(ok, "tad::wrt(x, buffer): the gradient buffer of an array variable must be "
                          "contiguous storage of its element type");
        return invalid{};
      } else if constexpr (detail::row_major_matrix<std::remove_cvref_t<Buf>>) {
        return wrt_target<X, T>{x, std::ranges::data(buf), std::ranges::size(buf), true,
                                static_cast<std::size_t>(buf.rows()), static_cast<std::size_t>(buf.cols())};
      } else {
        return wrt_target<X, T>{x, std::ranges::data(buf), std::ranges::size(buf)};
      }
    } else {
      constexpr bool ok = std::is_same_v<std::remove_cvref_t<Buf>, T> && std::is_lvalue_reference_v<Buf> &&
                          !std::is_const_v<std::remove_reference_t<Buf>>;
      if constexpr (!ok) {
        static_assert(ok, "tad::wrt(s, out): the gradient of a scalar variable goes to a non-const "
                          "lvalue of its element type");
        return invalid{};
      } else {
        return wrt_target<X, T>{x, &buf, 1};
      }
    }
  }
}

namespace detail {

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
          if (leaf.data != x.data || stride_of(leaf) != stride_of(x)) {
            throw std::invalid_argument(std::string(api) + ": variable '" + std::string(X::name.view()) +
                                        "' is bound to other data than in the expression");
          }
          n = leaf.size;
          if constexpr (leaf_rank<X>() == 2 && leaf_rank<L>() == 2) rows = leaf.rows, cols = leaf.cols;
        }
      }
    });
    if (x.size != n) throw shape_error(std::string(api) + ": variable '" + std::string(X::name.view()) + "'", n, x.size);
    if constexpr (leaf_rank<X>() == 2) {
      if (x.rows != rows || x.cols != cols)
        throw shape_error::with_message(std::string(api) + ": variable '" + std::string(X::name.view()) +
                                            "' has shape " + shape_string(x.rows, x.cols) + ", in the expression " +
                                            shape_string(rows, cols),
                                        x.rows != rows ? rows : cols, x.rows != rows ? x.rows : x.cols);
    }
  }
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

}  // namespace detail

/// The value of e: a float/double for a scalar expression, a std::vector for an array one, a
/// tad::matrix for a matrix one.
template <expression E>
constexpr auto value(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return 0.0;  // an error was reported where e was built
  } else {
  using T = value_type_t<E>;
  const auto ext = detail::bind_extents(e);
  if constexpr (rank_v<E> == 2) {
    const detail::matrix_shape shape = detail::top_shape(e);
    matrix<T> out(shape.rows, shape.cols);
    detail::engine<E, T, detail::wrt_list<>>(e, nullptr, nullptr, ext).store(out.data());
    return out;
  } else if constexpr (is_array_v<E>) {
    std::vector<T> out(detail::top_length<E>(ext));
    detail::engine<E, T, detail::wrt_list<>>(e, nullptr, nullptr, ext).store(out.data());
    return out;
  } else {
    return detail::engine<E, T, detail::wrt_list<>>(e, nullptr, nullptr, ext).run();
  }
  }
}

/// Evaluates the array expression e into out (same length as e's arrays; for a matrix
/// expression, a tad::matrix of its shape or rows * cols elements, written row-major).
template <expression E, class Out>
void evaluate(const E& e, Out&& out) {
  using T = value_type_t<E>;
  if constexpr (detail::poisoned_v<E>) {
    return;
  } else if constexpr (!is_array_v<E>) {
    static_assert(is_array_v<E>, "tad::evaluate(e, out): e must be an array expression; use tad::value for a scalar");
  } else if constexpr (!std::ranges::contiguous_range<Out> || !std::is_same_v<std::ranges::range_value_t<Out>, T>) {
    static_assert(detail::always_false<Out>, "tad::evaluate(e, out): out must be contiguous storage of e's element type");
  } else {
  const auto ext = detail::bind_extents(e);
  const std::size_t n = detail::top_length<E>(ext);
  if constexpr (rank_v<E> == 2) detail::check_out_shape(out, detail::top_shape(e), "tad::evaluate(e, out): out");
  if (std::ranges::size(out) != n) throw shape_error("tad::evaluate(e, out): out", n, std::ranges::size(out));
  detail::engine<E, T, detail::wrt_list<>>(e, nullptr, nullptr, ext).store(std::ranges::data(out));
  }
}

/// Value and gradient of the scalar expression e with respect to the variables x..., in that
/// order: `auto [v, gx, gs] = grad(e, x, s);` Array gradients are std::vectors, matrix ones
/// tad::matrix (the variable's shape), scalar ones numbers. A variable that e does not contain gets a zero gradient.
template <class E, class... X>
constexpr auto grad(const E& e, const X&... x) {
  constexpr int problem = detail::grad_problem<E, X...>();
  if constexpr (problem != 0) {
    detail::report_grad_problem<problem, false, E, X...>();
    return std::tuple<double, detail::quiet_t<X>...>{};
  } else {
  using T = value_type_t<E>;
  const auto ext = detail::bind_extents(e);
  if (!std::is_constant_evaluated()) (detail::check_binding(e, x, "tad::grad"), ...);
  std::tuple<T, detail::gradient_t<T, X>...> result{T(0), detail::make_gradient<T>(x)...};
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    std::array<T*, sizeof...(X) + 1> outs{detail::gradient_data<T, X>(std::get<K + 1>(result))..., nullptr};
    std::array<std::size_t, sizeof...(X) + 1> sizes{detail::length_of(x)..., 0};
    std::get<0>(result) = detail::engine<E, T, detail::wrt_list<X...>>(e, outs.data(), sizes.data(), ext).run();
  }(std::index_sequence_for<X...>{});
  return result;
  }
}

/// Value of e; the gradients go into the caller's buffers given as `wrt(x, buffer)`. Allocates
/// nothing. Throws shape_error (before writing anything) if a buffer has the wrong length.
template <class E, class... X, class... T2>
auto grad_into(const E& e, const wrt_target<X, T2>&... targets) {
  constexpr int problem = detail::grad_problem<E, X...>();
  if constexpr (problem != 0) {
    detail::report_grad_problem<problem, true, E, X...>();
    return 0.0;
  } else if constexpr (!(std::is_same_v<value_type_t<E>, T2> && ...)) {
    static_assert(detail::always_false<E>, "tad::grad_into(e, wrt(x, buffer)...): every buffer must have e's element type");
    return 0.0;
  } else {
  using T = value_type_t<E>;
  const auto ext = detail::bind_extents(e);
  (detail::check_binding(e, targets.var, "tad::grad_into"), ...);
  auto check_target = [&](const auto& t) {
    using V = std::remove_cvref_t<decltype(t.var)>;
    if constexpr (V::is_array) {
      if constexpr (detail::leaf_rank<V>() == 2) {
        if (t.shaped) {
          detail::check_shape({t.rows, t.cols}, {t.var.rows, t.var.cols}, "tad::grad_into: gradient buffer",
                              V::name.view());
        }
      }
      if (t.size != t.var.size) {
        throw shape_error("tad::grad_into: gradient buffer of '" + std::string(t.var.name.view()) + "'",
                          t.var.size, t.size);
      }
      detail::visit_arrays(e, [&](const auto& leaf) {
        if (detail::overlaps(t.data, t.size, leaf.data, detail::span_of(leaf))) {
          throw std::invalid_argument("tad::grad_into: gradient buffer of '" + std::string(t.var.name.view()) +
                                      "' overlaps an input array of the expression");
        }
      });
    }
  };
  (check_target(targets), ...);
  std::array<T*, sizeof...(X) + 1> outs{targets.data..., nullptr};
  std::array<std::size_t, sizeof...(X) + 1> sizes{targets.size..., 0};
  return detail::engine<E, T, detail::wrt_list<X...>>(e, outs.data(), sizes.data(), ext).run();
  }
}

/// Vector-Jacobian product of the array expression e with the caller's seed:
/// the gradients of `sum(seed * e)` with respect to x..., and that value.
template <expression E, class Seed, class... X>
auto vjp(const E& e, const Seed& seed, const X&... x) {
  if constexpr (detail::poisoned_v<E, X...>) {
    return std::tuple<double, detail::quiet_t<X>...>{};
  } else if constexpr (!is_array_v<E>) {
    static_assert(is_array_v<E>, "tad::vjp(e, seed, x...): e must be array-valued; use tad::grad for a scalar");
    return std::tuple<double, detail::quiet_t<X>...>{};
  } else {
    const std::size_t n = detail::top_length<E>(detail::bind_extents(e));
    if constexpr (rank_v<E> == 2) detail::check_out_shape(seed, detail::top_shape(e), "tad::vjp(e, seed, x...): seed");
    if (std::ranges::size(seed) != n) throw shape_error("tad::vjp(e, seed, x...): seed", n, std::ranges::size(seed));
    return grad(dot(detail::seed_constant(seed, e), e), x...);
  }
}

/// vjp into the caller's buffers, as grad_into.
template <expression E, class Seed, class... X, class... T2>
auto vjp_into(const E& e, const Seed& seed, const wrt_target<X, T2>&... targets) {
  if constexpr (detail::poisoned_v<E, X...>) {
    return 0.0;
  } else if constexpr (!is_array_v<E>) {
    static_assert(is_array_v<E>, "tad::vjp_into(e, seed, wrt(x, buffer)...): e must be array-valued");
    return 0.0;
  } else {
    const std::size_t n = detail::top_length<E>(detail::bind_extents(e));
    if constexpr (rank_v<E> == 2) detail::check_out_shape(seed, detail::top_shape(e), "tad::vjp_into(e, seed, ...): seed");
    if (std::ranges::size(seed) != n) throw shape_error("tad::vjp_into(e, seed, ...): seed", n, std::ranges::size(seed));
    return grad_into(dot(detail::seed_constant(seed, e), e), targets...);
  }
}

}  // namespace tad
