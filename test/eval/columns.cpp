// Columns (issue 15; doc/shapes.md "Columns"): `as_column(c)` is the vector c as an n x 1
// matrix, broadcast across the columns of the matrix it is combined with (NumPy's c[:, None]).
// Shown here: per-row loop invariants (exp(as_column(c)), a scalar variable times a column) at
// shapes with SIMD blocks and tails, a column with a row vector, a column in two matrices'
// nests, matrix-shaped results, multi-pass reductions, modifiers and lets, shape errors naming
// both shapes before anything is written, pass counts and no allocation.
// test/property/column_ops.cpp has the gradients at every shape around the SIMD widths (float,
// double, unaligned) with the column's own nest written first or second, and the binary ops in
// both orders (gcc stage only, for the CI budget). Expected values are closed forms or central
// differences.
#include "support/alloc_counter.hpp"
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::reals;
using namespace tad_test::matrix_check;

BOOST_AUTO_TEST_SUITE(columns)

BOOST_AUTO_TEST_CASE(value_evaluate_and_vjp_have_the_matrix_shape) {
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  const std::vector<double> ms{0.5, -1};
  auto X = tad::var<"X">(Xm);
  auto m = tad::var<"m">(ms);
  const auto e = X - tad::as_column(m);
  static_assert(tad::rank_v<decltype(e)> == 2);
  const tad::matrix<double> v = tad::value(e);
  BOOST_TEST(v.rows() == 2u);
  BOOST_TEST(v.cols() == 3u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(v(r, c) == Xm(r, c) - ms[r]);
  tad::matrix<double> out(2, 3);
  tad::evaluate(tad::as_column(m) * X, out);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(out(r, c) == ms[r] * Xm(r, c));
  // vjp with seed S: d/dX = S, d/dm_r = -sum_j S_rj.
  const tad::matrix<double> S{{1, -2, 0.5}, {3, 0.25, -1}};
  const auto [sv, gX, gm] = tad::vjp(e, S, X, m);
  double want = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      want += S(r, c) * (Xm(r, c) - ms[r]);
      BOOST_TEST(gX(r, c) == S(r, c));
    }
  BOOST_TEST(sv == want);
  BOOST_TEST(gm.size() == 2u);
  BOOST_TEST(gm[0] == -(1 - 2 + 0.5));
  BOOST_TEST(gm[1] == -(3 + 0.25 - 1));
  // An array expression of a column of a constant: exp per row, computed once per row.
  const std::vector<double> ks{0, 1};
  const tad::matrix<double> w = tad::value(X * tad::exp(tad::as_column(tad::constant(ks))));
  for (std::size_t c = 0; c < 3; ++c) {
    BOOST_TEST(w(0, c) == Xm(0, c));
    BOOST_TEST(w(1, c) == Xm(1, c) * std::exp(1.0));
  }
  BOOST_TEST(tad::to_string(e) == "X - column(m)");
  BOOST_TEST(tad::to_string(tad::as_column(tad::constant(ks)) * X) == "column(constant[2]) * X");
}

