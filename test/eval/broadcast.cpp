// Broadcasting a vector across a matrix's rows (issue 15, item 2; doc/shapes.md): `X + b` with X
// rows x cols and b of length cols adds b to every row (NumPy's right-aligned rule). Shown here:
// gradients at every shape around the SIMD widths (float, double, unaligned), the vector's
// gradient summed over the rows whether the row nest or the vector's own nest writes it first,
// results and seeds of matrix shape, multi-pass reductions and mean's count, modifiers and lets
// on a broadcast, shape errors naming both shapes before anything is written, pass counts, and
// no allocation. test/property/broadcast_ops.cpp has every binary op in both orders (gcc stage).
// Expected values are closed forms or central differences, never tad's own output.
#include "support/alloc_counter.hpp"
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::reals;
using namespace tad_test::matrix_check;

BOOST_AUTO_TEST_SUITE(broadcast)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_row_vector_at_every_shape, T, reals) {
  // exp(X) * b: the vector is the right operand; d/db_j = sum_r c_rj exp(x_rj). With a penalty
  // 0.5 |b|^2 in both orders, so b's gradient is first written by the row nest (then added to
  // by b's own nest) and the other way round.
  const domain any{-2, 2};
  check_row_broadcast<T>("exp(X) * b", [](auto X, auto b) { return tad::exp(X) * b; },
                         [](double x, double y) { return std::exp(x) * y; }, nullptr, nullptr, any, any);
  check_row_broadcast<T>("b - tanh(X) with a penalty", [](auto X, auto b) { return b - tad::tanh(X); },
                         [](double x, double y) { return y - std::tanh(x); }, nullptr, nullptr, any, any, penalty{0.5});
}

BOOST_AUTO_TEST_CASE(value_evaluate_and_vjp_have_the_matrix_shape) {
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  const std::vector<double> bs{0.5, -1, 2};
  auto X = tad::var<"X">(Xm);
  auto b = tad::var<"b">(bs);
  const auto e = X * b + 1.0;
  const tad::matrix<double> v = tad::value(e);
  BOOST_TEST(v.rows() == 2u);
  BOOST_TEST(v.cols() == 3u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(v(r, c) == Xm(r, c) * bs[c] + 1);
  tad::matrix<double> out(2, 3);
  tad::evaluate(e, out);
  BOOST_TEST(out == v);
  // vjp with seed S: d/dX = S * b (per row), d/db_j = sum_r S_rj X_rj.
  const tad::matrix<double> S{{1, -2, 0.5}, {3, 0.25, -1}};
  const auto [sv, gX, gb] = tad::vjp(e, S, X, b);
  double want = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      want += S(r, c) * (Xm(r, c) * bs[c] + 1);
      BOOST_TEST(gX(r, c) == S(r, c) * bs[c]);
    }
  for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(gb[c] == S(0, c) * Xm(0, c) + S(1, c) * Xm(1, c));
  BOOST_TEST(sv == want);
  // The vector on the left: b + X is X + b.
  const tad::matrix<double> w = tad::value(b + X);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(w(r, c) == Xm(r, c) + bs[c]);
}

