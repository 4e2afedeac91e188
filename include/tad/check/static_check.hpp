#pragma once
/// Gradient checks in constant evaluation, for `static_assert` (doc/compile-time-checks.md).
///
///   static_assert(tad::gradient_check([](auto x) { return log1pexp(x); }, std::array{-3.0, 0.0, 2.5}));
///
/// `build` receives one scalar double variable per coordinate of a point (named x0, x1, ...)
/// and returns a scalar expression; the points are numbers (one variable) or
/// `std::array<double, N>` (N variables). At every point, tad's gradient is compared with
/// central differences of the value (`gradient_check`) or with a gradient the user declares
/// (`gradient_check_against`). With `strip_modifiers`, the gradient is taken of
/// `strip_gradient_modifiers(expression)` (stop_gradient included): modifiers are then checked
/// to be the only departure from the true derivative.

#include <tad/core/fixed_string.hpp>
#include <tad/core/leaves.hpp>
#include <tad/eval/api.hpp>
#include <tad/gradient/strip.hpp>

#include <array>
#include <cstddef>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

/// Tolerances and step of the constexpr gradient checks. A gradient g passes against a
/// reference r when `|g - r| <= abs + rel * |r|`; the central differences use the step
/// `step * max(1, |v|)`, whose error (truncation ~ step^2 f''' / 6, rounding ~ 1e-16 |f| / step)
/// stays near 1e-10 relative for smooth functions of moderate size.
struct static_check_options {
  double rel = 1e-6;
  double abs = 1e-9;
  double step = 1e-5;
  bool strip_modifiers = false;
};

namespace detail {

template <std::size_t K>
struct check_arg_name {
  static_assert(K < 10, "tad::gradient_check: at most 10 variables");
  static constexpr char value[3] = {'x', static_cast<char>('0' + K), '\0'};
};

template <class P>
constexpr std::size_t point_arity() {
  if constexpr (std::is_arithmetic_v<P>) return 1; else return std::tuple_size_v<P>;
}

template <std::size_t N, class P>
constexpr std::array<double, N> point_values(const P& p) {
  std::array<double, N> a{};
  if constexpr (std::is_arithmetic_v<P>) {
    a[0] = static_cast<double>(p);
  } else {
    for (std::size_t k = 0; k < N; ++k) a[k] = static_cast<double>(p[k]);
  }
  return a;
}

constexpr double check_abs(double v) { return v < 0 ? -v : v; }
constexpr bool check_close(double g, double r, const static_check_options& o) {
  if (g != g || r != r) return false;  // a NaN gradient or reference fails
  return check_abs(g - r) <= o.abs + o.rel * check_abs(r);
}

/// tad's gradient of build(x0, ..., x{N-1}) at v, as N doubles.
template <std::size_t N, class F>
constexpr std::array<double, N> check_gradient_at(const F& build, std::array<double, N> v, bool strip) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    const auto e = build(var<fixed_string<3>(check_arg_name<K>::value)>(v[K])...);
    const auto pick = [](const auto& t) { return std::array<double, N>{static_cast<double>(std::get<K + 1>(t))...}; };
    if (strip) return pick(grad(strip_gradient_modifiers(e), var<fixed_string<3>(check_arg_name<K>::value)>(v[K])...));
    return pick(grad(e, var<fixed_string<3>(check_arg_name<K>::value)>(v[K])...));
  }(std::make_index_sequence<N>{});
}

/// Central differences of the value of build(...) at v.
template <std::size_t N, class F>
constexpr std::array<double, N> check_central_at(const F& build, std::array<double, N> v, double step) {
  std::array<double, N> r{};
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    const auto e = build(var<fixed_string<3>(check_arg_name<K>::value)>(v[K])...);  // reads v
    for (std::size_t k = 0; k < N; ++k) {
      const double x = v[k];
      const double h = step * (check_abs(x) > 1 ? check_abs(x) : 1.0);
      v[k] = x + h;
      const double up = static_cast<double>(value(e));
      v[k] = x - h;
      const double down = static_cast<double>(value(e));
      v[k] = x;
      r[k] = (up - down) / ((x + h) - (x - h));
    }
  }(std::make_index_sequence<N>{});
  return r;
}

}  // namespace detail

/// True when, at every point, tad's gradient of `build(x0, ...)` equals central differences of
/// its value within the options' tolerances. Usable in `static_assert`.
template <class F, class Points>
constexpr bool gradient_check(const F& build, const Points& points, static_check_options o = {}) {
  using P = std::remove_cvref_t<std::ranges::range_value_t<Points>>;
  constexpr std::size_t N = detail::point_arity<P>();
  for (const auto& p : points) {
    const auto v = detail::point_values<N>(p);
    const auto g = detail::check_gradient_at<N>(build, v, o.strip_modifiers);
    const auto r = detail::check_central_at<N>(build, v, o.step);
    for (std::size_t k = 0; k < N; ++k)
      if (!detail::check_close(g[k], r[k], o)) return false;
  }
  return true;
}

/// True when, at every point, tad's gradient of `build(x0, ...)` equals `expected(v0, ...)` (a
/// number for one variable, `std::array<double, N>` for N): the declared rule of a modifier.
template <class F, class G, class Points>
constexpr bool gradient_check_against(const F& build, const G& expected, const Points& points,
                                      static_check_options o = {}) {
  using P = std::remove_cvref_t<std::ranges::range_value_t<Points>>;
  constexpr std::size_t N = detail::point_arity<P>();
  for (const auto& p : points) {
    const auto v = detail::point_values<N>(p);
    const auto g = detail::check_gradient_at<N>(build, v, o.strip_modifiers);
    const auto want = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return detail::point_values<N>(expected(v[K]...));
    }(std::make_index_sequence<N>{});
    for (std::size_t k = 0; k < N; ++k)
      if (!detail::check_close(g[k], want[k], o)) return false;
  }
  return true;
}

}  // namespace tad