BOOST_AUTO_TEST_CASE(reductions_count_the_matrix_elements) {
  // mean(X + column(c)) divides by rows * cols; a scalar term leaves the sum as rows * cols * 2,
  // but a column does not leave it (it differs per row): sum(X * column(c)) = sum_r c_r sum_j x_rj.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  const std::vector<double> cs{0.5, -1};
  auto X = tad::var<"X">(Xm);
  auto c = tad::var<"c">(cs);
  const auto col = tad::as_column(c);
  const auto [m, gXm, gcm] = tad::grad(tad::mean(X + col), X, c);
  BOOST_TEST(m == (21 + 3 * (0.5 - 1)) / 6.0, boost::test_tools::tolerance(1e-15));
  for (double g : gXm) BOOST_TEST(g == 1 / 6.0, boost::test_tools::tolerance(1e-15));
  for (double g : gcm) BOOST_TEST(g == 3 / 6.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(tad::value(tad::sum((col + X) + 2.0)) == 21 + 3 * (0.5 - 1) + 6 * 2.0);
  BOOST_TEST(tad::value(tad::sum(2.0 - (col + X))) == 6 * 2.0 - (21 + 3 * (0.5 - 1)));
  const auto [s, gXs, gcs] = tad::grad(tad::sum(X * col), X, c);
  BOOST_TEST(s == 0.5 * 6 - 1 * 15);
  BOOST_TEST(gcs[0] == 6.0);
  BOOST_TEST(gcs[1] == 15.0);
  BOOST_TEST(gXs(0, 2) == 0.5);
  BOOST_TEST(gXs(1, 0) == -1.0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(per_row_invariants_with_scalar_variables, T, reals) {
  // sum(X * exp(s * column(c))) with a scalar variable s: exp(s c_r) is one loop invariant per
  // row; its adjoint sum_j x_rj goes to c_r (times s exp(s c_r)) and, summed over the rows, to s.
  const std::size_t rows = 9, cols = 17;
  buffer<T> xs(rows * cols, 1), cs(rows, 2);
  tad_test::fill_uniform(xs, -1, 1, 11);
  tad_test::fill_uniform(cs, -1, 1, 12);
  T sv = T(0.7);
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto c = tad::var<"c">(cs.cspan());
  auto s = tad::var<"s">(sv);
  const auto [v, gX, gc, gs] = tad::grad(tad::sum(X * tad::exp(s * tad::as_column(c))), X, c, s);
  double want = 0, ws = 0;
  std::size_t bad = 0;
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-13;
  for (std::size_t r = 0; r < rows; ++r) {
    double rowsum = 0;
    const double e = std::exp(double(sv) * double(cs[r]));
    for (std::size_t j = 0; j < cols; ++j) {
      rowsum += double(xs[r * cols + j]);
      bad += !tad_test::close(double(gX(r, j)), e, tol);
    }
    want += rowsum * e;
    ws += rowsum * e * double(cs[r]);
    bad += !tad_test::close(double(gc[r]), rowsum * e * double(sv), tol);
  }
  BOOST_TEST(bad == 0u);
  BOOST_TEST(tad_test::close(double(v), want, tol));
  BOOST_TEST(tad_test::close(double(gs), ws, tol));
}

BOOST_AUTO_TEST_CASE(a_row_and_a_column_of_one_matrix) {
  // X * b + column(c) (b: a row of length cols, c: a column of length rows), under sum(K * .):
  // d/dX = K b, d/db_j = sum_r K_rj x_rj, d/dc_r = sum_j K_rj.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}}, Km{{0.5, -1, 2}, {1, 0.25, -0.5}};
  const std::vector<double> bs{2, -1, 0.5}, cs{3, -4};
  auto X = tad::var<"X">(Xm);
  auto b = tad::var<"b">(bs);
  auto c = tad::var<"c">(cs);
  const auto [v, gX, gb, gc] = tad::grad(tad::sum(tad::constant(Km) * (X * b + tad::as_column(c))), X, b, c);
  double want = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t j = 0; j < 3; ++j) {
      want += Km(r, j) * (Xm(r, j) * bs[j] + cs[r]);
      BOOST_TEST(gX(r, j) == Km(r, j) * bs[j]);
    }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-15));
  for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(gb[j] == Km(0, j) * Xm(0, j) + Km(1, j) * Xm(1, j));
  BOOST_TEST(gc[0] == 0.5 - 1 + 2);
  BOOST_TEST(gc[1] == 1 + 0.25 - 0.5);
}

