#pragma once
/// Entry points: value, evaluate, grad, grad_into (no allocation), vjp, vjp_into.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/matrix.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/arguments.hpp>
#include <tad/eval/bind_extents.hpp>
#include <tad/eval/engine.hpp>
#include <tad/eval/targets.hpp>
#include <tad/ops/linalg.hpp>
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

namespace detail {
/// wrt's error for a vector variable's Eigen buffer of several rows and columns.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_vector_buffer_shape(std::string_view name,
                                                                             std::size_t size, std::size_t rows,
                                                                             std::size_t cols) {
  throw shape_error::with_message("tad::wrt(x, buffer): the gradient buffer of vector '" + std::string(name) +
                                      "' is a " + shape_string(rows, cols) +
                                      " matrix; pass a vector, or a matrix of one row or one column",
                                  size, rows * cols);
}

/// vjp's seed against the expression's shape (`matrix`: a matrix expression, whose seed is
/// checked against its shape when the seed knows one): shape_error naming `what` otherwise.
template <class Seed>
void check_seed(const Seed& seed, const matrix_shape& shape, bool matrix, const char* what) {
  if (matrix) check_out_shape(seed, shape, what);
  const std::size_t n = shape.rows * shape.cols;
  if (std::ranges::size(seed) != n) throw shape_error(what, n, std::ranges::size(seed));
}

/// The entry points for an expression that holds a matrix product: eval/program.hpp specializes
/// this (`<tad/linalg.hpp>`, which needs Eigen); without it, this error.
template <class E, class = void>
struct products_api {
  static_assert(always_false<E>, "tad: the expression holds a matrix product (tad::matmul, tad::outer, "
                                 "tad::transpose) or a stage (the argument of a matrix softmax or cross-entropy, or a "
                                 "vector broadcast across rows, under a rule not linear in the adjoint; a shift; a "
                                 "scan or map; an output of a custom_gradient with several outputs); include "
                                 "<tad/linalg.hpp>, whose tad::program evaluates them");
};

/// Does a gradient of E with respect to X... need a tad::program: E holds a product or a stage,
/// or a let of an array whose body has a rule not linear in the adjoint and which the engine's
/// loops cannot share (eval/deferred_lets.hpp: used along an axis and elsewhere, in two
/// loops...), which a program evaluates as a stage of its own (decisions.md 56)?
template <class E, class... X>
constexpr bool gradient_program() {
  if constexpr (has_products_v<E>) {
    return true;
  } else if constexpr (!has_lets_v<E>) {
    return false;
  } else {
    using A = lets_across_loops<E, wrt_list<X...>>;
    if constexpr (A::ok) return false;
    else return props<typename A::lets::template at<A::index>>::rank >= 1;
  }
}
}  // namespace detail

