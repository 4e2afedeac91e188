// Strided matrices (issue 15; doc/shapes.md "Strided rows"): `var<"X">(p, rows, cols, ld)` and
// `constant(p, rows, cols, ld)` view rows `ld` elements apart, a block of a larger row-major
// matrix. Shown here: values and gradients at every shape around the SIMD widths (float,
// double, unaligned, ld = cols + 3) against closed forms, with a dense matrix and a row vector
// in the same expression; the gradient dense `rows x cols`; results of matrix shape; the padding
// between rows never read or written; ld < cols rejected; grad_into's overlap check over the
// view's whole span; gradcheck; pass counts. Then single columns of a row-major matrix
// (`column_of`, a strided vector) and rows (`row_of`): as vector variables and constants, as a
// row and as a column of a matrix, their gradients dense, their errors. Column-major views
// (`col_major`): values and gradients at every shape against closed forms, in rows, columns and
// both axis reductions, their errors.
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::reals;
using namespace tad_test::matrix_check;

BOOST_AUTO_TEST_SUITE(strided)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_strided_view_at_every_shape, T, reals) {
  // L = sum(K * exp(X) * Y) + sum(X * b), X a strided view (ld = cols + 3) whose padding holds
  // NaN (read it and the sums are NaN): dL/dX = K exp(X) Y + b, dL/dY = K exp(X),
  // dL/db_j = sum_r x_rj.
  for (const shape& s : shapes) {
    const std::size_t ld = s.cols + 3, n = s.rows * s.cols;
    buffer<T> big(s.rows * ld, 1), ys = make<T>(n, {-1, 1}, 2, 3), ks = make<T>(n, {-1, 1}, 3, 2),
        bs = make<T>(s.cols, {-1, 1}, 4, 5);
    tad_test::fill_uniform(big, -1, 1, 9);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = s.cols; j < ld; ++j) big[r * ld + j] = std::numeric_limits<T>::quiet_NaN();
    auto X = tad::var<"X">(big.data(), s.rows, s.cols, ld);
    auto Y = tad::var<"Y">(ys.data(), s.rows, s.cols);
    auto K = tad::constant(ks.data(), s.rows, s.cols);
    auto b = tad::var<"b">(bs.cspan());
    const auto [v, gX, gY, gb] = tad::grad(tad::sum(K * tad::exp(X) * Y) + tad::sum(X * b), X, Y, b);
    double want = 0, scale = 0;
    std::vector<double> wX(n), wY(n), wb(s.cols);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) {
        const std::size_t i = r * s.cols + j;
        const double x = double(big[r * ld + j]), y = double(ys[i]), k = double(ks[i]), e = std::exp(x);
        want += k * e * y + x * double(bs[j]);
        scale += std::abs(k * e * y) + std::abs(x * double(bs[j]));
        wX[i] = k * e * y + double(bs[j]);
        wY[i] = k * e;
        wb[j] += x;
      }
    BOOST_TEST(near(double(v), want, std::is_same_v<T, float> ? 1e-4 : 1e-12, scale),
               "value at " << s.rows << " x " << s.cols << ": tad " << v << ", expected " << want);
    expect_matrix(gX, s, wX, "strided", "X");
    expect_matrix(gY, s, wY, "strided", "Y");
    std::size_t bad = 0;
    const double tol = tad_test::grad_tol<T>() * std::max(1.0, std::sqrt(double(s.rows)));
    for (std::size_t j = 0; j < s.cols; ++j) bad += !tad_test::close(double(gb[j]), wb[j], tol);
    BOOST_TEST(bad == 0u, "d/db at " << s.rows << " x " << s.cols);
  }
}