BOOST_AUTO_TEST_CASE(reductions_count_the_matrix_elements) {
  // mean(X + b) divides by rows * cols; sum((b + X) + 2) pulls 2 out of the sum as
  // rows * cols * 2 (not cols * 2: the vector comes first but the result has X's elements).
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  const std::vector<double> bs{0.5, -1, 2};
  auto X = tad::var<"X">(Xm);
  auto b = tad::var<"b">(bs);
  const auto [m, gXm, gbm] = tad::grad(tad::mean(X + b), X, b);
  BOOST_TEST(m == (21 + 2 * 1.5) / 6.0, boost::test_tools::tolerance(1e-15));
  for (double g : gXm) BOOST_TEST(g == 1 / 6.0, boost::test_tools::tolerance(1e-15));
  for (double g : gbm) BOOST_TEST(g == 2 / 6.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(tad::value(tad::sum((b + X) + 2.0)) == 21 + 2 * 1.5 + 6 * 2.0);
  BOOST_TEST(tad::value(tad::sum(2.0 - (b + X))) == 6 * 2.0 - (21 + 2 * 1.5));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(multipass_reductions_over_a_broadcast, T, reals) {
  // logsumexp(X + b) (a scaled pass: max, then the sum with a unit adjoint) and the variance
  // sum(square(Z - mean(Z))) with Z = X * b (two backward depths in one row nest), at a shape
  // with SIMD blocks and tails in every row. Closed forms: d lse / d x_rj = softmax_rj,
  // d lse / d b_j = sum_r softmax_rj; the variance's d/dZ = 2 (Z - mean), then by the product rule.
  const std::size_t rows = 7, cols = 19;
  buffer<T> xs(rows * cols, 1), bs(cols, 3);
  tad_test::fill_uniform(xs, -2, 2, 5);
  tad_test::fill_uniform(bs, -1, 1, 6);
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto b = tad::var<"b">(bs.cspan());
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;

  double mx = -INFINITY, z = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) mx = std::max(mx, double(xs[r * cols + c]) + double(bs[c]));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) z += std::exp(double(xs[r * cols + c]) + double(bs[c]) - mx);
  const auto [lse, gX, gb] = tad::grad(tad::logsumexp(X + b), X, b);
  BOOST_TEST(tad_test::close(double(lse), mx + std::log(z), tol));
  std::vector<double> wb(cols);
  std::size_t bad = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double p = std::exp(double(xs[r * cols + c]) + double(bs[c]) - mx) / z;
      bad += !tad_test::close(double(gX(r, c)), p, tol);
      wb[c] += p;
    }
  for (std::size_t c = 0; c < cols; ++c) bad += !tad_test::close(double(gb[c]), wb[c], tol);
  BOOST_TEST(bad == 0u);

  const auto Z = X * b;
  const auto [var, vX, vb] = tad::grad(tad::sum(tad::square(Z - tad::mean(Z))), X, b);
  double mean = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) mean += double(xs[r * cols + c]) * double(bs[c]);
  mean /= double(rows * cols);
  double want = 0;
  std::vector<double> vwb(cols);
  bad = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = double(xs[r * cols + c]), y = double(bs[c]), d = x * y - mean;
      want += d * d;
      bad += !tad_test::close(double(vX(r, c)), 2 * d * y, tol * 10);
      vwb[c] += 2 * d * x;
    }
  for (std::size_t c = 0; c < cols; ++c) bad += !tad_test::close(double(vb[c]), vwb[c], tol * 10);
  BOOST_TEST(tad_test::close(double(var), want, tol * 10));
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(modifiers_and_lets_on_a_broadcast) {
  // clip_gradient(X * b, -0.5, 0.5) under sum(C * .): the adjoint c is clipped, then split by the
  // product rule; the let z is used twice, so its clip runs once on the summed adjoint 2c.
  // custom_gradient with a matrix and a vector input: its rule (dy * 3, dy * 5) by hand.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}}, Cm{{0.1, -0.4, 0.3}, {-0.2, 0.35, 0.05}};
  const std::vector<double> bs{0.5, -1, 2};
  auto X = tad::var<"X">(Xm);
  auto b = tad::var<"b">(bs);
  auto C = tad::constant(Cm);
  const auto [v, gX, gb] = tad::grad(tad::sum(C * tad::clip_gradient(X * b, -0.1, 0.1)), X, b);
  const auto z = tad::let<"z">(tad::clip_gradient(X * b, -0.5, 0.5));
  const auto [lv, lX, lb] = tad::grad(tad::sum(C * z + C * z), X, b);
  const auto lin = tad::custom_gradient([](auto x, auto y) { return x + y; },
                                        [](auto dy, auto, auto, auto) { return tad::adjoints{3 * dy, 5 * dy}; });
  const auto [cv, cX, cb] = tad::grad(tad::sum(C * lin(X, b)), X, b);
  std::vector<double> wb(3), wlb(3), wcb(3);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      const double k = clip(Cm(r, c), -0.1, 0.1), kk = clip(2 * Cm(r, c), -0.5, 0.5);
      BOOST_TEST(gX(r, c) == k * bs[c], boost::test_tools::tolerance(1e-15));
      BOOST_TEST(lX(r, c) == kk * bs[c], boost::test_tools::tolerance(1e-15));
      BOOST_TEST(cX(r, c) == 3 * Cm(r, c), boost::test_tools::tolerance(1e-15));
      wb[c] += k * Xm(r, c);
      wlb[c] += kk * Xm(r, c);
      wcb[c] += 5 * Cm(r, c);
    }
  for (std::size_t c = 0; c < 3; ++c) {
    BOOST_TEST(gb[c] == wb[c], boost::test_tools::tolerance(1e-14));
    BOOST_TEST(lb[c] == wlb[c], boost::test_tools::tolerance(1e-14));
    BOOST_TEST(cb[c] == wcb[c], boost::test_tools::tolerance(1e-14));
  }
  BOOST_TEST(tad::to_string(X + b) == "X + b");
  BOOST_TEST(tad::gradcheck(tad::sum(tad::sin(X * b) + tad::square(b - X)), X, b).ok);
  // The forward values: modifiers and lets change only the gradient.
  double sum_cxb = 0, sum_cx_b = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      sum_cxb += Cm(r, c) * Xm(r, c) * bs[c];
      sum_cx_b += Cm(r, c) * (Xm(r, c) + bs[c]);
    }
  BOOST_TEST(v == sum_cxb, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(lv == 2 * sum_cxb, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(cv == sum_cx_b, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(shapes_that_do_not_broadcast_are_an_error_before_writing) {
  std::vector<double> xs(12, 1.0), b5(5, 2.0), b3(3, 2.0);
  auto X = tad::var<"X">(xs.data(), 3, 4);
  auto b = tad::var<"b">(b5);
  std::vector<double> gx(12, 7.0), gb(5, 7.0);
  tad_test::expect_shape_error([&] { (void)tad::grad_into(tad::sum(X + b), tad::wrt(X, gx), tad::wrt(b, gb)); },
                               "tad: shapes do not broadcast: variable 'X' has shape 3 x 4, variable 'b' has length 5 "
                               "(a vector combined with a matrix is one row, repeated for every row: its length must "
                               "be the number of columns)",
                               4, 5);
  BOOST_TEST(std::all_of(gx.begin(), gx.end(), [](double t) { return t == 7.0; }));
  BOOST_TEST(std::all_of(gb.begin(), gb.end(), [](double t) { return t == 7.0; }));
  // The vector first; a vector as long as the rows (a column is written as_column(c)).
  auto c = tad::var<"c">(b3);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(c * X)); },
                               "tad: shapes do not broadcast: variable 'c' has length 3, variable 'X' has shape 3 x 4 "
                               "(a vector combined with a matrix is one row, repeated for every row: its length must "
                               "be the number of columns; a vector as long as the rows is a column as "
                               "tad::as_column(v))",
                               3, 4);
  // One variable, one length: b as a row of X and in a penalty of its own.
  std::vector<double> w4(4, 1.0);
  auto w = tad::var<"w">(w4);
  BOOST_TEST(tad::value(tad::sum(X * w) + tad::squared_norm(w)) == 12 + 4);
  auto w5 = tad::var<"w">(b5);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(X * w5) + tad::squared_norm(w5)), tad::shape_error);
  // A vector of the wrong length combined with the row vector, not with the matrix: the error
  // names the two vectors it is combined with elementwise (w, 4 long, fixed by X's columns).
  auto c5 = tad::var<"c">(b5);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X + w) + tad::sum(w * c5)); },
                               "tad: arrays combined elementwise differ in length: variable 'w' has length 4, "
                               "variable 'c' has length 5",
                               4, 5);
  // Vectors only, two reductions over one length (one loop): b is combined with x, not with a.
  std::vector<double> a4(4, 1.0);
  auto a = tad::var<"a">(a4);
  auto x = tad::var<"x">(w4);
  auto b2 = tad::var<"b">(b5);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(a * x) + tad::sum(x * b2)); },
                               "tad: arrays combined elementwise differ in length: variable 'x' has length 4, "
                               "variable 'b' has length 5",
                               4, 5);
}

