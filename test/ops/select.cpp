// Comparisons, mask logic, where and clamp (tad/ops/select.hpp). Comparison masks
// (scalar/scalar, array/array, array/scalar-variable, number/array, array/number; with ties,
// and with NaN) against the C++ operators, combined with && || !; where: values, and the
// gradient goes only into the chosen branch (central differences and exact); clamp: values,
// central differences away from the bounds, exactly 1 at the bounds and 0 outside, gradients
// into array or scalar bounds, NaN.
#include <support/gradient_check.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace tad_test::gradient_check;

// ---- comparisons and masks -------------------------------------------------------------------

constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();

/// Data with many ties: values from {-1, -0.5, 0, 0.5, 1}.
template <class T>
tad_test::buffer<T> tie_data(std::size_t n, unsigned seed) {
  tad_test::buffer<T> b(n);
  std::mt19937 g(seed);
  for (auto& v : b) v = T(0.5 * (int(g() % 5) - 2));
  return b;
}

/// A mask as 0/1 values: where(m, 1, 0).
template <class T, class Cmp, class... S>
std::vector<double> mask_of(std::span<const std::span<T>> d) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return to_double(tad::value(tad::where(Cmp{}(make_var<K, S>(d[K])...), 1.0, 0.0)));
  }(std::index_sequence_for<S...>{});
}

template <class Cmp>
struct with_half {
  auto operator()(auto y) const { return Cmp{}(0.5, y); }
};
template <class Cmp>
struct with_zero {
  auto operator()(auto x) const { return Cmp{}(x, 0); }
};

/// cmp(x, y), cmp(x, s), cmp(0.5, y), cmp(x, 0) against the C++ operator, at every length;
/// cmp(s, t) of two scalar variables, NaN included.
template <class T, class Cmp>
void check_comparison(const std::string& name, Cmp cmp) {
  const double values[] = {-0.5, 0, 0.5, quiet_nan};
  std::vector<double> got, want;
  for (const double a : values) {
    for (const double b : values) {
      std::array<T, 2> st{T(a), T(b)};
      const std::array<std::span<T>, 2> d{std::span<T>(&st[0], 1), std::span<T>(&st[1], 1)};
      got.push_back(mask_of<T, Cmp, scal, scal>(d)[0]);
      want.push_back(cmp(st[0], st[1]));
    }
  }
  expect_all_close(got, want, 0, "s " + name + " t, scalars");
  for (const std::size_t n : lengths) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto x = tie_data<T>(n, 1);
    auto y = tie_data<T>(n, 2);
    T s = T(0.5);
    std::vector<double> xy, xs, hy, x0;
    for (std::size_t i = 0; i < n; ++i) {
      xy.push_back(cmp(x[i], y[i]));
      xs.push_back(cmp(x[i], s));
      hy.push_back(cmp(T(0.5), y[i]));
      x0.push_back(cmp(x[i], T(0)));
    }
    const std::array<std::span<T>, 2> d2{x.span(), y.span()};
    const std::array<std::span<T>, 2> ds{x.span(), std::span<T>(&s, 1)};
    const std::array<std::span<T>, 1> dy{y.span()}, dx{x.span()};
    expect_all_close(mask_of<T, Cmp, arr, arr>(d2), xy, 0, "x " + name + " y" + at);
    expect_all_close(mask_of<T, Cmp, arr, scal>(ds), xs, 0, "x " + name + " s" + at);
    expect_all_close(mask_of<T, with_half<Cmp>, arr>(dy), hy, 0, "0.5 " + name + " y" + at);
    expect_all_close(mask_of<T, with_zero<Cmp>, arr>(dx), x0, 0, "x " + name + " 0" + at);
  }
}

struct less {
  auto operator()(auto a, auto b) const { return a < b; }
};
struct less_equal {
  auto operator()(auto a, auto b) const { return a <= b; }
};
struct greater {
  auto operator()(auto a, auto b) const { return a > b; }
};
struct greater_equal {
  auto operator()(auto a, auto b) const { return a >= b; }
};
struct equal {
  auto operator()(auto a, auto b) const { return a == b; }
};
struct not_equal {
  auto operator()(auto a, auto b) const { return a != b; }
};