BOOST_AUTO_TEST_CASE(one_column_in_two_matrices_nests) {
  // c is a column of X (2 x 4) and of Y (2 x 3): two row nests with one row count. d/dc_r =
  // sum_j X_rj + 3 (Y's columns); d/dY = 1, d/dX = c_r. Buffers start at 7: the first nest
  // stores c's gradient, the second adds to it, on every call.
  const tad::matrix<double> Xm{{1, 2, 3, 4}, {5, 6, 7, 8}}, Ym{{0.5, -1, 2}, {1, 1, -2}};
  const std::vector<double> cs{0.5, -1};
  auto X = tad::var<"X">(Xm);
  auto Y = tad::var<"Y">(Ym);
  auto c = tad::var<"c">(cs);
  std::vector<double> gc(2, 7.0);
  tad::matrix<double> gX(2, 4, 7.0), gY(2, 3, 7.0);
  const auto loss = tad::sum(X * tad::as_column(c)) + tad::sum(Y + tad::as_column(c));
  for (int call = 0; call < 2; ++call) {
    (void)tad::grad_into(loss, tad::wrt(X, gX), tad::wrt(Y, gY), tad::wrt(c, gc));
    BOOST_TEST(gc[0] == 10 + 3.0);
    BOOST_TEST(gc[1] == 26 + 3.0);
    for (double g : gY) BOOST_TEST(g == 1.0);
    for (std::size_t j = 0; j < 4; ++j) {
      BOOST_TEST(gX(0, j) == 0.5);
      BOOST_TEST(gX(1, j) == -1.0);
    }
  }
  // Rows that differ: named with both shapes.
  const tad::matrix<double> Z(3, 3, 1.0);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X * tad::as_column(c)) + tad::sum(tad::constant(Z) + tad::as_column(c))); },
                               "tad: shapes do not broadcast: variable 'X' has shape 2 x 4, a constant matrix (array 3 "
                               "from the left) has shape 3 x 3 (a column's length is the number of rows of its "
                               "matrix, and every use of one variable has its length)",
                               2, 3);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(multipass_reductions_over_a_column, T, reals) {
  // logsumexp(X - column(c)) (max, sum, then the gradient: no scaled pass with columns):
  // d/dx_rj = softmax_rj, d/dc_r = -sum_j softmax_rj. The variance sum(square(Z - mean(Z)))
  // with Z = X * column(c): two backward depths in one row nest.
  const std::size_t rows = 7, cols = 19;
  buffer<T> xs(rows * cols, 1), cs(rows, 3);
  tad_test::fill_uniform(xs, -2, 2, 5);
  tad_test::fill_uniform(cs, -1, 1, 6);
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto c = tad::var<"c">(cs.cspan());
  const auto col = tad::as_column(c);
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  auto z_at = [&](std::size_t r, std::size_t j) { return double(xs[r * cols + j]) - double(cs[r]); };
  double mx = -INFINITY, z = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) mx = std::max(mx, z_at(r, j));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) z += std::exp(z_at(r, j) - mx);
  const auto lse_loss = tad::logsumexp(X - col);
  const auto [lse, gX, gc] = tad::grad(lse_loss, X, c);
  BOOST_TEST(tad_test::close(double(lse), mx + std::log(z), tol));
  std::size_t bad = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double wc = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const double p = std::exp(z_at(r, j) - mx) / z;
      bad += !tad_test::close(double(gX(r, j)), p, tol);
      wc -= p;
    }
    bad += !tad_test::close(double(gc[r]), wc, tol);
  }
  BOOST_TEST(bad == 0u);

  const auto Z = X * col;
  const auto [var, vX, vc] = tad::grad(tad::sum(tad::square(Z - tad::mean(Z))), X, c);
  double mean = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) mean += double(xs[r * cols + j]) * double(cs[r]);
  mean /= double(rows * cols);
  double want = 0;
  bad = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double wc = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const double x = double(xs[r * cols + j]), d = x * double(cs[r]) - mean;
      want += d * d;
      bad += !tad_test::close(double(vX(r, j)), 2 * d * double(cs[r]), tol * 10);
      wc += 2 * d * x;
    }
    bad += !tad_test::close(double(vc[r]), wc, tol * 10);
  }
  BOOST_TEST(tad_test::close(double(var), want, tol * 10));
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(modifiers_and_lets_on_a_column) {
  // clip_gradient(X * column(c)) under sum(K * .): the adjoint k is clipped, then split; the let
  // z is used twice, so its clip runs once on the summed adjoint 2k. A custom rule with a matrix
  // and a column input: (3 dy, 5 dy) by hand.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}}, Km{{0.1, -0.4, 0.3}, {-0.2, 0.35, 0.05}};
  const std::vector<double> cs{0.5, -1};
  auto X = tad::var<"X">(Xm);
  auto c = tad::var<"c">(cs);
  auto K = tad::constant(Km);
  const auto col = tad::as_column(c);
  const auto [v, gX, gc] = tad::grad(tad::sum(K * tad::clip_gradient(X * col, -0.1, 0.1)), X, c);
  const auto z = tad::let<"z">(tad::clip_gradient(X * col, -0.5, 0.5));
  const auto [lv, lX, lc] = tad::grad(tad::sum(K * z + K * z), X, c);
  const auto lin = tad::custom_gradient([](auto x, auto y) { return x + y; },
                                        [](auto dy, auto, auto, auto) { return tad::adjoints{3 * dy, 5 * dy}; });
  const auto [cv, cX, cc] = tad::grad(tad::sum(K * lin(X, col)), X, c);
  std::vector<double> wc(2), wlc(2), wcc(2);
  double sum_kxc = 0, sum_kx_c = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t j = 0; j < 3; ++j) {
      const double k = clip(Km(r, j), -0.1, 0.1), kk = clip(2 * Km(r, j), -0.5, 0.5);
      BOOST_TEST(gX(r, j) == k * cs[r], boost::test_tools::tolerance(1e-15));
      BOOST_TEST(lX(r, j) == kk * cs[r], boost::test_tools::tolerance(1e-15));
      BOOST_TEST(cX(r, j) == 3 * Km(r, j), boost::test_tools::tolerance(1e-15));
      wc[r] += k * Xm(r, j);
      wlc[r] += kk * Xm(r, j);
      wcc[r] += 5 * Km(r, j);
      sum_kxc += Km(r, j) * Xm(r, j) * cs[r];
      sum_kx_c += Km(r, j) * (Xm(r, j) + cs[r]);
    }
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(gc[r] == wc[r], boost::test_tools::tolerance(1e-14));
    BOOST_TEST(lc[r] == wlc[r], boost::test_tools::tolerance(1e-14));
    BOOST_TEST(cc[r] == wcc[r], boost::test_tools::tolerance(1e-14));
  }
  BOOST_TEST(v == sum_kxc, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(lv == 2 * sum_kxc, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(cv == sum_kx_c, boost::test_tools::tolerance(1e-14));
  // stop_gradient on the column: no gradient reaches c, and c's buffer is zeroed.
  const auto [sv, sX, sc] = tad::grad(tad::sum(X * tad::stop_gradient(col)), X, c);
  BOOST_TEST(sv == 0.5 * 6 - 15);
  BOOST_TEST(sc[0] == 0.0);
  BOOST_TEST(sc[1] == 0.0);
  BOOST_TEST(tad::gradcheck(tad::sum(tad::sin(X * col) + tad::square(col - X)), X, c).ok);
}

namespace {
constexpr auto times5 = [](auto dy, auto, auto) { return 5 * dy; };
constexpr auto identity5 = boost::hana::make_map(boost::hana::make_pair(boost::hana::type_c<tad::identity_op>, times5));
}  // namespace

BOOST_AUTO_TEST_CASE(overrides_strip_and_traits_see_a_column) {
  // override_gradients: identity's rule 5 dy on identity(column(c)) * X: d/dc_r = 5 sum_j x_rj.
  // strip_gradient_modifiers(stop_gradient(column(c)) * X): the plain product again.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 6}};
  const std::vector<double> cs{0.5, -1};
  auto X = tad::var<"X">(Xm);
  auto c = tad::var<"c">(cs);
  const auto col = tad::as_column(c);
  const auto [v, gX, gc] = tad::grad(tad::sum(tad::override_gradients(tad::identity(col) * X, identity5)), X, c);
  BOOST_TEST(v == 0.5 * 6 - 15);
  BOOST_TEST(gc[0] == 5 * 6.0);
  BOOST_TEST(gc[1] == 5 * 15.0);
  BOOST_TEST(gX(1, 2) == -1.0);
  const auto stopped = tad::sum(tad::stop_gradient(col) * X);
  static_assert(tad::gradient_is_zero_v<decltype(stopped), decltype(c)>);
  static_assert(tad::depends_on_v<decltype(stopped), decltype(c)>);
  static_assert(!tad::gradient_is_zero_v<decltype(stopped), decltype(X)>);
  const auto [sv, sX, sc] = tad::grad(tad::strip_gradient_modifiers(stopped), X, c);
  BOOST_TEST(sv == v);
  BOOST_TEST(sc[0] == 6.0);
  BOOST_TEST(sc[1] == 15.0);
  BOOST_TEST(tad::to_string(tad::strip_gradient_modifiers(stopped)) == "sum(column(c) * X)");
}

namespace {
constexpr auto squared_rule = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) { return dy * dy; });
}  // namespace

