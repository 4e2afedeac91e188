// Matrices (issue 15, item 1, dense row-major; doc/shapes.md): every op and modifier works
// elementwise on matrix leaves, gradients come back in the variable's shape, and shapes are
// checked before anything is written. Expected gradients are central differences of the
// per-element formula written out below, or the modifier's rule by hand (never tad's own
// output), at shapes around the SIMD widths (0 x k, k x 0, 1 x 1, 3 x 5, 4 x 8, 7 x 9, 16 x 17,
// 33 x 3 and 300 x 257), on unaligned data, in float and double.
#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::reals;

namespace {

struct shape {
  std::size_t rows, cols;
};
const std::vector<shape> shapes{{0, 5}, {5, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {300, 257}};

/// A domain of random data: uniform in [lo, hi), each value's sign flipped at random if `mixed`.
struct domain {
  double lo, hi;
  bool mixed = false;
};

template <class T>
buffer<T> make(std::size_t n, domain d, unsigned seed, std::size_t offset) {
  buffer<T> b(n, offset);
  tad_test::fill_uniform(b, d.lo, d.hi, seed);
  if (d.mixed) {
    std::mt19937 g(seed + 99);
    for (auto& v : b)
      if (g() & 1u) v = -v;
  }
  return b;
}

using elem = double (*)(double, double);
/// The expected gradient of one element: (x, y, c), c the adjoint reaching the op (the loss is
/// sum(C * op(X, Y)) with a random constant matrix C).
using elem_grad = double (*)(double, double, double);

double central_x(elem f, double x, double y) {
  return tad_test::central([&](double t) { return f(t, y); }, x);
}
double central_y(elem f, double x, double y) {
  return tad_test::central([&](double t) { return f(x, t); }, y);
}

/// |a - b| <= tol * max(1, scale): a sum's rounding error grows with the sum of |terms|.
bool near(double a, double b, double tol, double scale) { return std::abs(a - b) <= tol * std::max(1.0, scale); }

template <class T>
void expect_matrix(const tad::matrix<T>& g, const shape& s, const std::vector<double>& want, const char* what,
                   const char* var) {
  BOOST_TEST_REQUIRE(g.rows() == s.rows);
  BOOST_TEST_REQUIRE(g.cols() == s.cols);
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!tad_test::close(double(g.data()[i]), want[i], tad_test::grad_tol<T>()) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << " d/d" << var << " at " << s.rows << " x " << s.cols << ": " << bad
                             << " elements differ; first (" << (s.cols ? first / s.cols : 0) << ", "
                             << (s.cols ? first % s.cols : 0) << "): tad " << (bad ? double(g.data()[first]) : 0.0)
                             << ", expected " << (bad ? want[first] : 0.0));
}

/// sum(C * op(X, Y)) at every shape: its value against sum c f(x, y), its gradients against gx
/// and gy (nullptr: c times the central difference of f).
template <class T, class Op>
void check_elementwise(const char* what, Op op, elem f, elem_grad gx, elem_grad gy, domain dx, domain dy) {
  for (const shape& s : shapes) {
    const std::size_t n = s.rows * s.cols;
    const buffer<T> xs = make<T>(n, dx, 1, 1), ys = make<T>(n, dy, 2, 3), cs = make<T>(n, {-1, 1}, 3, 2);
    auto X = tad::var<"X">(xs.data(), s.rows, s.cols);
    auto Y = tad::var<"Y">(ys.data(), s.rows, s.cols);
    auto C = tad::constant(cs.data(), s.rows, s.cols);
    auto loss = tad::sum(C * op(X, Y));
    const auto [v, gX, gY] = tad::grad(loss, X, Y);
    double want = 0, scale = 0;
    std::vector<double> wx(n), wy(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = double(xs[i]), y = double(ys[i]), c = double(cs[i]);
      want += c * f(x, y);
      scale += std::abs(c * f(x, y));
      wx[i] = gx ? gx(x, y, c) : c * central_x(f, x, y);
      wy[i] = gy ? gy(x, y, c) : c * central_y(f, x, y);
    }
    BOOST_TEST(near(double(v), want, std::is_same_v<T, float> ? 1e-4 : 1e-12, scale),
               what << " value at " << s.rows << " x " << s.cols << ": tad " << v << ", expected " << want);
    expect_matrix(gX, s, wx, what, "X");
    expect_matrix(gY, s, wy, what, "Y");
  }
}

struct times3 {
  auto operator()(auto dy, auto /*v*/, auto /*out*/) const { return 3 * dy; }
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

}  // namespace

BOOST_AUTO_TEST_SUITE(matrix_)

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

// ---- a data term over a matrix plus penalties of other shapes -------------------------------

// L = sum((s X - Y)^2) + 0.01 sum(w^2): dL/dX = 2 s (s X - Y), dL/ds = sum 2 X (s X - Y),
// dL/dw = 0.02 w; X is 7 x 9, w has 5 elements.
BOOST_AUTO_TEST_CASE_TEMPLATE(matrix_data_term_with_vector_penalty_and_scalar, T, reals) {
  const std::size_t r = 7, c = 9, m = 5;
  const buffer<T> xs = make<T>(r * c, {-1, 1}, 11, 1), ys = make<T>(r * c, {-1, 1}, 12, 2), ws = make<T>(m, {-1, 1}, 13, 3);
  T sv = T(0.8);
  auto X = tad::var<"X">(xs.data(), r, c);
  auto Y = tad::constant(ys.data(), r, c);
  auto w = tad::var<"w">(ws.cspan());
  auto s = tad::var<"s">(sv);
  auto loss = tad::sum(tad::square(s * X - Y)) + T(0.01) * tad::squared_norm(w);
  static_assert(tad::passes_v<decltype(loss), decltype(X), decltype(s), decltype(w)> == 2, "one fused loop per shape");
  buffer<T> gx(r * c, 1), gw(m, 2);
  T gs = 0;
  const T v = tad::grad_into(loss, tad::wrt(X, gx.span()), tad::wrt(s, gs), tad::wrt(w, gw.span()));
  double want = 0, wgs = 0;
  for (std::size_t i = 0; i < r * c; ++i) {
    const double d = double(sv) * double(xs[i]) - double(ys[i]);
    want += d * d;
    wgs += 2 * double(xs[i]) * d;
    BOOST_TEST(tad_test::close(double(gx[i]), 2 * double(sv) * d, tad_test::grad_tol<T>()));
  }
  for (std::size_t j = 0; j < m; ++j) {
    want += 0.01 * double(ws[j]) * double(ws[j]);
    BOOST_TEST(tad_test::close(double(gw[j]), 0.02 * double(ws[j]), tad_test::grad_tol<T>()));
  }
  BOOST_TEST(tad_test::close(double(v), want, tad_test::grad_tol<T>()));
  BOOST_TEST(tad_test::close(double(gs), wgs, tad_test::grad_tol<T>()));
}

// ---- shapes through the entry points ---------------------------------------------------------

BOOST_AUTO_TEST_CASE(gradient_has_the_variable_shape_row_major) {
  // L = sum(C * X^2): dL/dX(r, c) = 2 C(r, c) X(r, c); a 3 x 5 matrix so that a transposed or
  // column-major result would put values in other places.
  tad::matrix<double> Xm(3, 5), Cm(3, 5);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 5; ++c) Xm(r, c) = double(r) + 0.1 * double(c), Cm(r, c) = double(1 + r * 5 + c);
  auto X = tad::var<"X">(Xm);
  auto loss = tad::sum(tad::constant(Cm) * tad::square(X));
  const auto [v, g] = tad::grad(loss, X);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(g)>, tad::matrix<double>>);
  BOOST_TEST(g.rows() == 3u);
  BOOST_TEST(g.cols() == 5u);
  double want = 0;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 5; ++c) {
      want += Cm(r, c) * Xm(r, c) * Xm(r, c);
      BOOST_TEST(g(r, c) == 2 * Cm(r, c) * Xm(r, c), boost::test_tools::tolerance(1e-15));
    }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(tad::rank_v<decltype(X)> == 2);
  BOOST_TEST(tad::rank_v<decltype(X * 2.0)> == 2);
  BOOST_TEST(tad::rank_v<decltype(loss)> == 0);
}