/// `wrt(x, buffer)`: write the gradient of array variable x into `buffer` (same length as x);
/// for a matrix variable, `buffer` is a tad::matrix of its shape, an Eigen matrix or Map of its
/// shape (row- or column-major, with strides), or any contiguous storage of rows * cols
/// elements, written row-major; for a vector variable, an Eigen vector or a one-row or
/// one-column Eigen matrix (another Eigen matrix is a shape_error) or any contiguous storage;
/// `wrt(s, out)`: write the gradient of scalar variable s into `out`. An Eigen buffer that is
/// not contiguous row-major gets the gradient through a staging buffer (eval/targets.hpp):
/// tad::grad_into allocates it per call, a tad::program holds it.
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
    using B = std::remove_cvref_t<Buf>;
    if constexpr (X::is_array && detail::eigen_dense<B>) {
      constexpr bool ok = std::is_same_v<typename B::Scalar, T> && !std::is_const_v<std::remove_pointer_t<decltype(buf.data())>>;
      if constexpr (!ok) {
        static_assert(ok, "tad::wrt(x, buffer): an Eigen gradient buffer must be writable and have x's element type");
        return invalid{};
      } else {
        const auto rows = static_cast<std::size_t>(buf.rows()), cols = static_cast<std::size_t>(buf.cols());
        if constexpr (detail::leaf_rank<X>() != 2 && !detail::eigen_vector_v<B>) {
          if (rows > 1 && cols > 1) detail::throw_vector_buffer_shape(X::name.view(), x.size, rows, cols);
        }
        // Strides in elements: contiguous row-major is written in place, any other layout
        // (row-major with an outer stride, column-major, a strided vector) through staging.
        const auto rs = detail::eigen_vector_v<B> ? buf.innerStride() : buf.rowStride();
        const auto cs = detail::eigen_vector_v<B> ? 1 : buf.colStride();
        const std::size_t n_rows = detail::eigen_vector_v<B> ? rows * cols : rows;
        const std::size_t n_cols = detail::eigen_vector_v<B> ? 1 : cols;
        if (rows * cols != 0 && (rs < 0 || cs < 0 || (n_rows > 1 && rs == 0) || (n_cols > 1 && cs == 0))) {
          throw std::invalid_argument("tad::wrt(x, buffer): an Eigen gradient buffer with a negative or zero stride "
                                      "(its elements would not be distinct)");
        }
        const bool dense = n_cols <= 1 ? (n_rows <= 1 || rs == 1)
                                       : cs == 1 && (n_rows <= 1 || static_cast<std::size_t>(rs) == n_cols);
        const bool shaped = !detail::eigen_vector_v<B>;
        if (dense || rows * cols == 0) return wrt_target<X, T>{x, buf.data(), rows * cols, shaped, rows, cols};
        // (A stride along an extent of 1 is never used: 1 keeps row_stride nonzero, "staged".)
        return wrt_target<X, T>{x, buf.data(), rows * cols, shaped, n_rows, n_cols, n_rows <= 1 ? 1 : static_cast<std::size_t>(rs),
                                n_cols <= 1 ? 1 : static_cast<std::size_t>(cs)};
      }
    } else if constexpr (X::is_array) {
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

/// The value of e: a float/double for a scalar expression, a std::vector for an array one, a
/// tad::matrix for a matrix one.
template <expression E>
constexpr auto value(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return 0.0;  // an error was reported where e was built
  } else if constexpr (detail::has_products_v<E>) {
    return detail::products_api<E>::value(e);
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
  } else if constexpr (detail::has_products_v<E>) {
    detail::products_api<E>::evaluate(e, out);
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
  } else if constexpr (detail::gradient_program<E, X...>()) {
    return detail::products_api<E>::grad(e, x...);
  } else if constexpr (detail::extents<E>::nests == 0 && (!X::is_array && ...)) {
    // Scalars only, as in grad_into: nothing to check, and the engine runs inline in the
    // caller, writing into the tuple it returns (out of line, the tuple was written on the
    // stack and copied out: 11 loads and stores per call of W5, decisions.md 70).
    using T = value_type_t<E>;
    std::tuple<T, detail::gradient_t<T, X>...> result{T(0), detail::make_gradient<T>(x)...};
    [&]<std::size_t... K>(std::index_sequence<K...>) TAD_INLINE_LAMBDA {
      std::array<T*, sizeof...(X) + 1> outs{&std::get<K + 1>(result)..., nullptr};
      std::get<0>(result) = detail::engine<E, T, detail::wrt_list<X...>>(e, outs.data(), nullptr, detail::bind_extents(e)).run();
    }(std::index_sequence_for<X...>{});
    return result;
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

namespace detail {
template <class E, class... X, class... T2>
value_type_t<E> grad_into_staged(const E& e, const wrt_target<X, T2>&... t);
template <class E, class... X, class... T2>
value_type_t<E> grad_into_checked(const E& e, const wrt_target<X, T2>&... targets);

/// The errors of a gradient buffer's checks, out of line (each names the caller, `api`, and the
/// variable).
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_target_shape(const char* api, std::string_view name,
                                                                      const matrix_shape& got,
                                                                      const matrix_shape& expected) {
  throw_buffer_shape(got, expected, (std::string(api) + ": gradient buffer").c_str(), name);
}
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_target_length(const char* api, std::string_view name,
                                                                       std::size_t expected, std::size_t got) {
  throw shape_error(std::string(api) + ": gradient buffer of '" + std::string(name) + "'", expected, got);
}
/// `what`: "an input array of the expression", "the workspace".
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] inline void throw_target_overlap(const char* api, std::string_view name,
                                                                        const char* what) {
  throw std::invalid_argument(std::string(api) + ": gradient buffer of '" + std::string(name) + "' overlaps " + what);
}

/// The engine's value of e and gradients into contiguous targets, unchecked (ext: e's bound
/// extents): tad::program runs the expressions around its products this way, on buffers it has
/// checked or owns. tad::grad_into calls the engine inline, with its checks: through a shared
/// function, g++ laid out the engine's loops differently (tools/codegen_diff.sh moved the
/// loops of 10 of 17 benchmark workloads), so its code stays as it was measured.
template <class E, class Ext, class... X, class... T2>
value_type_t<E> run_gradient(const E& e, const Ext& ext, const wrt_target<X, T2>&... targets) {
  using T = value_type_t<E>;
  std::array<T*, sizeof...(X) + 1> outs{targets.data..., nullptr};
  std::array<std::size_t, sizeof...(X) + 1> sizes{targets.size..., 0};
  return engine<E, T, wrt_list<X...>>(e, outs.data(), sizes.data(), ext).run();
}
/// adding_wrt_list of X... that adds the first NAdd gradients.
template <std::size_t NAdd, std::size_t... K>
auto adding_flags(std::index_sequence<K...>) -> std::integer_sequence<bool, (K < NAdd)...>;
template <std::size_t NAdd, class... X>
using adding_first_t = adding_wrt_list<decltype(adding_flags<NAdd>(std::index_sequence_for<X...>{})), X...>;
/// The same, adding the gradients whose flag in Adds is true to their buffers (W: the
/// adding_wrt_list of X..., whose plan must be able to: plan::can_add).
template <class W, class E, class Ext, class... X, class... T2>
value_type_t<E> run_gradient_with(const E& e, const Ext& ext, const wrt_target<X, T2>&... targets) {
  using T = value_type_t<E>;
  std::array<T*, sizeof...(X) + 1> outs{targets.data..., nullptr};
  std::array<std::size_t, sizeof...(X) + 1> sizes{targets.size..., 0};
  return engine<E, T, W>(e, outs.data(), sizes.data(), ext).run();
}
}  // namespace detail

/// Value of e; the gradients go into the caller's buffers given as `wrt(x, buffer)`. Allocates
/// nothing (but a staging buffer for a strided or column-major Eigen buffer). Throws shape_error
/// (before writing anything) if a buffer has the wrong length.
template <class E, class... X, class... T2>
TAD_INLINE auto grad_into(const E& e, const wrt_target<X, T2>&... targets) {
  constexpr int problem = detail::grad_problem<E, X...>();
  if constexpr (problem != 0) {
    detail::report_grad_problem<problem, true, E, X...>();
    return 0.0;
  } else if constexpr (!(std::is_same_v<value_type_t<E>, T2> && ...)) {
    static_assert(detail::always_false<E>, "tad::grad_into(e, wrt(x, buffer)...): every buffer must have e's element type");
    return 0.0;
  } else if constexpr (detail::gradient_program<E, X...>()) {
    return detail::products_api<E>::grad_into(e, targets...);
  } else if constexpr (detail::extents<E>::nests == 0 && (!X::is_array && ...)) {
    // Scalars only: nothing to check (no array to bind, no buffer to size), and the engine runs
    // inline in the caller (engine::run), as a hand-written function would (doc/benchmarks.md,
    // "Fixed costs").
    using T = value_type_t<E>;
    std::array<T*, sizeof...(X) + 1> outs{targets.data..., nullptr};
    return detail::engine<E, T, detail::wrt_list<X...>>(e, outs.data(), nullptr, detail::bind_extents(e)).run();
  } else {
    return detail::grad_into_checked(e, targets...);
  }
}

namespace detail {
/// grad_into with arrays: the checks, then the engine.
template <class E, class... X, class... T2>
value_type_t<E> grad_into_checked(const E& e, const wrt_target<X, T2>&... targets) {
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
      // The messages out of line (cold), as in check_binding (decisions.md 71).
      if (t.size != t.var.size) throw_target_length("tad::grad_into", V::name.view(), t.var.size, t.size);
      detail::visit_arrays(e, [&](const auto& leaf) {
        if (detail::overlaps(t.data, detail::target_span(t), leaf.data, detail::span_of(leaf)))
          throw_target_overlap("tad::grad_into", V::name.view(), "an input array of the expression");
      });
    }
  };
  (check_target(targets), ...);
  // Strided or column-major Eigen buffers (eval/targets.hpp): out of line, so that the common
  // path's code is what it was without them.
  if (detail::staging_size(targets...) != 0) [[unlikely]] return detail::grad_into_staged(e, targets...);
  std::array<T*, sizeof...(X) + 1> outs{targets.data..., nullptr};
  std::array<std::size_t, sizeof...(X) + 1> sizes{targets.size..., 0};
  return detail::engine<E, T, detail::wrt_list<X...>>(e, outs.data(), sizes.data(), ext).run();
}

