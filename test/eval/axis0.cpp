// Reductions along axis 0 (issue 15; doc/shapes.md "Reductions along an axis"): `sum(X, axis<0>)`
// and the others are one value per column of the matrix expression X, a vector its parent
// combines with vectors of that length, or with matrices of as many columns (as a row, NumPy's
// rule: `X - mean(X, axis<0>)` centers each column). Shown here against closed forms computed in
// double, at shapes around the SIMD widths, float and double, unaligned and strided rows:
// centering, a row vector written by the parent and by the sweeps, scalar variables and loop
// invariants inside a point, ties per column, columns of no rows, special values, softmax down
// the columns, schedules (one fused pass; three with a logsumexp above), array results and vjp,
// shape errors before anything is written, lets inside a point, printing and no allocation. The
// derivatives of every reduction at nine shapes are test/property/axis_ops.cpp's.
#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

using tad_test::buffer;
using tad_test::reals;

namespace {

struct shape {
  std::size_t rows, cols;
};
const std::vector<shape> shapes{{0, 3}, {3, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {5, 40}, {257, 37}};

/// got[i] against want[i] for every i, relative with floor 1 at tolerance tol.
template <class G>
void expect_all_close(const G& got, const std::vector<double>& want, double tol, const char* what, shape s) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!tad_test::close(double(got[i]), want[i], tol) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << " at " << s.rows << " x " << s.cols << ": " << bad << " elements differ; first " << first
                             << ": tad " << (bad ? double(got[first]) : 0.0) << ", expected "
                             << (bad ? want[first] : 0.0));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(axis0)

BOOST_AUTO_TEST_CASE_TEMPLATE(centering_meets_the_matrix_as_a_row, T, reals) {
  // L = sum(G * square(X - mean(X, axis<0>))) with Y = X - m, m_j the mean of column j:
  // dL/dX_rj = 2 G_rj Y_rj - (2 / R) sum_r' G_r'j Y_r'j. X strided (ld = cols + 3, NaN padding).
  for (const shape& s : shapes) {
    const std::size_t ld = s.cols + 3;
    buffer<T> Xb(s.rows * ld + 1, 1);
    std::fill(Xb.begin(), Xb.end(), std::numeric_limits<T>::quiet_NaN());
    std::vector<T> Gs(s.rows * s.cols);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) {
        Xb[r * ld + j] = T(std::sin(0.37 * double(r * s.cols + j) + 0.5) * 2);
        Gs[r * s.cols + j] = T(0.5 + 0.25 * std::cos(double(r + 2 * j)));
      }
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols, ld);
    auto G = tad::constant(Gs.data(), s.rows, s.cols);
    const auto L = tad::sum(G * tad::square(X - tad::mean(X, tad::axis<0>)));
    static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
    const auto [v, gX] = tad::grad(L, X);
    double want = 0;
    std::vector<double> wX(s.rows * s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) {
      double m = 0, gy = 0;
      for (std::size_t r = 0; r < s.rows; ++r) m += double(Xb[r * ld + j]);
      m /= double(s.rows);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const double y = double(Xb[r * ld + j]) - m, g = double(Gs[r * s.cols + j]);
        want += g * y * y;
        gy += 2 * g * y;
      }
      for (std::size_t r = 0; r < s.rows; ++r)
        wX[r * s.cols + j] = 2 * double(Gs[r * s.cols + j]) * (double(Xb[r * ld + j]) - m) - gy / double(s.rows);
    }
    BOOST_TEST(tad_test::close(double(v), want, tad_test::grad_tol<T>() * double(s.rows + 1)));
    BOOST_TEST_REQUIRE(gX.rows() == s.rows);
    BOOST_TEST_REQUIRE(gX.cols() == s.cols);
    expect_all_close(gX.data(), wX, tad_test::grad_tol<T>(), "centering dX", s);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_row_vector_in_the_parent_and_in_the_sweeps, T, reals) {
  // L = sum(w * sum(X * w, axis<0>)) = sum_j w_j^2 colsum_j: w is written by the parent's code
  // (a store) and added to by the sweeps. dL/dw_j = 2 w_j colsum_j, dL/dX_rj = w_j^2.
  for (const shape& s : shapes) {
    buffer<T> Xb(s.rows * s.cols, 1);
    tad_test::fill_uniform(Xb, -1, 1, static_cast<unsigned>(s.rows + 3 * s.cols));
    std::vector<T> ws(s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) ws[j] = T(0.5 + 0.5 * std::sin(double(j)));
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto w = tad::var<"w">(ws);
    const auto L = tad::sum(w * tad::sum(X * w, tad::axis<0>));
    static_assert(tad::passes_v<decltype(L), decltype(X), decltype(w)> == 1);
    const auto [v, gX, gw] = tad::grad(L, X, w);
    double want = 0;
    std::vector<double> wX(s.rows * s.cols), ww(s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) {
      double col = 0;
      for (std::size_t r = 0; r < s.rows; ++r) col += double(Xb[r * s.cols + j]);
      const double wj = double(ws[j]);
      want += wj * wj * col;
      ww[j] = 2 * wj * col;
      for (std::size_t r = 0; r < s.rows; ++r) wX[r * s.cols + j] = wj * wj;
    }
    BOOST_TEST(tad_test::close(double(v), want, tad_test::grad_tol<T>() * double(s.rows + 1)));
    expect_all_close(gX.data(), wX, tad_test::grad_tol<T>(), "dX", s);
    expect_all_close(gw, ww, tad_test::grad_tol<T>() * double(s.rows + 1), "dw", s);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(scalar_variables_and_loop_invariants_inside_a_point, T, reals) {
  // L = sum(c * sum(X * exp(a) + s, axis<0>)) = sum_j c_j (e^a colsum_j + R s):
  // dL/da = e^a sum_j c_j colsum_j, dL/ds = R sum_j c_j, dL/dX_rj = c_j e^a.
  for (const shape& s : shapes) {
    buffer<T> Xb(s.rows * s.cols, 1);
    tad_test::fill_uniform(Xb, -1, 1, static_cast<unsigned>(7 + s.rows));
    std::vector<T> cs(s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) cs[j] = T(1 + 0.1 * double(j % 5));
    T av = T(0.3), sv = T(-0.7);
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto a = tad::var<"a">(av);
    auto sc = tad::var<"s">(sv);
    const auto L = tad::sum(tad::constant(cs) * tad::sum(X * tad::exp(a) + sc, tad::axis<0>));
    const auto [v, gX, ga, gs] = tad::grad(L, X, a, sc);
    const double ea = std::exp(0.3);
    double want = 0, wa = 0, wsum = 0;
    std::vector<double> wX(s.rows * s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) {
      double col = 0;
      for (std::size_t r = 0; r < s.rows; ++r) col += double(Xb[r * s.cols + j]);
      const double c = double(cs[j]);
      want += c * (ea * col + double(s.rows) * double(sv));
      wa += c * ea * col;
      wsum += c * double(s.rows);
      for (std::size_t r = 0; r < s.rows; ++r) wX[r * s.cols + j] = c * ea;
    }
    const double tol = tad_test::grad_tol<T>() * double(s.rows * s.cols + 1);
    BOOST_TEST(tad_test::close(double(v), want, tol));
    BOOST_TEST(tad_test::close(double(ga), wa, tol));
    BOOST_TEST(tad_test::close(double(gs), wsum, tol));
    expect_all_close(gX.data(), wX, tad_test::grad_tol<T>(), "dX", s);
  }
}

BOOST_AUTO_TEST_CASE(max_and_min_share_the_gradient_among_ties_per_column) {
  // Column j of a 6 x 19 matrix holds (j % 3) + 1 copies of its maximum and as many of its
  // minimum, so columns of one batch have different counts. L = sum(c * max(X, axis<0>)):
  // each maximum gets c_j / count_j.
  const std::size_t R = 6, C = 19;
  tad::matrix<double> Xm(R, C);
  std::vector<double> cs(C);
  for (std::size_t j = 0; j < C; ++j) {
    cs[j] = 1 + double(j);
    const std::size_t k = j % 3 + 1;
    for (std::size_t r = 0; r < R; ++r) Xm(r, j) = r < k ? 5.0 + double(j) : r < 2 * k ? -5.0 : 0.5 * double(r);
  }
  auto X = tad::var<"X">(Xm);
  auto c = tad::constant(cs);
  const auto [vmax, gmax] = tad::grad(tad::sum(c * tad::max(X, tad::axis<0>)), X);
  const auto [vmin, gmin] = tad::grad(tad::sum(c * tad::min(X, tad::axis<0>)), X);
  double want_max = 0, want_min = 0;
  for (std::size_t j = 0; j < C; ++j) {
    const std::size_t k = j % 3 + 1;
    want_max += cs[j] * (5.0 + double(j));
    want_min += cs[j] * -5.0;
    for (std::size_t r = 0; r < R; ++r) {
      BOOST_TEST(gmax(r, j) == (r < k ? cs[j] / double(k) : 0.0), "max at " << r << ", " << j);
      BOOST_TEST(gmin(r, j) == (r >= k && r < 2 * k ? cs[j] / double(k) : 0.0), "min at " << r << ", " << j);
    }
  }
  BOOST_TEST(vmax == want_max);
  BOOST_TEST(vmin == want_min);
}

BOOST_AUTO_TEST_CASE(columns_without_rows_and_special_values) {
  // 0 x 3: a sum per column is 0, a mean NaN, a logsumexp -inf; max and min raise before
  // anything is written. 3 x 0: no columns, an empty vector.
  const std::vector<double> none;
  auto E = tad::constant(none.data(), 0, 3);
  BOOST_TEST(tad::value(tad::sum(E, tad::axis<0>)) == std::vector<double>(3, 0.0));
  for (double m : tad::value(tad::mean(E, tad::axis<0>))) BOOST_TEST(std::isnan(m));
  for (double m : tad::value(tad::logsumexp(E, tad::axis<0>))) BOOST_TEST(m == -std::numeric_limits<double>::infinity());
  std::vector<double> g(5, 7.0);
  auto x = tad::var<"x">(g);
  std::vector<double> dx(5, 7.0);
  tad_test::expect_message<std::domain_error>(
      [&] { (void)tad::grad_into(tad::sum(tad::max(E, tad::axis<0>)) + tad::sum(x), tad::wrt(x, dx)); },
      "tad::max(e, axis<0>) / tad::min(e, axis<0>): e has columns but no rows (the maximum of no elements)");
  BOOST_TEST(dx == std::vector<double>(5, 7.0));
  BOOST_TEST(tad::value(tad::max(tad::constant(none.data(), 3, 0), tad::axis<0>)).empty());
  // A column holding a NaN: its max and logsumexp are NaN (so is a loss weighing it by 0) and
  // the gradient of that column's logsumexp is NaN, the other columns' are exact; a column of
  // -inf has logsumexp -inf and gradient NaN (exp(-inf - -inf)), as along the rows (semantics.md).
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  tad::matrix<double> Xm{{1, nan, -inf}, {2, 0, -inf}};
  auto X = tad::var<"X">(Xm);
  const std::vector<double> first{1, 0, 0};
  const auto [v, gX] = tad::grad(tad::sum(tad::logsumexp(X, tad::axis<0>) * tad::constant(first)), X);
  BOOST_TEST(std::isnan(v));  // 0 * NaN
  BOOST_TEST(gX(0, 0) == std::exp(1.0) / (std::exp(1.0) + std::exp(2.0)), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(std::isnan(gX(0, 1)));
  BOOST_TEST(std::isnan(gX(0, 2)));
  const std::vector<double> lse = tad::value(tad::logsumexp(X, tad::axis<0>));
  BOOST_TEST(std::isnan(lse[1]));
  BOOST_TEST(lse[2] == -inf);
  BOOST_TEST(std::isnan(tad::value(tad::max(X, tad::axis<0>))[1]));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_down_the_columns, T, reals) {
  // S = softmax(X, axis<0>): each column sums to 1; L = sum(G * S) has
  // dL/dX_rj = S_rj (G_rj - sum_r' G_r'j S_r'j).
  for (const shape& s : shapes) {
    buffer<T> Xb(s.rows * s.cols, 1);
    tad_test::fill_uniform(Xb, -3, 3, static_cast<unsigned>(11 + s.cols));
    std::vector<T> Gs(s.rows * s.cols);
    for (std::size_t i = 0; i < Gs.size(); ++i) Gs[i] = T(std::cos(0.3 * double(i)));
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    const auto S = tad::softmax(X, tad::axis<0>);
    const auto [v, gX] = tad::grad(tad::sum(tad::constant(Gs.data(), s.rows, s.cols) * S), X);
    const tad::matrix<T> Sv = tad::value(S);
    std::vector<double> want_s(s.rows * s.cols), wX(s.rows * s.cols);
    double want = 0;
    for (std::size_t j = 0; j < s.cols; ++j) {
      double m = -std::numeric_limits<double>::infinity(), z = 0, gs = 0;
      for (std::size_t r = 0; r < s.rows; ++r) m = std::max(m, double(Xb[r * s.cols + j]));
      for (std::size_t r = 0; r < s.rows; ++r) z += std::exp(double(Xb[r * s.cols + j]) - m);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const std::size_t i = r * s.cols + j;
        want_s[i] = std::exp(double(Xb[i]) - m) / z;
        gs += double(Gs[i]) * want_s[i];
        want += double(Gs[i]) * want_s[i];
      }
      for (std::size_t r = 0; r < s.rows; ++r) {
        const std::size_t i = r * s.cols + j;
        wX[i] = want_s[i] * (double(Gs[i]) - gs);
      }
    }
    expect_all_close(Sv.data(), want_s, tad_test::grad_tol<T>(), "softmax", s);
    BOOST_TEST(tad_test::close(double(v), want, tad_test::grad_tol<T>() * double(s.cols + 1)));
    expect_all_close(gX.data(), wX, tad_test::grad_tol<T>(), "dX", s);
  }
}

BOOST_AUTO_TEST_CASE(schedules_and_array_results) {
  // One fused pass when the adjoint is known first; a logsumexp over the column sums needs its
  // value before its backward: its shift, its sum, then the backward, three passes over X.
  const tad::matrix<double> Xm{{1, 2, 3}, {-1, 0.5, 2}, {0, 0, 1}, {2, -2, 0.25}, {1, 1, 1}};
  const std::vector<double> ws{0.1, -0.2, 0.3}, u{1, -2, 0.5};
  auto X = tad::var<"X">(Xm);
  auto w = tad::var<"w">(ws);
  const auto fused = tad::sum(tad::sigmoid(tad::sum(X * w, tad::axis<0>)));
  const auto lse = tad::logsumexp(tad::sum(X * w, tad::axis<0>));
  static_assert(tad::passes_v<decltype(fused), decltype(w)> == 1);
  static_assert(tad::passes_v<decltype(lse), decltype(w)> == 3);
  std::vector<double> col(3, 0.0);
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t r = 0; r < 5; ++r) col[j] += Xm(r, j) * ws[j];
  const auto [lv, lX, lw] = tad::grad(lse, X, w);
  double z = 0;
  for (double c : col) z += std::exp(c);
  BOOST_TEST(lv == std::log(z), boost::test_tools::tolerance(1e-14));
  for (std::size_t j = 0; j < 3; ++j) {
    const double p = std::exp(col[j]) / z;
    double colsum = 0;
    for (std::size_t r = 0; r < 5; ++r) {
      colsum += Xm(r, j);
      BOOST_TEST(lX(r, j) == p * ws[j], boost::test_tools::tolerance(1e-14));
    }
    BOOST_TEST(lw[j] == p * colsum, boost::test_tools::tolerance(1e-14));
  }
  // value, evaluate and vjp of a vector over the columns: vjp(sum(X * w, axis<0>), u) has
  // d/dX_rj = u_j w_j, d/dw_j = u_j colsum_j.
  const auto e = tad::sum(X * w, tad::axis<0>);
  const std::vector<double> v = tad::value(e);
  std::vector<double> out(3, -7);
  tad::evaluate(e, out);
  for (std::size_t j = 0; j < 3; ++j) {
    BOOST_TEST(v[j] == col[j], boost::test_tools::tolerance(1e-15));
    BOOST_TEST(out[j] == col[j], boost::test_tools::tolerance(1e-15));
  }
  const auto [sv, gX, gw] = tad::vjp(e, u, X, w);
  BOOST_TEST(sv == u[0] * col[0] + u[1] * col[1] + u[2] * col[2], boost::test_tools::tolerance(1e-14));
  for (std::size_t j = 0; j < 3; ++j) {
    double colsum = 0;
    for (std::size_t r = 0; r < 5; ++r) {
      colsum += Xm(r, j);
      BOOST_TEST(gX(r, j) == u[j] * ws[j], boost::test_tools::tolerance(1e-15));
    }
    BOOST_TEST(gw[j] == u[j] * colsum, boost::test_tools::tolerance(1e-14));
  }
  // A matrix result: the centered matrix.
  const tad::matrix<double> centered = tad::value(X - tad::mean(X, tad::axis<0>));
  for (std::size_t j = 0; j < 3; ++j) {
    double m = 0;
    for (std::size_t r = 0; r < 5; ++r) m += Xm(r, j) / 5;
    for (std::size_t r = 0; r < 5; ++r) BOOST_TEST(centered(r, j) == Xm(r, j) - m, boost::test_tools::tolerance(1e-14));
  }
}

BOOST_AUTO_TEST_CASE(lets_inside_a_point_clip_the_summed_adjoint) {
  // z = let(clip_gradient(X * w, -0.1, 0.1)), L = sum(c * sum(z * z, axis<0>)): z's adjoint
  // 2 c_j z_rj is summed over its two uses, then clipped once: dX_rj = w_j clip(2 c_j z_rj),
  // dw_j = sum_r X_rj clip(2 c_j z_rj). Without the let each use clips its own c_j z_rj.
  const tad::matrix<double> Xm{{1, 2, -3, 0.01}, {-1, 0.5, 2, 0.02}, {0.3, 0.02, 1, -0.01}};
  const std::vector<double> ws{0.1, -0.2, 0.3, 1.0}, cs{1, 0.5, 2, 1};
  auto X = tad::var<"X">(Xm);
  auto w = tad::var<"w">(ws);
  auto c = tad::constant(cs);
  const auto z = tad::let<"z">(tad::clip_gradient(X * w, -0.1, 0.1));
  const auto [v, gX, gw] = tad::grad(tad::sum(c * tad::sum(z * z, tad::axis<0>)), X, w);
  const auto unshared = tad::per_use(tad::clip_gradient(X * w, -0.1, 0.1));
  const auto [uv, uX, uw] = tad::grad(tad::sum(c * tad::sum(unshared * unshared, tad::axis<0>)), X, w);
  auto clip = [](double a) { return std::clamp(a, -0.1, 0.1); };
  double want = 0;
  for (std::size_t j = 0; j < 4; ++j) {
    double dw = 0, udw = 0;
    for (std::size_t r = 0; r < 3; ++r) {
      const double zz = Xm(r, j) * ws[j];
      want += cs[j] * zz * zz;
      BOOST_TEST(gX(r, j) == ws[j] * clip(2 * cs[j] * zz), boost::test_tools::tolerance(1e-14));
      BOOST_TEST(uX(r, j) == ws[j] * 2 * clip(cs[j] * zz), boost::test_tools::tolerance(1e-14));
      dw += Xm(r, j) * clip(2 * cs[j] * zz);
      udw += Xm(r, j) * 2 * clip(cs[j] * zz);
    }
    BOOST_TEST(gw[j] == dw, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(uw[j] == udw, boost::test_tools::tolerance(1e-14));
  }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(uv == want, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(shape_errors_name_both_arrays_before_anything_is_written) {
  const tad::matrix<double> Xm(3, 4), Ym(2, 5);
  const std::vector<double> ws(4, 0.5), vs(5, 1);
  auto X = tad::constant(Xm);
  auto w = tad::var<"w">(ws);
  std::vector<double> g(4, 7.0);
  tad_test::expect_shape_error(
      [&] { (void)tad::grad_into(tad::sum(tad::constant(vs) * tad::sum(X * w, tad::axis<0>)), tad::wrt(w, g)); },
      "tad: shapes do not agree: a constant array (array 1 from the left) has length 5, a constant matrix (array 2 "
      "from the left) has shape 3 x 4 (a reduction along axis 0, tad::sum(e, tad::axis<0>), has one value per "
      "column of e: the vectors it is combined with have that length, and the matrices it meets have that many "
      "columns)",
      5, 4);
  BOOST_TEST(g == std::vector<double>(4, 7.0));
  tad_test::expect_shape_error(
      [&] { (void)tad::value(tad::constant(Ym) - tad::mean(X, tad::axis<0>)); },
      "tad: shapes do not agree: a constant matrix (array 1 from the left) has shape 2 x 5, a constant matrix "
      "(array 2 from the left) has shape 3 x 4 (a reduction along axis 0, tad::sum(e, tad::axis<0>), has one "
      "value per column of e: the vectors it is combined with have that length, and the matrices it meets have "
      "that many columns)",
      5, 4);
}

BOOST_AUTO_TEST_CASE(prints_the_axis_and_allocates_nothing) {
  const tad::matrix<double> Xm{{1, 2}, {3, 4}, {5, 6}};
  std::vector<double> ws{0.5, -0.5}, g(2);
  auto X = tad::constant(Xm);
  auto w = tad::var<"w">(ws);
  const auto p = tad::sum(X * w, tad::axis<0>);
  BOOST_TEST(tad::to_string(p) == "sum(constant[3x2] * w, axis<0>)");
  BOOST_TEST(tad::to_string(tad::softmax(X, tad::axis<0>)) == "exp(constant[3x2] - logsumexp(constant[3x2], axis<0>))");
  const auto L = tad::sum(tad::square(p - 1.0));
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(L, tad::wrt(w, g));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  // Column sums 9 and 12: p = (4.5, -6), L = 3.5^2 + 7^2, dL/dw_j = 2 (p_j - 1) colsum_j.
  BOOST_TEST(v == 3.5 * 3.5 + 7.0 * 7.0);
  BOOST_TEST(g[0] == 2 * 3.5 * 9);
  BOOST_TEST(g[1] == 2 * -7.0 * 12);
}

BOOST_AUTO_TEST_SUITE_END()