BOOST_AUTO_TEST_CASE(value_evaluate_and_vjp_of_a_matrix_expression) {
  const tad::matrix<double> Xm{{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}};
  const tad::matrix<double> S{{1, 2, 3}, {4, 5, 6}};
  auto X = tad::var<"X">(Xm);
  auto e = tad::tanh(X) * 2.0;
  const tad::matrix<double> v = tad::value(e);
  BOOST_TEST(v.rows() == 2u);
  BOOST_TEST(v.cols() == 3u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(v(r, c) == 2 * std::tanh(Xm(r, c)), boost::test_tools::tolerance(1e-14));

  tad::matrix<double> out(2, 3), wrong(3, 2, -1.0);
  tad::evaluate(e, out);
  BOOST_TEST(out == v);
  std::vector<double> flat(6);
  tad::evaluate(e, flat);  // a buffer without a shape: row-major, checked by its length
  BOOST_TEST(std::equal(flat.begin(), flat.end(), v.begin()));
  try {
    tad::evaluate(e, wrong);
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string(err.what()) == "tad::evaluate(e, out): out has shape 3 x 2, expected 2 x 3");
    BOOST_TEST(err.expected() == 2u);
    BOOST_TEST(err.got() == 3u);
  }
  BOOST_TEST(std::all_of(wrong.begin(), wrong.end(), [](double t) { return t == -1.0; }));

  // vjp: d/dX sum(S * 2 tanh(X)) = 2 S (1 - tanh^2 X), with the seed as a matrix and flat.
  const auto [sv, g] = tad::vjp(e, S, X);
  const std::vector<double> flat_seed(S.begin(), S.end());
  const auto [sv2, g2] = tad::vjp(e, flat_seed, X);
  double want = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      const double t = std::tanh(Xm(r, c));
      want += S(r, c) * 2 * t;
      BOOST_TEST(g(r, c) == 2 * S(r, c) * (1 - t * t), boost::test_tools::tolerance(1e-13));
      BOOST_TEST(g2(r, c) == g(r, c));
    }
  BOOST_TEST(sv == want, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(sv2 == sv);
  BOOST_CHECK_THROW((void)tad::vjp(e, tad::matrix<double>(3, 2), X), tad::shape_error);
  tad::matrix<double> gi(2, 3);
  const double vi = tad::vjp_into(e, S, tad::wrt(X, gi));
  BOOST_TEST(vi == sv);
  BOOST_TEST(gi == g);
}