BOOST_AUTO_TEST_CASE(rules_not_linear_in_the_adjoint_run_once_per_node) {
  // X 5 x 37 of ones, c ones, s = 0.5. clip_gradient(s) is one scalar node: its rule runs once,
  // on the adjoint summed over every element, A = sum exp(x s c) x c = 185 e^0.5, clipped to 1,
  // whether a column is in the loop or not, and whether the clip sits beside the column or in
  // the column's invariant. A custom rule dy^2 on s: A^2. A rule on a column's node runs once per
  // row (the node is one value per row), on that row's summed adjoint: with
  // clip_gradient(exp(column(c)), -2, 2) under sum(K * .), d/dc_r = clip(sum_j K_rj, -2, 2) exp(c_r).
  const std::size_t rows = 5, cols = 37;
  tad::matrix<double> Xm(rows, cols, 1.0), Km(rows, cols);
  for (std::size_t i = 0; i < Km.size(); ++i) Km.data()[i] = (i % 3 == 0 ? -0.3 : 0.2) * double(1 + i % 5);
  const std::vector<double> ones(rows, 1.0), cs{0.5, -1, 0.25, 2, -0.3};
  double sv = 0.5;
  auto X = tad::var<"X">(Xm);
  auto c = tad::var<"c">(ones);
  auto s = tad::var<"s">(sv);
  const auto col = tad::as_column(c);
  const double A = double(rows * cols) * std::exp(0.5);
  const auto clipped = tad::clip_gradient(s, -1.0, 1.0);
  BOOST_TEST(std::get<1>(tad::grad(tad::sum(tad::exp(X * clipped)), s)) == 1.0);
  BOOST_TEST(std::get<1>(tad::grad(tad::sum(tad::exp(X * clipped)) + tad::sum(X * col), s)) == 1.0);
  BOOST_TEST(std::get<1>(tad::grad(tad::sum(tad::exp(X * (clipped * col))), s)) == 1.0);
  BOOST_TEST(std::get<1>(tad::grad(tad::sum(tad::exp(X * squared_rule(s))), s)) == A * A,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::get<1>(tad::grad(tad::sum(tad::exp(X * squared_rule(s))) + tad::sum(X * col), s)) == A * A,
             boost::test_tools::tolerance(1e-12));
  auto c2 = tad::var<"c">(cs);
  const auto [v, gc] = tad::grad(tad::sum(tad::constant(Km) * tad::clip_gradient(tad::exp(tad::as_column(c2)), -2.0, 2.0)), c2);
  double want = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double k = 0;
    for (std::size_t j = 0; j < cols; ++j) k += Km(r, j);
    want += k * std::exp(cs[r]);
    BOOST_TEST(gc[r] == std::clamp(k, -2.0, 2.0) * std::exp(cs[r]), boost::test_tools::tolerance(1e-12));
  }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(lets_and_constant_refs_with_columns) {
  // Two lets named z over columns of different constants are two definitions: an error, as for
  // any other leaves. value() of an array expression reads constant_ref's current value (also
  // without a reduction, with and without a column).
  const tad::matrix<double> Xm(2, 3, 1.0);
  const std::vector<double> a{1, 2}, b{10, 20};
  auto X = tad::var<"X">(Xm);
  auto za = tad::let<"z">(X * tad::as_column(tad::constant(a)));
  auto zb = tad::let<"z">(X * tad::as_column(tad::constant(b)));
  BOOST_CHECK_THROW((void)tad::sum(za + zb), std::invalid_argument);
  BOOST_TEST(tad::value(tad::sum(za + za)) == 2 * 3 * (1 + 2.0));
  double k = 5;
  const auto scaled = X * tad::constant_ref(k);
  BOOST_TEST(tad::value(scaled)(1, 2) == 5.0);
  BOOST_TEST(tad::value(scaled + tad::as_column(tad::constant(a)))(1, 2) == 7.0);
  k = 2;
  BOOST_TEST(tad::value(scaled)(0, 0) == 2.0);
}