// NumPy broadcasts an extent 1 at run time; tad does not (decisions.md 24): the error says so
// and how to write it, and the form it names gives NumPy's result.
BOOST_AUTO_TEST_CASE(a_length_one_axis_is_an_error_that_says_how_to_write_it) {
  std::vector<double> xs{1, 2, 3}, a1{2.0}, ms(12, 1.0), r4(4, 1.0), c3(3, 1.0);
  auto x = tad::var<"x">(xs);
  auto a = tad::var<"a">(a1);
  std::vector<double> gx(3, 7.0), ga(1, 7.0);
  tad_test::expect_shape_error([&] { (void)tad::grad_into(tad::sum(x * a), tad::wrt(x, gx), tad::wrt(a, ga)); },
                               "tad: arrays combined elementwise differ in length: variable 'x' has length 3, "
                               "variable 'a' has length 1 (an array of length 1 is not broadcast: pass its element "
                               "as a scalar, tad::var<\"a\">(a[0]) or tad::constant(a[0]))",
                               3, 1);
  BOOST_TEST(gx == std::vector<double>(3, 7.0));
  BOOST_TEST(ga == std::vector<double>(1, 7.0));
  // The form the message names: sum(x * a) = 2 * (1 + 2 + 3), d/da = 1 + 2 + 3, d/dx = a.
  auto as = tad::var<"a">(a1[0]);
  const auto [v, dx, da] = tad::grad(tad::sum(x * as), x, as);
  BOOST_TEST(v == 12.0);
  BOOST_TEST(da == 6.0);
  BOOST_TEST(dx == std::vector<double>(3, 2.0));
  // The constant first: it is named by its position.
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(tad::constant(a1) + x)); },
                               "tad: arrays combined elementwise differ in length: a constant array (array 1 from "
                               "the left) has length 1, variable 'x' has length 3 (an array of length 1 is not "
                               "broadcast: pass its element as a scalar, tad::var<\"a\">(a[0]) or tad::constant(a[0]))",
                               1, 3);
  // A vector of length 1 against a matrix's 4 columns.
  auto X = tad::var<"X">(ms.data(), 3, 4);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X + a)); },
                               "tad: shapes do not broadcast: variable 'X' has shape 3 x 4, variable 'a' has length 1 "
                               "(a vector combined with a matrix is one row, repeated for every row: its length must "
                               "be the number of columns; a vector of length 1 is not broadcast: pass its element as "
                               "a scalar, tad::var<\"a\">(a[0]) or tad::constant(a[0]))",
                               4, 1);
  // Matrices with one row or one column: a row is a vector, a column is as_column(v).
  auto R = tad::var<"R">(r4.data(), 1, 4);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X * R)); },
                               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, "
                               "variable 'R' has shape 1 x 4 (an axis of length 1 is not broadcast: view a 1 x n matrix "
                               "m as the vector of its elements, a row, tad::var<\"m\">(std::span(m)); an n x 1 one "
                               "as that vector's column, tad::as_column(tad::var<\"m\">(std::span(m))))",
                               3, 1);
  auto C = tad::var<"C">(c3.data(), 3, 1);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X - C)); },
                               "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 4, "
                               "variable 'C' has shape 3 x 1 (an axis of length 1 is not broadcast: view a 1 x n matrix "
                               "m as the vector of its elements, a row, tad::var<\"m\">(std::span(m)); an n x 1 one "
                               "as that vector's column, tad::as_column(tad::var<\"m\">(std::span(m))))",
                               4, 1);
  // The forms it names give NumPy's broadcast of the 1 x 4 and 3 x 1 matrices, gradients
  // included: L = sum(Y * r) + sum(Y * as_column(c)) with r the 1 x 4 matrix's elements and c
  // the 3 x 1 one's: dL/dr_j = sum_i Y_ij (the 1 x 4 gradient NumPy's broadcast gives),
  // dL/dc_i = sum_j Y_ij, dL/dY_ij = r_j + c_i. The parameters update the matrices in place.
  const tad::matrix<double> Ym{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
  tad::matrix<double> row_m{{0.5, -1, 2, 0.25}}, col_m{{1}, {-2}, {3}};
  auto Y = tad::var<"Y">(Ym);
  auto r = tad::var<"r">(std::span(row_m));
  auto c = tad::var<"c">(std::span(col_m));
  const auto [bv, gY, gr, gc] = tad::grad(tad::sum(Y * r) + tad::sum(Y * tad::as_column(c)), Y, r, c);
  double want = 0;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      want += Ym(i, j) * (row_m(0, j) + col_m(i, 0));
      BOOST_TEST(gY(i, j) == row_m(0, j) + col_m(i, 0));
    }
  BOOST_TEST(bv == want);
  BOOST_TEST(gr == (std::vector<double>{15, 18, 21, 24}));
  BOOST_TEST(gc == (std::vector<double>{10, 26, 42}));
  tad::parameter_set broadcast_params(r, c);  // views of row_m and col_m
  BOOST_TEST(broadcast_params.total() == 7u);
  // Lengths that differ with neither being 1 keep the plain message.
  std::vector<double> b2{1, 2};
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(x * tad::var<"b">(b2))); },
                               "tad: arrays combined elementwise differ in length: variable 'x' has length 3, "
                               "variable 'b' has length 2",
                               3, 2);
}