BOOST_AUTO_TEST_CASE(a_block_of_a_larger_matrix) {
  // The 2 x 3 block at (1, 1) of a 4 x 5 matrix: value, evaluate and vjp have the block's
  // shape; grad_into writes a dense 2 x 3 gradient and nothing of the big matrix changes.
  tad::matrix<double> big(4, 5);
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = double(i);
  const double* p = big.data() + 1 * 5 + 1;
  auto B = tad::var<"B">(p, 2, 3, 5);
  auto C = tad::constant(p, 2, 3, 5);
  const tad::matrix<double> v = tad::value(B * 2.0 + C);
  BOOST_TEST(v.rows() == 2u);
  BOOST_TEST(v.cols() == 3u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(v(r, c) == 3 * big(r + 1, c + 1));
  tad::matrix<double> out(2, 3);
  tad::evaluate(tad::square(B), out);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(out(r, c) == big(r + 1, c + 1) * big(r + 1, c + 1));
  tad::matrix<double> g(2, 3, 7.0);
  const double s = tad::grad_into(tad::sum(tad::square(B)), tad::wrt(B, g));
  double want = 0;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      want += big(r + 1, c + 1) * big(r + 1, c + 1);
      BOOST_TEST(g(r, c) == 2 * big(r + 1, c + 1));
    }
  BOOST_TEST(s == want);
  for (std::size_t i = 0; i < big.size(); ++i) BOOST_TEST(big.data()[i] == double(i));
  BOOST_TEST(tad::to_string(B * C) == "B * constant[2x3]");
  BOOST_TEST(tad::gradcheck(tad::sum(tad::sin(B) * C), B).ok);
  // A strided matrix alone is a row nest; the schedule is a dense matrix's: one fused pass.
  const auto loss = tad::mean(tad::square(B - C));
  static_assert(tad::passes_v<decltype(loss), decltype(B)> == 1);
  static_assert(tad::rank_v<decltype(B)> == 2);
}

BOOST_AUTO_TEST_CASE(bad_strides_and_overlaps_are_errors) {
  std::vector<double> xs(20, 1.0);
  tad_test::expect_message<std::invalid_argument>(
      [&] { (void)tad::var<"X">(xs.data(), 4, 5, 4); },
      "tad::var<name>(p, rows, cols, ld): ld (4) is less than cols (5): rows would overlap");
  tad_test::expect_message<std::invalid_argument>(
      [&] { (void)tad::constant(xs.data(), 2, 3, 2); },
      "tad::constant(p, rows, cols, ld): ld (2) is less than cols (3): rows would overlap");
  BOOST_CHECK_THROW((void)tad::var<"X">(xs.data(), 3, 2, std::numeric_limits<std::size_t>::max() / 2), std::length_error);
  // One row: ld does not matter.
  BOOST_TEST(tad::value(tad::sum(tad::var<"X">(xs.data(), 1, 5, 0))) == 5.0);
  // A gradient buffer inside the view's span (between its rows) overlaps it.
  auto X = tad::var<"X">(xs.data(), 2, 3, 10);
  std::vector<double> g(6);
  BOOST_CHECK_NO_THROW((void)tad::grad_into(tad::sum(X), tad::wrt(X, g)));
  std::span<double> inside(xs.data() + 4, 6);
  BOOST_CHECK_THROW((void)tad::grad_into(tad::sum(X), tad::wrt(X, inside)), std::invalid_argument);
  // One name, two strides: two variables.
  auto X2 = tad::var<"X">(xs.data(), 2, 3, 5);
  BOOST_CHECK_THROW((void)(X + X2), std::invalid_argument);
  // grad with a variable of another stride than in the expression: not the expression's X.
  BOOST_CHECK_THROW((void)tad::grad(tad::sum(X), X2), std::invalid_argument);
}