BOOST_AUTO_TEST_CASE(grad_into_checks_buffer_shapes_before_writing) {
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  auto X = tad::var<"X">(Xm);
  auto loss = tad::sum(tad::square(X));
  tad::matrix<double> g(2, 3), transposed(3, 2, 7.0);
  std::vector<double> flat(6), short_buffer(5, 7.0);
  BOOST_TEST(tad::grad_into(loss, tad::wrt(X, g)) == 91.0);
  BOOST_TEST(tad::grad_into(loss, tad::wrt(X, flat)) == 91.0);
  for (std::size_t i = 0; i < 6; ++i) {
    BOOST_TEST(g.data()[i] == 2 * Xm.data()[i]);
    BOOST_TEST(flat[i] == 2 * Xm.data()[i]);
  }
  try {
    (void)tad::grad_into(loss, tad::wrt(X, transposed));
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string(err.what()) == "tad::grad_into: gradient buffer of 'X' has shape 3 x 2, expected 2 x 3");
  }
  BOOST_CHECK_THROW((void)tad::grad_into(loss, tad::wrt(X, short_buffer)), tad::shape_error);
  BOOST_TEST(std::all_of(transposed.begin(), transposed.end(), [](double t) { return t == 7.0; }));
  BOOST_TEST(std::all_of(short_buffer.begin(), short_buffer.end(), [](double t) { return t == 7.0; }));
}