BOOST_AUTO_TEST_CASE(grad_into_overwrites_the_buffers_every_call) {
  // The vector's gradient is summed in place over the rows: the first loop that writes it zeroes
  // it first. Buffers start at 7 (not zero, as grad's are) and the call repeats on them; the row
  // nest writes b first in `loss`, b's own nest in `reversed`. d/dX = c s b (per row),
  // d/db_j = sum_r c_rj s x_rj + 2 lambda b_j, with s = 1 / (rows cols) (the mean).
  const std::size_t rows = 5, cols = 11;
  buffer<double> xs(rows * cols, 1), bs(cols, 2), cs(rows * cols, 3);
  tad_test::fill_uniform(xs, -2, 2, 7);
  tad_test::fill_uniform(bs, -1, 1, 8);
  tad_test::fill_uniform(cs, -1, 1, 9);
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto b = tad::var<"b">(bs.cspan());
  auto C = tad::constant(cs.data(), rows, cols);
  const double lambda = 0.3, s = 1.0 / double(rows * cols);
  const auto loss = tad::mean(C * X * b) + lambda * tad::squared_norm(b);
  const auto reversed = lambda * tad::squared_norm(b) + tad::mean(C * X * b);
  std::vector<double> wX(rows * cols), wb(cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) {
      wX[r * cols + j] = cs[r * cols + j] * s * bs[j];
      wb[j] += cs[r * cols + j] * s * xs[r * cols + j];
    }
  for (std::size_t j = 0; j < cols; ++j) wb[j] += 2 * lambda * bs[j];
  tad::matrix<double> gX(rows, cols, 7.0);
  std::vector<double> gb(cols, 7.0);
  for (int call = 0; call < 2; ++call) {
    for (const bool rev : {false, true}) {
      if (rev) (void)tad::grad_into(reversed, tad::wrt(X, gX), tad::wrt(b, gb));
      else (void)tad::grad_into(loss, tad::wrt(X, gX), tad::wrt(b, gb));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < rows * cols; ++i) bad += !tad_test::close(gX.data()[i], wX[i], 1e-14);
      for (std::size_t j = 0; j < cols; ++j) bad += !tad_test::close(gb[j], wb[j], 1e-14);
      BOOST_TEST(bad == 0u, "call " << call << (rev ? " (b's nest first)" : " (row nest first)"));
    }
  }
}