// ---- column-major matrices (doc/shapes.md "Column-major matrices") -------------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(a_column_major_view_at_every_shape, T, reals) {
  // X a column-major view (element (r, j) at data[j * ld + r], ld = rows + 2, the padding NaN,
  // the storage starting one element past an aligned address) in a row nest with a row-major
  // matrix Y, a row vector b and a column q, and in a reduction down the columns:
  //   L = sum(exp(X) * Y + X * b + as_column(q) * X) + sum(square(sum(X, axis<0>)))
  //   dL/dX_rj = exp(x_rj) y_rj + b_j + q_r + 2 s_j (s_j = sum_r x_rj),
  //   dL/dY = exp(X), dL/db_j = s_j, dL/dq_r = sum_j x_rj.
  // The gradient of X is dense row-major rows x cols.
  for (const shape& s : shapes) {
    const std::size_t ld = s.rows + 2, n = s.rows * s.cols;
    buffer<T> big(std::max<std::size_t>(s.cols * ld, 1), 1), ys = make<T>(n, {-1, 1}, 2, 3),
        bs = make<T>(s.cols, {-1, 1}, 4, 5), qs = make<T>(s.rows, {-1, 1}, 6, 1);
    tad_test::fill_uniform(big, -1, 1, 11);
    for (std::size_t j = 0; j < s.cols; ++j)
      for (std::size_t r = s.rows; r < ld; ++r) big[j * ld + r] = std::numeric_limits<T>::quiet_NaN();
    auto X = tad::var<"X">(tad::col_major(big.data(), s.rows, s.cols, ld));
    auto Y = tad::var<"Y">(ys.data(), s.rows, s.cols);
    auto b = tad::var<"b">(bs.cspan());
    auto q = tad::var<"q">(qs.cspan());
    const auto loss = tad::sum(tad::exp(X) * Y + X * b + tad::as_column(q) * X) +
                      tad::sum(tad::square(tad::sum(X, tad::axis<0>)));
    const auto [v, gX, gY, gb, gq] = tad::grad(loss, X, Y, b, q);
    BOOST_TEST_REQUIRE(gX.rows() == s.rows);
    BOOST_TEST_REQUIRE(gX.cols() == s.cols);
    std::vector<double> col(s.cols), row(s.rows), wX(n), wY(n);
    double want = 0, scale = 0;
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) col[j] += double(big[j * ld + r]), row[r] += double(big[j * ld + r]);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) {
        const std::size_t i = r * s.cols + j;
        const double x = double(big[j * ld + r]), e = std::exp(x), y = double(ys[i]);
        const double term = e * y + x * double(bs[j]) + double(qs[r]) * x;
        want += term;
        scale += std::abs(term);
        wX[i] = e * y + double(bs[j]) + double(qs[r]) + 2 * col[j];
        wY[i] = e;
      }
    for (double c : col) want += c * c, scale += c * c;
    BOOST_TEST(near(double(v), want, std::is_same_v<T, float> ? 1e-4 : 1e-12, scale),
               "value at " << s.rows << " x " << s.cols << ": tad " << v << ", expected " << want);
    expect_matrix(gX, s, wX, "column-major", "X");
    expect_matrix(gY, s, wY, "column-major", "Y");
    std::size_t bad = 0;
    const double tol = tad_test::grad_tol<T>() * std::max(1.0, std::sqrt(double(std::max(s.rows, s.cols))));
    for (std::size_t j = 0; j < s.cols; ++j) bad += !tad_test::close(double(gb[j]), col[j], tol);
    for (std::size_t r = 0; r < s.rows; ++r) bad += !tad_test::close(double(gq[r]), row[r], tol);
    BOOST_TEST(bad == 0u, "d/db and d/dq at " << s.rows << " x " << s.cols);
  }
}