BOOST_AUTO_TEST_CASE(matrices_of_different_shapes_are_an_error_naming_both) {
  // 3 x 4 and 4 x 3 have one length: the shapes, not the lengths, are compared.
  std::vector<double> a(12, 1.0), b(12, 2.0);
  auto X = tad::var<"X">(a.data(), 3, 4);
  auto Y = tad::var<"Y">(b.data(), 4, 3);
  auto loss = tad::sum(X * Y);
  std::vector<double> gx(12, 5.0), gy(12, 5.0);
  try {
    (void)tad::grad_into(loss, tad::wrt(X, gx), tad::wrt(Y, gy));
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string(err.what()) ==
               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, variable 'Y' "
               "has shape 4 x 3");
    BOOST_TEST(err.expected() == 3u);
    BOOST_TEST(err.got() == 4u);
  }
  BOOST_TEST(std::all_of(gx.begin(), gx.end(), [](double t) { return t == 5.0; }));
  BOOST_TEST(std::all_of(gy.begin(), gy.end(), [](double t) { return t == 5.0; }));
  std::vector<double> c(6, 1.0);
  try {
    (void)tad::value(tad::sum(X * tad::constant(c.data(), 3, 2)));
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string(err.what()) ==
               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, a constant matrix "
               "(array 2 from the left) has shape 3 x 2");
    BOOST_TEST(err.expected() == 4u);
    BOOST_TEST(err.got() == 2u);
  }
  // A variable passed to grad with another shape than in the expression.
  auto X43 = tad::var<"X">(a.data(), 4, 3);
  BOOST_CHECK_THROW((void)tad::grad(tad::sum(tad::square(X)), X43), tad::shape_error);
  // One name, one variable: the same data viewed with two shapes is two variables.
  BOOST_CHECK_THROW((void)(tad::sum(X) + tad::sum(X43)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(grad_into_of_matrices_allocates_nothing) {
  tad::matrix<double> Xm(16, 17, 0.5), Ym(16, 17, 0.25), g(16, 17);
  std::vector<double> w(5, 1.0), gw(5);
  auto X = tad::var<"X">(Xm);
  auto wv = tad::var<"w">(w);
  auto loss = tad::mean(tad::square(X - tad::constant(Ym))) + 0.5 * tad::squared_norm(wv);
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(loss, tad::wrt(X, g), tad::wrt(wv, gw));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(v == 0.0625 + 2.5, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(g(15, 16) == 2 * 0.25 / (16.0 * 17.0), boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(print_gradcheck_and_the_matrix_type) {
  tad::matrix<double> Xm{{0.5, -1, 2}, {1.5, 0.25, -0.75}}, Cm(2, 3, 0.5);
  auto X = tad::var<"X">(Xm);
  auto loss = tad::sum(tad::sin(X) * tad::constant(Cm));
  BOOST_TEST(tad::to_string(loss) == "sum(sin(X) * constant[2x3])");
  const auto report = tad::gradcheck(loss, X);
  BOOST_TEST(report.ok);

  BOOST_CHECK_THROW((tad::matrix<double>{{1, 2}, {3}}), std::invalid_argument);
  BOOST_CHECK_THROW((void)Xm.at(2, 0), std::out_of_range);
  BOOST_CHECK_THROW((void)Xm.at(0, 3), std::out_of_range);
  BOOST_CHECK_THROW((void)Xm.row(2), std::out_of_range);
  BOOST_TEST(Xm.row(1)[2] == -0.75);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  BOOST_CHECK_THROW((void)tad::var<"X">(Xm.data(), huge, 3), std::length_error);
  BOOST_CHECK_THROW((void)tad::constant(Xm.data(), 3, huge), std::length_error);
  BOOST_CHECK_THROW((tad::matrix<double>(huge, 4)), std::length_error);
}

// A matrix parameter through the training pipeline: one SGD step after clip_by_global_norm.
// L = sum((W - T)^2) + b^2: g_W = 2 (W - T), g_b = 2 b; the global norm |g| = 2 sqrt(6 * 1 + 1)
// with W - T = 1 everywhere and b = 1, clipped to 1: each gradient scaled by 1 / |g|.
BOOST_AUTO_TEST_CASE(training_step_with_a_matrix_parameter) {
  tad::matrix<double> Wm(2, 3, 1.0), Tm(2, 3, 0.0);
  double bv = 1.0;
  auto W = tad::var<"W">(Wm);
  auto b = tad::var<"b">(bv);
  auto loss = tad::sum(tad::square(W - tad::constant(Tm))) + b * b;
  tad::parameter_set params(W, b);
  tad::gradient_set grads(params);
  tad::sgd opt(params, 0.1);
  auto clip = tad::clip_by_global_norm(1.0);
  const double v = tad::train_step(loss, params, grads, clip, opt);
  BOOST_TEST(v == 7.0);
  const double norm = 2 * std::sqrt(7.0);
  for (double t : Wm) BOOST_TEST(t == 1.0 - 0.1 * 2.0 / norm, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(bv == 1.0 - 0.1 * 2.0 / norm, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_SUITE_END()
