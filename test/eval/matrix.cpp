// Matrices (issue 15, item 1, dense row-major; doc/shapes.md): gradients come back in the
// variable's shape, buffers and seeds are checked by shape, and shapes are checked before
// anything is written; a data term over a matrix with penalties of other shapes; a matrix
// parameter through the training pipeline; one op and one modifier at every shape around the
// SIMD widths, unaligned, float and double (test/property/matrix_ops.cpp has every op,
// modifier and reduction, in the gcc stage). Expected values are closed forms or central
// differences of the per-element formula, never tad's own output.
#include "support/alloc_counter.hpp"
#include "support/matrix_check.hpp"

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
using namespace tad_test::matrix_check;

BOOST_AUTO_TEST_SUITE(matrix_)

// One op and one modifier on matrices at every shape (every op and modifier:
// test/property/matrix_ops.cpp, built in the gcc stage only, for the CI budget).
BOOST_AUTO_TEST_CASE_TEMPLATE(an_op_and_a_modifier_on_matrices, T, reals) {
  const domain any{-2, 2};
  check_elementwise<T>("clip_gradient(exp(X) * Y, -0.25, 0.25)",
                       [](auto X, auto Y) { return tad::clip_gradient(tad::exp(X) * Y, -0.25, 0.25); },
                       [](double x, double y) { return std::exp(x) * y; },
                       [](double x, double y, double c) { return clip(c, -0.25, 0.25) * std::exp(x) * y; },
                       [](double x, double, double c) { return clip(c, -0.25, 0.25) * std::exp(x); }, any, any);
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
  tad_test::expect_shape_error([&] { (void)tad::evaluate(e, wrong); },
                               "tad::evaluate(e, out): out has shape 3 x 2, expected 2 x 3", 2, 3);
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
  tad_test::expect_shape_error([&] { (void)tad::grad_into(loss, tad::wrt(X, transposed)); },
                               "tad::grad_into: gradient buffer of 'X' has shape 3 x 2, expected 2 x 3");
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
  tad_test::expect_shape_error([&] { (void)tad::grad_into(loss, tad::wrt(X, gx), tad::wrt(Y, gy)); },
                               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, "
                               "variable 'Y' has shape 4 x 3",
                               3, 4);
  BOOST_TEST(std::all_of(gx.begin(), gx.end(), [](double t) { return t == 5.0; }));
  BOOST_TEST(std::all_of(gy.begin(), gy.end(), [](double t) { return t == 5.0; }));
  std::vector<double> c(6, 1.0);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X * tad::constant(c.data(), 3, 2))); },
                               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, "
                               "a constant matrix (array 2 from the left) has shape 3 x 2",
                               4, 2);
  // A variable passed to grad with another shape than in the expression.
  auto X43 = tad::var<"X">(a.data(), 4, 3);
  tad_test::expect_shape_error([&] { (void)tad::grad(tad::sum(tad::square(X)), X43); },
                               "tad::grad: variable 'X' has shape 4 x 3, in the expression 3 x 4");
  // Empty matrices of different shapes: 0 x 5 against 5 x 0 (both have no elements).
  auto X05 = tad::var<"X">(a.data(), 0, 5);
  auto X50 = tad::var<"X">(a.data(), 5, 0);
  tad_test::expect_shape_error([&] { (void)tad::grad(tad::sum(tad::square(X05)), X50); },
                               "tad::grad: variable 'X' has shape 5 x 0, in the expression 0 x 5");
  auto Y50 = tad::var<"Y">(b.data(), 5, 0);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(X05 * Y50)), tad::shape_error);
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