BOOST_AUTO_TEST_CASE(column_major_values_constants_reductions_and_errors) {
  // The 2 x 3 matrix [[1, 2, 3], [4, 5, 6]] stored by columns: 1 4 2 5 3 6.
  const std::vector<double> cm{1, 4, 2, 5, 3, 6};
  auto A = tad::var<"A">(tad::col_major(cm.data(), 2, 3));
  auto C = tad::constant(tad::col_major(cm.data(), 2, 3));
  // Results are row-major, of the view's shape.
  const tad::matrix<double> v = tad::value(A * 10.0 + C);
  BOOST_TEST_REQUIRE(v.rows() == 2u);
  BOOST_TEST_REQUIRE(v.cols() == 3u);
  const tad::matrix<double> want{{11, 22, 33}, {44, 55, 66}};
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(v(r, c) == want(r, c));
  // Row sums (along axis 1) and row maxima: rows are [1, 2, 3] and [4, 5, 6].
  const std::vector<double> rs = tad::value(tad::sum(C, tad::axis<1>));
  BOOST_TEST(rs == (std::vector<double>{6, 15}));
  // d/dA of sum(max(A, axis<1>) * w) with w = [2, -1]: the row maxima's positions get w.
  const std::vector<double> w{2, -1};
  const auto [s, g] = tad::grad(tad::sum(tad::max(A, tad::axis<1>) * tad::constant(w)), A);
  BOOST_TEST(s == 2 * 3 - 6);
  const tad::matrix<double> gw{{0, 0, 2}, {0, 0, -1}};
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(g(r, c) == gw(r, c));
  // 1 + 4 + ... + 36.
  BOOST_TEST(tad::value(tad::sum(tad::square(A))) == 91.0);
  BOOST_TEST(tad::to_string(A * C) == "A * constant[2x3]");
  BOOST_TEST(static_cast<bool>(tad::gradcheck(tad::sum(tad::sin(A) * C) + tad::sum(tad::logsumexp(A, tad::axis<1>)), A)));
  static_assert(tad::rank_v<decltype(A)> == 2);
  static_assert(tad::passes_v<decltype(tad::mean(tad::square(A - C))), decltype(A)> == 1);
  // Errors: ld < rows; the extent overflowing; a gradient buffer inside the view's span.
  tad_test::expect_message<std::invalid_argument>(
      [&] { (void)tad::col_major(cm.data(), 3, 2, 2); },
      "tad::col_major(p, rows, cols, ld): ld (2) is less than rows (3): columns would overlap");
  BOOST_CHECK_THROW((void)tad::col_major(cm.data(), 2, 3, std::numeric_limits<std::size_t>::max() / 2),
                    std::length_error);
  BOOST_TEST(tad::value(tad::sum(tad::constant(tad::col_major(cm.data(), 6, 1, 0)))) == 21.0);  // one column
  std::vector<double> store(20, 1.0);
  auto B = tad::var<"B">(tad::col_major(store.data(), 2, 3, 8));
  std::vector<double> gb(6);
  BOOST_CHECK_NO_THROW((void)tad::grad_into(tad::sum(B), tad::wrt(B, gb)));
  BOOST_TEST(gb == std::vector<double>(6, 1.0));
  std::span<double> inside(store.data() + 3, 6);
  BOOST_CHECK_THROW((void)tad::grad_into(tad::sum(B), tad::wrt(B, inside)), std::invalid_argument);
  // One name, two layouts or two lds: two variables.
  auto B2 = tad::var<"B">(tad::col_major(store.data(), 2, 3, 9));
  BOOST_CHECK_THROW((void)(B + B2), std::invalid_argument);
  BOOST_CHECK_THROW((void)tad::grad(tad::sum(B), B2), std::invalid_argument);
  // Shapes as for any matrix: a 2 x 3 against a 3 x 2.
  auto D = tad::constant(tad::col_major(cm.data(), 3, 2));
  BOOST_CHECK_THROW((void)tad::value(tad::sum(A * D)), tad::shape_error);
}

// ---- single rows and columns (doc/shapes.md "Single rows and columns") ---------------------------

BOOST_AUTO_TEST_CASE_TEMPLATE(a_column_of_a_matrix_as_a_vector, T, reals) {
  // c = column k of an n x 3 row-major matrix (elements 3 apart), a variable; v a dense vector
  // variable. L = sum(v * tanh(c)) + sum(square(c)): dL/dc_i = v_i (1 - tanh^2 c_i) + 2 c_i,
  // dL/dv_i = tanh(c_i); the gradient of c is dense, n elements. Lengths around the SIMD widths.
  for (std::size_t n : tad_test::lengths) {
    for (std::size_t k = 0; k < 3; ++k) {
      tad::matrix<T> m(n, 3);
      for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = T(std::sin(0.7 * double(i) + 0.1));
      buffer<T> vs(n, 1);
      tad_test::fill_uniform(vs, -1, 1, static_cast<unsigned>(n + k));
      auto c = tad::var<"c">(tad::column_of(m, k));
      auto v = tad::var<"v">(vs.span());
      const auto [value, gc, gv] = tad::grad(tad::sum(v * tad::tanh(c)) + tad::sum(tad::square(c)), c, v);
      BOOST_TEST_REQUIRE(gc.size() == n);
      double want = 0;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double ci = double(m(i, k)), vi = double(vs[i]), t = std::tanh(ci);
        want += vi * t + ci * ci;
        if (!tad_test::close(double(gc[i]), vi * (1 - t * t) + 2 * ci, tad_test::grad_tol<T>())) ++bad;
        if (!tad_test::close(double(gv[i]), t, tad_test::grad_tol<T>())) ++bad;
      }
      BOOST_TEST(bad == 0u, "column " << k << " of " << n << " x 3: " << bad << " elements differ");
      BOOST_TEST(tad_test::close(double(value), want, tad_test::grad_tol<T>() * double(n + 1)));
    }
  }
}