BOOST_AUTO_TEST_CASE(columns_that_do_not_fit_are_an_error_before_writing) {
  std::vector<double> xs(12, 1.0), c4(4, 2.0);
  auto X = tad::var<"X">(xs.data(), 3, 4);
  auto c = tad::var<"c">(c4);
  std::vector<double> gx(12, 7.0), gc(4, 7.0);
  tad_test::expect_shape_error(
      [&] { (void)tad::grad_into(tad::sum(X * tad::as_column(c)), tad::wrt(X, gx), tad::wrt(c, gc)); },
      "tad: shapes do not broadcast: variable 'X' has shape 3 x 4, variable 'c' has length 4 as a column (a column is "
      "one value per row of the matrix it is combined with: its length must be the number of rows)",
      3, 4);
  BOOST_TEST(std::all_of(gx.begin(), gx.end(), [](double t) { return t == 7.0; }));
  BOOST_TEST(std::all_of(gc.begin(), gc.end(), [](double t) { return t == 7.0; }));
  // The column first, of a constant.
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(tad::as_column(tad::constant(c4)) + X)); },
                               "tad: shapes do not broadcast: a constant column (array 1 from the left) has length 4 "
                               "as a column, variable 'X' has shape 3 x 4 (a column is one value per row of the "
                               "matrix it is combined with: its length must be the number of rows)",
                               4, 3);
  // One variable, one length: c as a column of X (3 rows) and combined with w (5) elsewhere.
  std::vector<double> c3(3, 1.0), w5(5, 1.0);
  auto c_3 = tad::var<"c">(c3);
  auto w = tad::var<"w">(w5);
  tad_test::expect_shape_error([&] { (void)tad::value(tad::sum(X * tad::as_column(c_3)) + tad::sum(c_3 * w)); },
                               "tad: arrays combined elementwise differ in length: variable 'c' has length 3, "
                               "variable 'w' has length 5",
                               3, 5);
  // Matrices that meet elementwise keep their message when a column is elsewhere.
  std::vector<double> x15(15, 1.0), y20(20, 1.0), z6(6, 1.0), b5(5, 1.0), c2(2, 1.0);
  auto X3 = tad::var<"X">(x15.data(), 3, 5);
  auto Y4 = tad::var<"Y">(y20.data(), 4, 5);
  auto Z = tad::constant(z6.data(), 2, 3);
  auto b_5 = tad::var<"b">(b5);
  auto c_2 = tad::var<"c">(c2);
  tad_test::expect_shape_error(
      [&] { (void)tad::value(tad::sum(X3) + tad::sum(b_5 + Y4 + X3) + tad::sum(Z * tad::as_column(c_2))); },
      "tad: matrices combined elementwise differ in shape: variable 'X' has shape 3 x 5, variable 'Y' has shape 4 x 5",
      3, 4);
}

BOOST_AUTO_TEST_CASE(passes_and_allocations) {
  // A row nest with a column is one loop over the matrix: the loss alone is one fused pass; a
  // penalty on c adds c's own loop.
  tad::matrix<double> Xm(16, 17, 0.5), gX(16, 17);
  std::vector<double> cs(16, 0.25), gc(16);
  auto X = tad::var<"X">(Xm);
  auto c = tad::var<"c">(cs);
  const auto loss = tad::mean(tad::square(X - tad::as_column(c)));
  const auto penalized = loss + 0.5 * tad::squared_norm(c);
  static_assert(tad::passes_v<decltype(loss), decltype(X), decltype(c)> == 1);
  static_assert(tad::passes_v<decltype(penalized), decltype(X), decltype(c)> == 2);
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(penalized, tad::wrt(X, gX), tad::wrt(c, gc));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(v == 0.0625 + 0.5 * 16 * 0.0625, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(gX(15, 16) == 2 * 0.25 / (16.0 * 17.0), boost::test_tools::tolerance(1e-14));
  BOOST_TEST(gc[15] == -2 * 0.25 * 17 / (16.0 * 17.0) + 0.25, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_SUITE_END()