struct and_ {
  auto operator()(auto x, auto y, auto s) const { return (x > y) && (y <= s); }
};
struct or_ {
  auto operator()(auto x, auto y, auto s) const { return (x < s) || (x == y); }
};
struct not_ {
  auto operator()(auto x, auto y, auto s) const { return !((x >= y) || (y != s)); }
};
struct nested {
  auto operator()(auto x, auto y, auto s) const { return (!(x < y) && (x != s)) || !(y > 0); }
};

struct clamp_fn {
  auto operator()(auto x, auto lo, auto hi) const { return tad::clamp(x, lo, hi); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(select_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(comparisons, T, types) {
  check_comparison<T>("<", less{});
  check_comparison<T>("<=", less_equal{});
  check_comparison<T>(">", greater{});
  check_comparison<T>(">=", greater_equal{});
  check_comparison<T>("==", equal{});
  check_comparison<T>("!=", not_equal{});
}

// `x != y` is true where x or y is NaN, in SIMD batches too (xsimd 8.1's batch != is ordered,
// so tad negates ==).
BOOST_AUTO_TEST_CASE_TEMPLATE(comparisons_with_nan, T, types) {
  // NaN in x and in y, in SIMD batches and in the tail: only != holds.
  auto x = tie_data<T>(19, 5);
  auto y = tie_data<T>(19, 6);
  for (const std::size_t i : {0u, 5u, 9u, 17u}) x[i] = T(quiet_nan);
  for (const std::size_t i : {2u, 12u, 18u}) y[i] = T(quiet_nan);
  const std::array<std::span<T>, 2> d{x.span(), y.span()};
  const auto want = [&](auto cmp) {
    std::vector<double> w;
    for (std::size_t i = 0; i < 19; ++i) w.push_back(cmp(x[i], y[i]));
    return w;
  };
  expect_all_close(mask_of<T, less, arr, arr>(d), want(less{}), 0, "x < y with NaN");
  expect_all_close(mask_of<T, less_equal, arr, arr>(d), want(less_equal{}), 0, "x <= y with NaN");
  expect_all_close(mask_of<T, greater, arr, arr>(d), want(greater{}), 0, "x > y with NaN");
  expect_all_close(mask_of<T, greater_equal, arr, arr>(d), want(greater_equal{}), 0, "x >= y with NaN");
  expect_all_close(mask_of<T, equal, arr, arr>(d), want(equal{}), 0, "x == y with NaN");
  expect_all_close(mask_of<T, not_equal, arr, arr>(d), want(not_equal{}), 0, "x != y with NaN");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(mask_logic, T, types) {
  for (const std::size_t n : lengths) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto x = tie_data<T>(n, 3);
    auto y = tie_data<T>(n, 4);
    T s = T(0);
    std::vector<double> w_and, w_or, w_not, w_nested;
    for (std::size_t i = 0; i < n; ++i) {
      const T a = x[i], b = y[i];
      w_and.push_back((a > b) && (b <= s));
      w_or.push_back((a < s) || (a == b));
      w_not.push_back(!((a >= b) || (b != s)));
      w_nested.push_back((!(a < b) && (a != s)) || !(b > 0));
    }
    const std::array<std::span<T>, 3> d{x.span(), y.span(), std::span<T>(&s, 1)};
    expect_all_close(mask_of<T, and_, arr, arr, scal>(d), w_and, 0, "(x > y) && (y <= s)" + at);
    expect_all_close(mask_of<T, or_, arr, arr, scal>(d), w_or, 0, "(x < s) || (x == y)" + at);
    expect_all_close(mask_of<T, not_, arr, arr, scal>(d), w_not, 0, "!((x >= y) || (y != s))" + at);
    expect_all_close(mask_of<T, nested, arr, arr, scal>(d), w_nested, 0,
                     "(!(x < y) && (x != s)) || !(y > 0)" + at);
  }
}

// ---- where ----------------------------------------------------------------------------------

struct where_xy {
  auto operator()(auto x, auto y) const { return tad::sum(tad::where(x > y, x * x, 3.0 * y)); }
};
struct where_scalar_branch {
  auto operator()(auto x, auto s) const { return tad::sum(tad::where(x > 0, s, x * s)); }
};
struct where_log_branch {
  auto operator()(auto x) const { return tad::sum(tad::where(x > 0, tad::log(x), 2 * x)); }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(where_gradient_goes_to_the_chosen_branch, T, types) {
  // Central differences, away from the switch (|x| >= 1 > |y|).
  check_scalar<T>(
      "where(x > y, x * y, y - x)", [](auto x, auto y) { return tad::where(x > y, x * y, y - x); },
      [](auto x, auto y) { return x > y ? x * y : y - x; }, 0, scal{1, 2, true}, scal{-0.5, 0.5});
  for (const std::size_t n : lengths) {
    check_gradient<T>("where(x > y, x * x, 3 * y)", n, where_xy{}, arr{1, 2, true}, arr{-0.5, 0.5});
    check_gradient<T>("where(x > 0, s, x * s)", n, where_scalar_branch{}, arr{1, 2, true}, scal{-2, 2});
    check_gradient<T>("where(x > 0, log(x), 2 * x)", n, where_log_branch{}, arr{1, 2, true});
  }
  // Exact, with the mask's ties (x == y goes to the second branch).
  auto x = make_data<T>(true, -2, 2, false, 19, 5);
  auto y = make_data<T>(true, -2, 2, false, 19, 6);
  for (const std::size_t i : {1u, 8u, 17u}) y[i] = x[i];
  T s = T(1.25);
  const std::array<std::span<T>, 2> dxy{x.span(), y.span()};
  const std::array<std::span<T>, 2> dxs{x.span(), std::span<T>(&s, 1)};
  const std::array<std::span<T>, 1> dx{x.span()};
  const result r = grad_of<T, where_xy, arr, arr>(dxy);
  const result q = grad_of<T, where_scalar_branch, arr, scal>(dxs);
  const result l = grad_of<T, where_log_branch, arr>(dx);
  std::vector<double> gx, gy, qx, lx;
  double qs = 0, value = 0;
  for (std::size_t i = 0; i < 19; ++i) {
    const double a = x[i];
    gx.push_back(x[i] > y[i] ? 2 * a : 0.0);
    gy.push_back(x[i] > y[i] ? 0.0 : 3.0);
    qx.push_back(x[i] > 0 ? 0.0 : double(s));
    qs += x[i] > 0 ? 1.0 : a;
    lx.push_back(x[i] > 0 ? 1 / a : 2.0);
    value += x[i] > 0 ? std::log(a) : 2 * a;
  }
  expect_all_close(r.grads[0], gx, 0, "d/dx where(x > y, x * x, 3 * y)");
  expect_all_close(r.grads[1], gy, 0, "d/dy where(x > y, x * x, 3 * y)");
  expect_all_close(q.grads[0], qx, 0, "d/dx where(x > 0, s, x * s)");
  expect_close(q.grads[1][0], qs, 1e-6, "d/ds where(x > 0, s, x * s)");
  // log(x) of x < 0 is NaN in the branch not taken: neither the value nor the gradient sees it.
  expect_close(l.value, value, 1e-5, "where(x > 0, log(x), 2 * x), x < 0 too");
  expect_all_close(l.grads[0], lx, tad_test::grad_tol<T>(), "d/dx where(x > 0, log(x), 2 * x), x < 0 too");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(where_values, T, types) {
  // Numbers as branches, and an array/array selection with NaN in the mask's input.
  auto x = tie_data<T>(23, 7);
  for (const std::size_t i : {2u, 11u, 21u}) x[i] = T(quiet_nan);
  auto y = make_data<T>(true, -2, 2, false, 23, 8);
  const auto xv = tad::var<"x">(x.span());
  const auto yv = tad::var<"y">(y.span());
  std::vector<double> w1, w2;
  for (std::size_t i = 0; i < 23; ++i) {
    w1.push_back(x[i] >= 0 ? 2.5 : -1.0);
    w2.push_back(x[i] < y[i] ? double(y[i]) : double(x[i]));
  }
  expect_all_close(to_double(tad::value(tad::where(xv >= 0, 2.5, -1))), w1, 0, "where(x >= 0, 2.5, -1)");
  expect_all_close(to_double(tad::value(tad::where(xv < yv, yv, xv))), w2, 0, "where(x < y, y, x)");
}

// ---- clamp ----------------------------------------------------------------------------------

struct clamp_numbers {
  auto operator()(auto x) const { return tad::sum(tad::clamp(x, -1.0, 1.0)); }
};
struct clamp_xyz {
  auto operator()(auto x, auto lo, auto hi) const { return tad::sum(tad::clamp(x, lo, hi)); }
};

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_, T, types) {
  check_scalar<T>("clamp(x, y, z)", clamp_fn{},
                  [](auto x, auto y, auto z) { return std::clamp(x, y, z); }, 0, scal{-3, 3},
                  scal{-1.5, -0.5}, scal{0.5, 1.5});
  for (const std::size_t n : lengths) {
    check_gradient<T>("clamp(x, -1, 1)", n, clamp_numbers{}, arr{-3, 3});
    check_gradient<T>("clamp(x, s, t)", n, clamp_xyz{}, arr{-3, 3}, scal{-1.5, -0.5}, scal{0.5, 1.5});
    check_gradient<T>("clamp(x, lo, hi), arrays", n, clamp_xyz{}, arr{-3, 3}, arr{-1.5, -0.5}, arr{0.5, 1.5});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_at_and_beyond_the_bounds, T, types) {
  // The gradient passes to x inside [lo, hi] including exactly at lo and hi (PyTorch), is 0
  // outside; lo (hi) gets it where x is strictly below (above). Values and NaN too.
  auto x = make_data<T>(true, -3, 3, false, 21, 9);
  for (const std::size_t i : {0u, 6u, 13u, 20u}) x[i] = T(-1);
  for (const std::size_t i : {3u, 9u, 17u}) x[i] = T(1);
  std::array<T, 2> bounds{T(-1), T(1)};
  const std::array<std::span<T>, 1> dx{x.span()};
  const std::array<std::span<T>, 3> d{x.span(), std::span<T>(&bounds[0], 1), std::span<T>(&bounds[1], 1)};
  const result rn = grad_of<T, clamp_numbers, arr>(dx);
  const result rs = grad_of<T, clamp_xyz, arr, scal, scal>(d);
  std::vector<double> gx, values;
  double glo = 0, ghi = 0, value = 0;
  for (const T v : x) {
    gx.push_back(v >= -1 && v <= 1 ? 1.0 : 0.0);
    glo += v < -1 ? 1.0 : 0.0;
    ghi += v > 1 ? 1.0 : 0.0;
    values.push_back(std::clamp(double(v), -1.0, 1.0));
    value += values.back();
  }
  expect_all_close(rn.grads[0], gx, 0, "d/dx clamp(x, -1, 1) at the bounds");
  expect_all_close(rs.grads[0], gx, 0, "d/dx clamp(x, lo, hi) at the bounds");
  expect_close(rs.grads[1][0], glo, 0, "d/dlo clamp(x, lo, hi)");
  expect_close(rs.grads[2][0], ghi, 0, "d/dhi clamp(x, lo, hi)");
  expect_close(rn.value, value, 1e-5, "sum(clamp(x, -1, 1))");
  const auto xv = tad::var<"x">(x.span());
  for (const std::size_t i : {2u, 10u, 19u}) {
    x[i] = T(quiet_nan);
    values[i] = quiet_nan;
  }
  expect_all_close(to_double(tad::value(tad::clamp(xv, -1.0, 1.0))), values, 0, "clamp(x, -1, 1) with NaN");
  std::array<T, 3> sx{T(quiet_nan), T(-1), T(1)};
  const std::array<std::span<T>, 3> ds{std::span<T>(&sx[0], 1), std::span<T>(&sx[1], 1),
                                       std::span<T>(&sx[2], 1)};
  expect_close(grad_of<T, clamp_fn, scal, scal, scal>(ds).value, quiet_nan, 0, "clamp(NaN, -1, 1)");
}

BOOST_AUTO_TEST_SUITE_END()