BOOST_AUTO_TEST_CASE(columns_as_rows_columns_and_constants) {
  // A column of Y (4 x 3, so 4 elements 3 apart) is a row of X (2 x 4), broadcast across X's
  // rows; a column of Z (2 x 5) is a column of X (as_column); a constant column weighs a
  // vector. L = sum(X * r + as_column(q)) with r = column 1 of Y and q = column 4 of Z:
  // dL/dr_j = sum_i X_ij, dL/dq_i = 4 (a column's gradient sums the row), dL/dX_ij = r_j.
  tad::matrix<double> Xm{{1, 2, 3, 4}, {5, 6, 7, 8}};
  tad::matrix<double> Ym{{0, 1, 0}, {0, 2, 0}, {0, 3, 0}, {0, 4, 0}};
  tad::matrix<double> Zm{{0, 0, 0, 0, 10}, {0, 0, 0, 0, 20}};
  auto X = tad::var<"X">(Xm);
  auto r = tad::var<"r">(tad::column_of(Ym, 1));
  auto q = tad::var<"q">(tad::column_of(Zm, 4));
  const auto [v, gX, gr, gq] = tad::grad(tad::sum(X * r + tad::as_column(q)), X, r, q);
  BOOST_TEST(v == (1 * 1 + 2 * 2 + 3 * 3 + 4 * 4) + (5 * 1 + 6 * 2 + 7 * 3 + 8 * 4) + 4 * 10 + 4 * 20);
  BOOST_TEST(gr == (std::vector<double>{6, 8, 10, 12}));
  BOOST_TEST(gq == (std::vector<double>{4, 4}));
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j) BOOST_TEST(gX(i, j) == Ym(j, 1));
  // A constant column: value(column of Y times a vector) = the elementwise product.
  const std::vector<double> w{1, -1, 2, -2};
  const std::vector<double> p = tad::value(tad::constant(tad::column_of(Ym, 1)) * tad::constant(w));
  BOOST_TEST(p == (std::vector<double>{1, -2, 6, -8}));
  // A strided view by pointer: column 2 of a 3 x 4 block whose rows are 6 apart.
  const std::vector<double> big{0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0};
  BOOST_TEST(tad::value(tad::sum(tad::constant(tad::column_of(big.data(), 3, 4, 6, 2)))) == 6.0);
  // A row is a contiguous span: row_of.
  auto row = tad::var<"row">(tad::row_of(Ym, 2));
  BOOST_TEST(std::get<0>(tad::grad(tad::sum(row), row)) == 3.0);
  // gradcheck sees the column's elements through its stride.
  BOOST_TEST(static_cast<bool>(tad::gradcheck(tad::sum(tad::exp(r) * tad::sin(r)), r)));
}

BOOST_AUTO_TEST_CASE(column_errors) {
  tad::matrix<double> m(4, 3, 1.0);
  tad_test::expect_message<std::out_of_range>([&] { (void)tad::column_of(m, 3); },
                                              "tad::column_of(m, 3): m has 3 columns");
  tad_test::expect_message<std::out_of_range>([&] { (void)tad::row_of(m, 4); }, "tad::row_of(m, 4): m has 4 rows");
  // A gradient buffer over the column's span (between its elements) overlaps it.
  auto c = tad::var<"c">(tad::column_of(m, 1));
  std::vector<double> g(4);
  BOOST_CHECK_NO_THROW((void)tad::grad_into(tad::sum(c), tad::wrt(c, g)));
  BOOST_TEST(g == std::vector<double>(4, 1.0));
  std::span<double> inside(m.data() + 2, 4);
  BOOST_CHECK_THROW((void)tad::grad_into(tad::sum(c), tad::wrt(c, inside)), std::invalid_argument);
  // One name, two columns: two variables.
  auto c2 = tad::var<"c">(tad::column_of(m, 2));
  BOOST_CHECK_THROW((void)(c + c2), std::invalid_argument);
  BOOST_CHECK_THROW((void)tad::grad(tad::sum(c), c2), std::invalid_argument);
  // Lengths must agree with the vectors it is combined with.
  const std::vector<double> five(5, 1.0);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(c * tad::constant(five))), tad::shape_error);
}

BOOST_AUTO_TEST_SUITE_END()
