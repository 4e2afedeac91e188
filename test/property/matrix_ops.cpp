// Every op, modifier and full reduction on matrices (issue 15, item 1; doc/shapes.md), at
// shapes around the SIMD widths (0 x k, k x 0, 1 x 1, 3 x 5, 4 x 8, 7 x 9, 16 x 17, 33 x 3 and
// 300 x 257), on unaligned data, in float and double. Expected gradients are central
// differences of the per-element formula, the modifier's rule by hand, or a reduction's closed
// form (never tad's own output). In test/property (the gcc stage only: about 80 CPU seconds
// with g++, twice that sanitized); test/eval/matrix.cpp keeps one op and one modifier for the
// other stages.
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

using tad_test::buffer;
using tad_test::reals;
using namespace tad_test::matrix_check;

BOOST_AUTO_TEST_SUITE(matrix_ops)

// ---- every op, elementwise on matrices -----------------------------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(unary_ops_on_matrices, T, reals) {
  const domain any{-2, 2}, pos{0.2, 3}, off0{0.05, 2, true};
  check_elementwise<T>("exp(X) * Y", [](auto X, auto Y) { return tad::exp(X) * Y; },
                       [](double x, double y) { return std::exp(x) * y; }, nullptr, nullptr, any, any);
  check_elementwise<T>("log1p(X) + Y", [](auto X, auto Y) { return tad::log1p(X) + Y; },
                       [](double x, double y) { return std::log1p(x) + y; }, nullptr, nullptr, pos, any);
  check_elementwise<T>("tanh(X) - Y", [](auto X, auto Y) { return tad::tanh(X) - Y; },
                       [](double x, double y) { return std::tanh(x) - y; }, nullptr, nullptr, any, any);
  check_elementwise<T>("sigmoid(X * Y)", [](auto X, auto Y) { return tad::sigmoid(X * Y); },
                       [](double x, double y) { return sigmoid(x * y); }, nullptr, nullptr, any, any);
  check_elementwise<T>("abs(X) * Y", [](auto X, auto Y) { return tad::abs(X) * Y; },
                       [](double x, double y) { return std::abs(x) * y; }, nullptr, nullptr, off0, any);
  check_elementwise<T>("sqrt(X) + softplus(Y)", [](auto X, auto Y) { return tad::sqrt(X) + tad::softplus(Y); },
                       [](double x, double y) { return std::sqrt(x) + std::log1p(std::exp(y)); }, nullptr, nullptr,
                       pos, any);
  check_elementwise<T>("sin(X) / Y", [](auto X, auto Y) { return tad::sin(X) / Y; },
                       [](double x, double y) { return std::sin(x) / y; }, nullptr, nullptr, any, pos);
  // The remaining smooth ops, one expression: log, cos, expm1, tan, square, negation.
  check_elementwise<T>("log(X) * cos(Y) + expm1(Y) * tan(X / 4) - square(-X)",
                       [](auto X, auto Y) { return tad::log(X) * tad::cos(Y) + tad::expm1(Y) * tad::tan(X / 4) - tad::square(-X); },
                       [](double x, double y) { return std::log(x) * std::cos(y) + std::expm1(y) * std::tan(x / 4) - x * x; },
                       nullptr, nullptr, pos, any);
  // The piecewise ones: relu, sign, floor, ceil, round have derivative 0 or 1 away from their
  // kinks and jumps; min(X, Y) passes the adjoint to the smaller one.
  check_elementwise<T>("relu(X) * sign(Y) + floor(X) + ceil(Y) + round(X) + min(X, Y)",
                       [](auto X, auto Y) {
                         return tad::relu(X) * tad::sign(Y) + tad::floor(X) + tad::ceil(Y) + tad::round(X) + tad::min(X, Y);
                       },
                       [](double x, double y) {
                         const double sg = y > 0 ? 1.0 : y < 0 ? -1.0 : 0.0;
                         return std::max(x, 0.0) * sg + std::floor(x) + std::ceil(y) + std::round(x) + std::min(x, y);
                       },
                       [](double x, double y, double c) { return c * ((x > 0 ? (y > 0 ? 1.0 : -1.0) : 0.0) + (x < y ? 1.0 : 0.0)); },
                       [](double x, double y, double c) { return c * (x < y ? 0.0 : 1.0); }, off0, off0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(binary_and_select_ops_on_matrices, T, reals) {
  const domain any{-2, 2}, pos{0.5, 2};
  check_elementwise<T>("pow(X, Y)", [](auto X, auto Y) { return tad::pow(X, Y); },
                       [](double x, double y) { return std::pow(x, y); }, nullptr, nullptr, pos, {-1, 2});
  check_elementwise<T>("max(X, Y)", [](auto X, auto Y) { return tad::max(X, Y); },
                       [](double x, double y) { return std::max(x, y); },
                       [](double x, double y, double c) { return x > y ? c : 0.0; },
                       [](double x, double y, double c) { return x > y ? 0.0 : c; }, any, any);
  check_elementwise<T>("where(X > Y, X * Y, X - Y)", [](auto X, auto Y) { return tad::where(X > Y, X * Y, X - Y); },
                       [](double x, double y) { return x > y ? x * y : x - y; },
                       [](double x, double y, double c) { return x > y ? c * y : c; },
                       [](double x, double y, double c) { return x > y ? c * x : -c; }, any, any);
  check_elementwise<T>("clamp(X, -0.5, 0.5) * Y", [](auto X, auto Y) { return tad::clamp(X, -0.5, 0.5) * Y; },
                       [](double x, double y) { return clip(x, -0.5, 0.5) * y; },
                       [](double x, double y, double c) { return std::abs(x) < 0.5 ? c * y : 0.0; },
                       [](double x, double, double c) { return c * clip(x, -0.5, 0.5); }, any, any);
}

// ---- every modifier: the expected gradient is the modifier's rule by hand -----------------

BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers_on_matrices, T, reals) {
  const domain any{-2, 2};
  check_elementwise<T>("stop_gradient(X) * Y", [](auto X, auto Y) { return tad::stop_gradient(X) * Y; },
                       [](double x, double y) { return x * y; }, [](double, double, double) { return 0.0; },
                       [](double x, double, double c) { return c * x; }, any, any);
  check_elementwise<T>("scale_gradient(X * Y, 0.5)", [](auto X, auto Y) { return tad::scale_gradient(X * Y, 0.5); },
                       [](double x, double y) { return x * y; }, [](double, double y, double c) { return 0.5 * c * y; },
                       [](double x, double, double c) { return 0.5 * c * x; }, any, any);
  check_elementwise<T>("reverse_gradient(sin(X), 0.7) * Y",
                       [](auto X, auto Y) { return tad::reverse_gradient(tad::sin(X), 0.7) * Y; },
                       [](double x, double y) { return std::sin(x) * y; },
                       [](double x, double y, double c) { return -0.7 * c * y * std::cos(x); },
                       [](double x, double, double c) { return c * std::sin(x); }, any, any);
  check_elementwise<T>("clip_gradient(X * Y, -0.25, 0.25)",
                       [](auto X, auto Y) { return tad::clip_gradient(X * Y, -0.25, 0.25); },
                       [](double x, double y) { return x * y; },
                       [](double, double y, double c) { return clip(c, -0.25, 0.25) * y; },
                       [](double x, double, double c) { return clip(c, -0.25, 0.25) * x; }, any, any);
  check_elementwise<T>("straight_through(round(X), X) * Y",
                       [](auto X, auto Y) { return tad::straight_through(tad::round(X), X) * Y; },
                       [](double x, double y) { return std::round(x) * y; },
                       [](double, double y, double c) { return c * y; },
                       [](double x, double, double c) { return c * std::round(x); }, any, any);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(custom_override_and_let_on_matrices, T, reals) {
  const domain any{-2, 2};
  constexpr auto first_only = tad::custom_gradient(
      [](auto a, auto b) { return a * b; },
      [](auto dy, auto /*a*/, auto b, auto /*out*/) { return tad::adjoints{dy * b, tad::zero{}}; });
  check_elementwise<T>("custom_gradient(a * b; {dy b, zero})(X, Y)", [=](auto X, auto Y) { return first_only(X, Y); },
                       [](double x, double y) { return x * y; }, [](double, double y, double c) { return c * y; },
                       [](double, double, double) { return 0.0; }, any, any);
  check_elementwise<T>(
      "override_gradients(identity(X) * Y, identity -> 3 dy)",
      [](auto X, auto Y) {
        return tad::override_gradients(tad::identity(X) * Y, boost::hana::make_map(boost::hana::make_pair(
                                                                 boost::hana::type_c<tad::identity_op>, times3{})));
      },
      [](double x, double y) { return x * y; }, [](double, double y, double c) { return 3 * c * y; },
      [](double x, double, double c) { return c * x; }, any, any);
  // One node used twice: its clip runs once, on the summed adjoint 2c (semantics.md).
  check_elementwise<T>("z + z, z = let(clip_gradient(X * Y, -0.25, 0.25))",
                       [](auto X, auto Y) {
                         auto z = tad::let<"z">(tad::clip_gradient(X * Y, -0.25, 0.25));
                         return z + z;
                       },
                       [](double x, double y) { return 2 * x * y; },
                       [](double, double y, double c) { return clip(2 * c, -0.25, 0.25) * y; },
                       [](double x, double, double c) { return clip(2 * c, -0.25, 0.25) * x; }, any, any);
}

// ---- reductions over a whole matrix ---------------------------------------------------------

namespace {
/// The closed form of a reduction: its value, gradient, and the sum of |terms| its rounding
/// error scales with.
using reduce_ref = void (*)(std::span<const double> x, double& value, std::vector<double>& grad);
double abs_sum(std::span<const double> x) {
  double s = 0;
  for (double t : x) s += std::abs(t);
  return s;
}

/// A full reduction of X at every shape (empty shapes only where the reduction is defined on
/// no elements): value and gradient against the closed forms in `ref`.
template <class T, class R>
void check_reduction(const char* what, R red, reduce_ref ref, bool empty_ok, bool scale_by_n = false) {
  for (const shape& s : shapes) {
    const std::size_t n = s.rows * s.cols;
    if (n == 0 && !empty_ok) continue;
    const buffer<T> xs = make<T>(n, {-2, 2}, 7, 1);
    auto X = tad::var<"X">(xs.data(), s.rows, s.cols);
    const auto [v, gX] = tad::grad(red(X), X);
    const auto cx = xs.cspan();
    std::vector<double> xd(cx.begin(), cx.end()), want(n);
    double wv = 0;
    ref(xd, wv, want);
    // Rounding scales with the sum of |x| (sum, mean: divided by n) or the value.
    const double scale = std::max(std::abs(wv), n ? abs_sum(xd) / (scale_by_n ? double(n) : 1.0) : 0.0);
    BOOST_TEST(near(double(v), wv, std::is_same_v<T, float> ? 1e-4 : 1e-12, scale),
               what << " value at " << s.rows << " x " << s.cols << ": tad " << v << ", expected " << wv);
    expect_matrix(gX, s, want, what, "X");
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_of_matrices, T, reals) {
  check_reduction<T>("sum(X)", [](auto X) { return tad::sum(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       for (std::size_t i = 0; i < x.size(); ++i) v += x[i], g[i] = 1;
                     }, true);
  check_reduction<T>("mean(X)", [](auto X) { return tad::mean(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       for (std::size_t i = 0; i < x.size(); ++i) v += x[i] / double(x.size()), g[i] = 1 / double(x.size());
                     }, false, true);
  check_reduction<T>("squared_norm(X)", [](auto X) { return tad::squared_norm(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       for (std::size_t i = 0; i < x.size(); ++i) v += x[i] * x[i], g[i] = 2 * x[i];
                     }, true);
  check_reduction<T>("max(X)", [](auto X) { return tad::max(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       std::size_t k = 0;
                       for (std::size_t i = 1; i < x.size(); ++i) k = x[i] > x[k] ? i : k;
                       v = x[k];
                       g[k] = 1;
                     }, false);
  check_reduction<T>("min(X)", [](auto X) { return tad::min(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       std::size_t k = 0;
                       for (std::size_t i = 1; i < x.size(); ++i) k = x[i] < x[k] ? i : k;
                       v = x[k];
                       g[k] = 1;
                     }, false);
  check_reduction<T>("norm(X)", [](auto X) { return tad::norm(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       for (double t : x) v += t * t;
                       v = std::sqrt(v);
                       for (std::size_t i = 0; i < x.size(); ++i) g[i] = x[i] / v;
                     }, false);
  check_reduction<T>("logsumexp(X)", [](auto X) { return tad::logsumexp(X); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       double m = x[0], s = 0;
                       for (double t : x) m = std::max(m, t);
                       for (double t : x) s += std::exp(t - m);
                       v = m + std::log(s);
                       for (std::size_t i = 0; i < x.size(); ++i) g[i] = std::exp(x[i] - v);
                     }, false);
  // Two passes over the matrix: mean(X) first. d/dx_i sum((x - m)^2) = 2 (x_i - m).
  check_reduction<T>("sum(square(X - mean(X)))", [](auto X) { return tad::sum(tad::square(X - tad::mean(X))); },
                     [](std::span<const double> x, double& v, std::vector<double>& g) {
                       double m = 0;
                       for (double t : x) m += t / double(x.size());
                       for (std::size_t i = 0; i < x.size(); ++i) v += (x[i] - m) * (x[i] - m), g[i] = 2 * (x[i] - m);
                     }, false);
}


BOOST_AUTO_TEST_SUITE_END()