/// grad_into with some targets staged (eval/targets.hpp): a staging buffer allocated for the
/// call, grad_into on contiguous targets, then the copies into place.
template <class E, class... X, class... T2>
[[gnu::cold, gnu::noinline]] value_type_t<E> grad_into_staged(const E& e, const wrt_target<X, T2>&... t) {
  std::vector<value_type_t<E>> area(staging_size(t...));
  return through_staging(area.data(), [&](const auto&... d) { return tad::grad_into(e, d...); }, t...);
}
}  // namespace detail

/// Vector-Jacobian product of the array expression e with the caller's seed (e's length; for a
/// matrix expression, as evaluate's out: rows * cols elements, row-major): the gradients of
/// `sum(seed * e)` with respect to x..., and that value. An e that holds matrix products is
/// evaluated by a tad::program built for the call.
template <expression E, class Seed, class... X>
auto vjp(const E& e, const Seed& seed, const X&... x) {
  if constexpr (detail::poisoned_v<E, X...>) {
    return std::tuple<double, detail::quiet_t<X>...>{};
  } else if constexpr (!is_array_v<E>) {
    static_assert(is_array_v<E>, "tad::vjp(e, seed, x...): e must be array-valued; use tad::grad for a scalar");
    return std::tuple<double, detail::quiet_t<X>...>{};
  } else if constexpr (detail::has_products_v<E>) {
    // A tad::program built for the call (eval/program/api.hpp), after grad's checks of x...
    constexpr int problem = detail::grad_problem<decltype(tad::sum(e)), X...>();
    if constexpr (problem != 0) {
      detail::report_grad_problem<problem, false, decltype(tad::sum(e)), X...>();
      return std::tuple<double, detail::quiet_t<X>...>{};
    } else {
      return detail::products_api<E>::vjp(e, seed, x...);
    }
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
  } else if constexpr (detail::has_products_v<E>) {
    constexpr int problem = detail::grad_problem<decltype(tad::sum(e)), X...>();
    if constexpr (problem != 0) {
      detail::report_grad_problem<problem, true, decltype(tad::sum(e)), X...>();
      return 0.0;
    } else if constexpr (!(std::is_same_v<value_type_t<E>, T2> && ...)) {
      static_assert(detail::always_false<E>, "tad::grad_into(e, wrt(x, buffer)...): every buffer must have e's element type");
      return 0.0;
    } else {
      return detail::products_api<E>::vjp_into(e, seed, targets...);
    }
  } else {
    const std::size_t n = detail::top_length<E>(detail::bind_extents(e));
    if constexpr (rank_v<E> == 2) detail::check_out_shape(seed, detail::top_shape(e), "tad::vjp_into(e, seed, ...): seed");
    if (std::ranges::size(seed) != n) throw shape_error("tad::vjp_into(e, seed, ...): seed", n, std::ranges::size(seed));
    return grad_into(dot(detail::seed_constant(seed, e), e), targets...);
  }
}

}  // namespace tad