BOOST_AUTO_TEST_CASE(one_vector_in_two_row_nests_and_at_depth_one) {
  // b is a row of X (2 x 4) and of Y (3 x 4), whose rows differ: two row nests. d/db_j =
  // 2 (rows of X) + sum_r Y_rj; d/dY = b.
  const tad::matrix<double> Xm{{1, 2, 3, 4}, {5, 6, 7, 8}}, Ym{{0.5, -1, 2, 0}, {1, 1, -2, 3}, {0.25, 4, 1, -1}};
  const std::vector<double> bs{0.5, -1, 2, -0.25};
  auto X = tad::var<"X">(Xm);
  auto Y = tad::var<"Y">(Ym);
  auto b = tad::var<"b">(bs);
  std::vector<double> gb(4, 7.0);
  tad::matrix<double> gX(2, 4, 7.0), gY(3, 4, 7.0);
  (void)tad::grad_into(tad::sum(X + b) + tad::sum(Y * b), tad::wrt(X, gX), tad::wrt(Y, gY), tad::wrt(b, gb));
  for (std::size_t j = 0; j < 4; ++j) {
    BOOST_TEST(gb[j] == 2 + Ym(0, j) + Ym(1, j) + Ym(2, j));
    for (std::size_t r = 0; r < 3; ++r) BOOST_TEST(gY(r, j) == bs[j]);
    for (std::size_t r = 0; r < 2; ++r) BOOST_TEST(gX(r, j) == 1.0);
  }
  // Their columns must agree although their rows need not: named with both shapes.
  const tad::matrix<double> Z(3, 5, 1.0);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X + b) + tad::sum(tad::constant(Z) * b)); },
                               "tad: shapes do not broadcast: variable 'X' has shape 2 x 4, a constant matrix (array 3 "
                               "from the left) has shape 3 x 5 (a vector combined with both is one row of each: their "
                               "numbers of columns must agree)",
                               4, 5);
  // b first written by a backward pass at depth 1: sum(square(c * S)) with S = sum(X + b) (the
  // inner sum runs in X's row nest, under the outer sum over c's nest). With
  // q = sum(c^2): L = S^2 q, d/db_j = 2 S q rows, d/dX = 2 S q.
  const std::vector<double> cv{0.5, -2, 1};
  const auto c = tad::constant(cv);
  const double S = 36 + 2 * 1.25, q = 0.25 + 4 + 1;
  std::fill(gb.begin(), gb.end(), 7.0);
  const double v = tad::grad_into(tad::sum(tad::square(c * tad::sum(X + b))), tad::wrt(X, gX), tad::wrt(b, gb));
  BOOST_TEST(v == S * S * q, boost::test_tools::tolerance(1e-14));
  for (std::size_t j = 0; j < 4; ++j) BOOST_TEST(gb[j] == 2 * S * q * 2, boost::test_tools::tolerance(1e-14));
  for (double g : gX) BOOST_TEST(g == 2 * S * q, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(passes_and_allocations) {
  // A row nest is one loop over the matrix: the loss alone is one fused pass; a penalty on b adds
  // b's own loop.
  tad::matrix<double> Xm(16, 17, 0.5), gX(16, 17);
  std::vector<double> bs(17, 0.25), gb(17);
  auto X = tad::var<"X">(Xm);
  auto b = tad::var<"b">(bs);
  const auto loss = tad::mean(tad::square(X - b));
  const auto penalized = loss + 0.5 * tad::squared_norm(b);
  static_assert(tad::passes_v<decltype(loss), decltype(X), decltype(b)> == 1);
  static_assert(tad::passes_v<decltype(penalized), decltype(X), decltype(b)> == 2);
  static_assert(tad::rank_v<decltype(X + b)> == 2);
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(penalized, tad::wrt(X, gX), tad::wrt(b, gb));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(v == 0.0625 + 0.5 * 17 * 0.0625, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(gX(15, 16) == 2 * 0.25 / (16.0 * 17.0), boost::test_tools::tolerance(1e-14));
  BOOST_TEST(gb[16] == -2 * 0.25 * 16 / (16.0 * 17.0) + 0.25, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_SUITE_END()
