// Reductions along axis 1 (issue 15; doc/shapes.md "Reductions along an axis"):
// `sum(X, axis<1>)` and `mean(X, axis<1>)` are one value per row of the matrix expression X, a
// vector its parent combines with vectors of that length and reduces. Shown here: logistic
// regression (value and gradient against the closed form X^T (sigmoid(X w) - y) / N) at shapes
// around the SIMD widths, float and double, unaligned and strided X, in one pass over X; with a
// penalty, a shared z (let), clipped logits, a non-fused outer reduction (two passes), mean's
// two counts, a matrix variable written by two points of one row, scalar variables and loop
// invariants inside a point, array results, shape errors before anything is written, printing
// and no allocation; a logsumexp of a matrix variable keeping its terms in the gradient; lets
// inside a point's argument (clip_gradient, a custom rule and an override used 2 and 3 times).
// Expected values are closed forms computed here in double.
#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

using tad_test::buffer;
using tad_test::reals;

namespace {

struct shape {
  std::size_t rows, cols;
};
const std::vector<shape> shapes{{0, 3}, {3, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {9, 16}, {300, 257}};

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }
double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

/// The logistic loss mean(softplus(z) - y z), z = X w, and its gradient X^T (sigmoid(z) - y) / N,
/// with the adjoint of each z_r passed through `clip` (identity for the plain loss).
template <class T, class Clip>
double logistic(const T* X, std::size_t ld, const T* y, const std::vector<T>& w, std::size_t N, std::size_t D,
                std::vector<double>& g, Clip clip) {
  g.assign(D, 0.0);
  double loss = 0;
  for (std::size_t r = 0; r < N; ++r) {
    double z = 0;
    for (std::size_t j = 0; j < D; ++j) z += double(X[r * ld + j]) * double(w[j]);
    loss += softplus(z) - double(y[r]) * z;
    const double dz = clip((sigmoid(z) - double(y[r])) / double(N));
    for (std::size_t j = 0; j < D; ++j) g[j] += dz * double(X[r * ld + j]);
  }
  return loss / double(N);
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, const char* what, shape s) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!tad_test::close(double(got[i]), want[i], tad_test::grad_tol<T>()) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << " at " << s.rows << " x " << s.cols << ": " << bad << " elements differ; first " << first
                             << ": tad " << (bad ? double(got[first]) : 0.0) << ", expected "
                             << (bad ? want[first] : 0.0));
}

template <class T>
struct lr_data {
  buffer<T> X, y;
  std::vector<T> w;
  lr_data(shape s, std::size_t ld, unsigned seed) : X(s.rows * ld + 1, 1), y(s.rows, 3), w(s.cols) {
    tad_test::fill_uniform(X, -1, 1, seed);
    for (std::size_t r = 0; r < s.rows; ++r) y[r] = T((r * 7 + seed) % 3 == 0 ? 1 : 0);
    for (std::size_t j = 0; j < s.cols; ++j) w[j] = T(0.3 * std::sin(double(j) + seed));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(axis)

BOOST_AUTO_TEST_CASE_TEMPLATE(logistic_regression_in_one_pass, T, reals) {
  for (const shape& s : shapes) {
    lr_data<T> d(s, s.cols, 11);
    auto X = tad::constant(d.X.data(), s.rows, s.cols);
    auto w = tad::var<"w">(d.w);
    auto y = tad::constant(d.y.cspan());
    const auto z = tad::sum(X * w, tad::axis<1>);
    const auto L = tad::mean(tad::softplus(z) - y * z);
    static_assert(tad::rank_v<decltype(z)> == 1);
    // One loop over X's rows: per row the dot product, then the row's gradient term.
    static_assert(tad::passes_v<decltype(L), decltype(w)> == 1);
    std::vector<double> want;
    const double v = logistic(d.X.data(), s.cols, d.y.data(), d.w, s.rows, s.cols, want, [](double a) { return a; });
    const auto [value, g] = tad::grad(L, w);
    BOOST_TEST(tad_test::close(double(value), v, tad_test::grad_tol<T>()));  // NaN for no rows: both
    expect_close(g, want, "logistic regression", s);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(strided_features_and_a_penalty, T, reals) {
  // X's rows ld = cols + 3 apart; the penalty runs in w's own loop: 2 passes, w read in both.
  for (const shape& s : shapes) {
    const std::size_t ld = s.cols + 3;
    lr_data<T> d(s, ld, 5);
    auto X = tad::constant(d.X.data(), s.rows, s.cols, ld);
    auto w = tad::var<"w">(d.w);
    auto y = tad::constant(d.y.cspan());
    const auto z = tad::let<"z">(tad::sum(X * w, tad::axis<1>));
    const auto L = tad::mean(tad::softplus(z) - y * z) + 0.5 * tad::squared_norm(w);
    static_assert(tad::passes_v<decltype(L), decltype(w)> == 2);
    std::vector<double> want;
    double v = logistic(d.X.data(), ld, d.y.data(), d.w, s.rows, s.cols, want, [](double a) { return a; });
    for (std::size_t j = 0; j < s.cols; ++j) v += 0.5 * double(d.w[j]) * double(d.w[j]), want[j] += double(d.w[j]);
    const auto [value, g] = tad::grad(L, w);
    if (s.rows > 0) BOOST_TEST(tad_test::close(double(value), v, tad_test::grad_tol<T>()));
    expect_close(g, want, "penalized logistic regression", s);
  }
}

BOOST_AUTO_TEST_CASE(clipped_logits_clip_the_summed_adjoint_once_per_row) {
  // zc = clip_gradient(z, lo, hi) used twice: each row's adjoint (sigmoid(z) - y) / N is summed
  // over both uses, then clipped (TensorFlow's and PyTorch's rule), then flows into z.
  const shape s{37, 11};
  lr_data<double> d(s, s.cols, 3);
  for (auto& x : d.X) x *= 4;  // logits large enough that some adjoints exceed the bounds
  auto X = tad::constant(d.X.data(), s.rows, s.cols);
  auto w = tad::var<"w">(d.w);
  auto y = tad::constant(d.y.cspan());
  const double lo = -0.004, hi = 0.006;
  const auto zc = tad::let<"zc">(tad::clip_gradient(tad::sum(X * w, tad::axis<1>), lo, hi));
  const auto L = tad::mean(tad::softplus(zc) - y * zc);
  static_assert(tad::passes_v<decltype(L), decltype(w)> == 1);
  std::vector<double> want;
  const double v = logistic(d.X.data(), s.cols, d.y.data(), d.w, s.rows, s.cols, want,
                            [&](double a) { return std::clamp(a, lo, hi); });
  std::vector<double> unclipped;
  logistic(d.X.data(), s.cols, d.y.data(), d.w, s.rows, s.cols, unclipped, [](double a) { return a; });
  BOOST_TEST(unclipped != want);  // the bounds are active
  const auto [value, g] = tad::grad(L, w);
  BOOST_TEST(value == v, boost::test_tools::tolerance(1e-12));
  expect_close(g, want, "clipped logits", s);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_reduction_that_needs_its_value_reads_x_twice, T, reals) {
  // log(sum(exp(z))): the adjoint of the sum is 1 / its value, known after the first loop over
  // X; the second loop recomputes each row's z and pushes softmax(z)_r X_r into w.
  for (const shape& s : shapes) {
    if (s.rows == 0) continue;  // log(0) = -inf: the gradient is 0 * inf
    lr_data<T> d(s, s.cols, 7);
    auto X = tad::constant(d.X.data(), s.rows, s.cols);
    auto w = tad::var<"w">(d.w);
    const auto L = tad::log(tad::sum(tad::exp(tad::sum(X * w, tad::axis<1>))));
    static_assert(tad::passes_v<decltype(L), decltype(w)> == 2);
    std::vector<double> z(s.rows), want(s.cols, 0.0);
    double total = 0;
    for (std::size_t r = 0; r < s.rows; ++r) {
      for (std::size_t j = 0; j < s.cols; ++j) z[r] += double(d.X[r * s.cols + j]) * double(d.w[j]);
      total += std::exp(z[r]);
    }
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) want[j] += std::exp(z[r]) / total * double(d.X[r * s.cols + j]);
    const auto [value, g] = tad::grad(L, w);
    BOOST_TEST(tad_test::close(double(value), std::log(total), tad_test::grad_tol<T>()));
    expect_close(g, want, "log-sum-exp of logits", s);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(matrix_variables_scalars_and_invariants_in_points, T, reals) {
  // L = sum(s * q) + sum(square(sum(exp(a) * X + b, axis<1>))), s_r = sum_j X_rj,
  // q_r = sum_j X_rj^2: X is written by three points of one row.
  // dL/dX_rj = q_r + 2 s_r X_rj + 2 p_r exp(a); dL/da = sum_r 2 p_r exp(a) s_r;
  // dL/db = sum_r 2 p_r D, with p_r = exp(a) s_r + D b.
  for (const shape& s : shapes) {
    buffer<T> Xb(s.rows * s.cols, 1);
    tad_test::fill_uniform(Xb, -1, 1, 21);
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto a = tad::var<"a">(T(0.3));
    auto b = tad::var<"b">(T(-0.2));
    const auto L = tad::sum(tad::sum(X, tad::axis<1>) * tad::sum(X * X, tad::axis<1>)) +
                   tad::sum(tad::square(tad::sum(tad::exp(a) * X + b, tad::axis<1>)));
    const auto [value, gX, ga, gb] = tad::grad(L, X, a, b);
    const double ea = std::exp(0.3), D = double(s.cols);
    double v = 0, wa = 0, wb = 0;
    std::vector<double> wX(s.rows * s.cols);
    for (std::size_t r = 0; r < s.rows; ++r) {
      double sr = 0, qr = 0;
      for (std::size_t j = 0; j < s.cols; ++j) sr += double(Xb[r * s.cols + j]), qr += double(Xb[r * s.cols + j]) * double(Xb[r * s.cols + j]);
      const double pr = ea * sr + D * -0.2;
      v += sr * qr + pr * pr;
      wa += 2 * pr * ea * sr;
      wb += 2 * pr * D;
      for (std::size_t j = 0; j < s.cols; ++j) wX[r * s.cols + j] = qr + 2 * sr * double(Xb[r * s.cols + j]) + 2 * pr * ea;
    }
    BOOST_TEST(tad_test::close(double(value), v, tad_test::grad_tol<T>() * std::max(1.0, D)));
    BOOST_TEST(tad_test::close(double(ga), wa, tad_test::grad_tol<T>() * std::max(1.0, D)));
    BOOST_TEST(tad_test::close(double(gb), wb, tad_test::grad_tol<T>() * std::max(1.0, D)));
    expect_close(std::vector<T>(gX.data(), gX.data() + s.rows * s.cols), wX, "three points of X", s);
  }
}

BOOST_AUTO_TEST_CASE(mean_counts_columns_inside_and_rows_outside) {
  // mean(mean(X, axis<1>)) over a 2 x 3 matrix: the mean of the row means; each element's
  // gradient is 1 / (rows * cols). mean along an empty row is NaN.
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 9}};
  auto X = tad::var<"X">(Xm);
  const auto [v, g] = tad::grad(tad::mean(tad::mean(X, tad::axis<1>)), X);
  BOOST_TEST(v == (2.0 + 6.0) / 2);
  for (std::size_t i = 0; i < 6; ++i) BOOST_TEST(g.data()[i] == 1.0 / 6);
  const std::vector<double> m = tad::value(tad::mean(X, tad::axis<1>));
  BOOST_TEST(m == (std::vector<double>{2, 6}));
  const std::vector<double> e(3);
  const auto rows = tad::value(tad::mean(tad::constant(e.data(), 3, 0), tad::axis<1>));
  BOOST_TEST(rows.size() == 3u);
  for (double x : rows) BOOST_TEST(std::isnan(x));
}

BOOST_AUTO_TEST_CASE(array_results_and_vjp) {
  // value(sigmoid(sum(X * w, axis<1>))): one value per row; vjp with seed u:
  // d/dw_j = sum_r u_r sigmoid'(z_r) X_rj.
  const tad::matrix<double> Xm{{1, 2, 3}, {-1, 0.5, 2}, {0, 0, 1}, {2, -2, 0.25}, {1, 1, 1}};
  const std::vector<double> ws{0.1, -0.2, 0.3}, u{1, -2, 0.5, 3, -1};
  auto X = tad::constant(Xm);
  auto w = tad::var<"w">(ws);
  const auto e = tad::sigmoid(tad::sum(X * w, tad::axis<1>));
  const std::vector<double> v = tad::value(e);
  std::vector<double> out(5, -7);
  tad::evaluate(e, out);
  const auto [sv, gw] = tad::vjp(e, u, w);
  std::vector<double> want(3, 0.0);
  double ws_sum = 0;
  BOOST_TEST_REQUIRE(v.size() == 5u);
  for (std::size_t r = 0; r < 5; ++r) {
    double z = 0;
    for (std::size_t j = 0; j < 3; ++j) z += Xm(r, j) * ws[j];
    BOOST_TEST(v[r] == sigmoid(z), boost::test_tools::tolerance(1e-14));
    BOOST_TEST(out[r] == sigmoid(z), boost::test_tools::tolerance(1e-14));
    ws_sum += u[r] * sigmoid(z);
    for (std::size_t j = 0; j < 3; ++j) want[j] += u[r] * sigmoid(z) * (1 - sigmoid(z)) * Xm(r, j);
  }
  BOOST_TEST(sv == ws_sum, boost::test_tools::tolerance(1e-14));
  for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(gw[j] == want[j], boost::test_tools::tolerance(1e-13));
}

BOOST_AUTO_TEST_CASE(shape_errors_name_both_arrays_before_anything_is_written) {
  const tad::matrix<double> Xm(3, 4), Ym(4, 4);
  const std::vector<double> ws(4, 0.5), ys(5, 1), w3(3);
  auto X = tad::constant(Xm);
  auto w = tad::var<"w">(ws);
  auto y = tad::constant(ys);
  std::vector<double> g(4, 7.0);
  tad_test::expect_shape_error(
      [&] { tad::grad_into(tad::mean(y * tad::sum(X * w, tad::axis<1>)), tad::wrt(w, g)); },
      "tad: shapes do not agree: a constant array (array 1 from the left) has length 5, a constant matrix (array 2 "
      "from the left) has shape 3 x 4 (a reduction along axis 1, tad::sum(e, tad::axis<1>), has one value per row "
      "of e: the vectors it is combined with have that length, and the matrices of e and of every reduction along "
      "axis 1 it meets have that many rows)",
      5, 3);
  BOOST_TEST(g == std::vector<double>(4, 7.0));
  tad_test::expect_shape_error(
      [&] { (void)tad::value(tad::sum(X, tad::axis<1>) + tad::sum(tad::constant(Ym), tad::axis<1>)); },
      "tad: shapes do not agree: a constant matrix (array 1 from the left) has shape 3 x 4, a constant matrix "
      "(array 2 from the left) has shape 4 x 4 (a reduction along axis 1, tad::sum(e, tad::axis<1>), has one value "
      "per row of e: the vectors it is combined with have that length, and the matrices of e and of every "
      "reduction along axis 1 it meets have that many rows)",
      3, 4);
  // Along the columns, the usual broadcasting message.
  auto v3 = tad::var<"v">(w3);
  BOOST_CHECK_THROW((void)tad::grad(tad::sum(tad::sum(X * v3, tad::axis<1>)), v3), tad::shape_error);
}

BOOST_AUTO_TEST_CASE(prints_the_axis_and_allocates_nothing) {
  const tad::matrix<double> Xm{{1, 2}, {3, 4}, {5, 6}};
  const std::vector<double> ys{1, 0, 1};
  std::vector<double> ws{0.5, -0.5}, g(2);
  auto X = tad::constant(Xm);
  auto w = tad::var<"w">(ws);
  auto y = tad::constant(ys);
  const auto z = tad::sum(X * w, tad::axis<1>);
  BOOST_TEST(tad::to_string(z) == "sum(constant[3x2] * w, axis<1>)");
  BOOST_TEST(tad::to_string(tad::mean(tad::mean(X, tad::axis<1>))) == "mean(mean(constant[3x2], axis<1>))");
  const auto L = tad::mean(tad::softplus(z) - y * z);
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(L, tad::wrt(w, g));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  std::vector<double> want;
  const double ref = logistic(Xm.data(), 2, ys.data(), ws, 3, 2, want, [](double a) { return a; });
  BOOST_TEST(v == ref, boost::test_tools::tolerance(1e-14));
  for (std::size_t j = 0; j < 2; ++j) BOOST_TEST(g[j] == want[j], boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(max_and_min_share_the_gradient_among_ties_per_row) {
  // Row r of a 19 x 6 matrix holds (r % 3) + 1 copies of its maximum (and as many of its
  // minimum): rows of one block of SIMD-width rows have different counts. L = sum(c * max(X,
  // axis<1>)): dL/dX_rj = c_r / count_r at the row's maxima, 0 elsewhere.
  const std::size_t R = 19, D = 6;
  buffer<double> Xb(R * D, 1);
  std::vector<double> c(R);
  for (std::size_t r = 0; r < R; ++r) {
    c[r] = 1.0 + 0.25 * double(r);
    for (std::size_t j = 0; j < D; ++j) Xb[r * D + j] = 0.1 * double(j % 2) - 1.0 + 0.01 * double(r);
    for (std::size_t k = 0; k <= r % 3; ++k) Xb[r * D + 2 * k + 1] = 3.0 + double(r);   // the maxima
    for (std::size_t k = 0; k <= r % 3; ++k) Xb[r * D + 2 * k] = -3.0 - double(r);      // the minima
  }
  auto X = tad::var<"X">(Xb.data(), R, D);
  auto C = tad::constant(c);
  for (int which = 0; which < 2; ++which) {
    const auto [v, g] = which == 0 ? tad::grad(tad::sum(C * tad::max(X, tad::axis<1>)), X)
                                   : tad::grad(tad::sum(C * tad::min(X, tad::axis<1>)), X);
    double want = 0;
    for (std::size_t r = 0; r < R; ++r) {
      const double ext = which == 0 ? 3.0 + double(r) : -3.0 - double(r);
      want += c[r] * ext;
      const double count = double(r % 3 + 1);
      for (std::size_t j = 0; j < D; ++j) {
        const double expect = Xb[r * D + j] == ext ? c[r] / count : 0.0;
        BOOST_TEST(g.data()[r * D + j] == expect, (which == 0 ? "max" : "min") << " at row " << r << ", column " << j);
      }
    }
    BOOST_TEST(v == want, boost::test_tools::tolerance(1e-14));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(rows_longer_than_l1, T, reals) {
  // 9 rows of 6,000 elements (24 or 48 KB each: a block of W rows is far beyond L1, so the
  // backward pass runs them one at a time, TAD_POINT_BLOCK_BYTES), and the results are the
  // closed forms. logsumexp(X, axis<1>) weighted per row: value sum_r v_r lse(x_r), gradient
  // v_r softmax(x_r); the logistic regression's gradient X^T (sigmoid(X w) - y) / N.
  const shape s{9, 6000};
  lr_data<T> d(s, s.cols + 1, 3);
  auto X = tad::var<"X">(d.X.data(), s.rows, s.cols, s.cols + 1);
  std::vector<T> vs(s.rows);
  for (std::size_t r = 0; r < s.rows; ++r) vs[r] = T(0.5 + 0.25 * double(r));
  const auto [value, g] = tad::grad(tad::sum(tad::constant(vs) * tad::logsumexp(X, tad::axis<1>)), X);
  double want_value = 0;
  std::vector<double> want(s.rows * s.cols);
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* x = d.X.data() + r * (s.cols + 1);
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, double(x[j]));
    for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(double(x[j]) - m);
    const double lse = m + std::log(sum);
    want_value += double(vs[r]) * lse;
    for (std::size_t j = 0; j < s.cols; ++j) want[r * s.cols + j] = double(vs[r]) * std::exp(double(x[j]) - lse);
  }
  BOOST_TEST(tad_test::close(double(value), want_value, tad_test::grad_tol<T>()));
  expect_close(std::vector<T>(g.begin(), g.end()), want, "weighted logsumexp along long rows", s);

  auto Xc = tad::constant(d.X.data(), s.rows, s.cols, s.cols + 1);
  auto w = tad::var<"w">(d.w);
  auto y = tad::constant(d.y.cspan());
  const auto z = tad::let<"z">(tad::sum(Xc * w, tad::axis<1>));
  std::vector<double> want_w;
  const double v = logistic(d.X.data(), s.cols + 1, d.y.data(), d.w, s.rows, s.cols, want_w, [](double a) { return a; });
  const auto [lr_value, gw] = tad::grad(tad::mean(tad::softplus(z) - y * z), w);
  BOOST_TEST(tad_test::close(double(lr_value), v, tad_test::grad_tol<T>()));
  expect_close(gw, want_w, "logistic regression over long rows", s);
}

namespace {
/// sum(c * sin(lse(x_r))) over the rows of X (ld per row) in double, and (if g) its gradient
/// c_r cos(lse_r) softmax(x_r), plus `self` X (the gradient of a 0.5 squared_norm(X) beside it).
template <class T, class C>
double weighted_sin_lse(const T* X, std::size_t ld, const std::vector<C>& c, shape s, std::vector<double>* g,
                        double self = 0) {
  double L = 0;
  if (g) g->assign(s.rows * s.cols, 0.0);
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* x = X + r * ld;
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, double(x[j]));
    for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(double(x[j]) - m);
    const double lse = m + std::log(sum);
    L += double(c[r]) * std::sin(lse);
    for (std::size_t j = 0; j < s.cols && g; ++j)
      (*g)[r * s.cols + j] = double(c[r]) * std::cos(lse) * std::exp(double(x[j]) - lse) + self * double(x[j]);
  }
  return L;
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(logsumexp_of_a_matrix_variable_keeps_its_terms_in_the_gradient, T, reals) {
  // logsumexp(X, axis<1>) of X itself, X's only use: the forward sweep of a row stores
  // exp(x - shift) in X's gradient row and the backward sweep scales it (plan::stash_var), so the
  // buffer is not zeroed first: it is filled with NaN here, and any element not written, or
  // added to, would show. Value and gradient against sum(c sin(lse)) and c cos(lse) softmax in
  // double, at the shapes (unaligned, dense and strided rows, rows longer than a block:
  // TAD_POINT_BLOCK_BYTES), a few elements against central differences; beside it the forms
  // that must not keep terms (X used twice, the point under stop_gradient) and two passes
  // (the square of a sum of points: the backward pass sweeps again and keeps them).
  std::vector<shape> all = shapes;
  all.push_back({5, 700});
  for (const shape& s : all) {
    if (s.cols == 0) continue;  // lse of no elements is -inf: rows_without_elements_and_special_values
    for (const std::size_t ld : {s.cols, s.cols + 3}) {
      const unsigned seed = static_cast<unsigned>(s.rows * 13 + s.cols + ld);
      buffer<T> Xb(s.rows * ld + 1, 1);
      tad_test::fill_uniform(Xb, -4, 4, seed);
      std::vector<T> c(s.rows);
      for (std::size_t r = 0; r < s.rows; ++r) c[r] = T(std::cos(0.3 * double(r) + 0.5));
      auto X = tad::var<"X">(Xb.data(), s.rows, s.cols, ld);
      const auto L = tad::sum(tad::constant(c) * tad::sin(tad::logsumexp(X, tad::axis<1>)));
      using P = tad::detail::plan<std::remove_cvref_t<decltype(L)>, tad::detail::wrt_list<decltype(X)>>;
      static_assert(P::stash_var[0] == 0 && P::passes == 1);
      std::vector<double> want;
      const double want_value = weighted_sin_lse(Xb.data(), ld, c, s, &want);
      buffer<T> gX(s.rows * s.cols, 1);
      std::fill(gX.begin(), gX.end(), std::numeric_limits<T>::quiet_NaN());
      const T value = tad::grad_into(L, tad::wrt(X, std::span<T>(gX.data(), gX.size())));
      BOOST_TEST(tad_test::close(double(value), want_value, tad_test::grad_tol<T>() * std::max(1.0, double(s.rows))));
      expect_close(std::vector<T>(gX.begin(), gX.end()), want, "sum(c sin(logsumexp(X, axis<1>)))", s);
      for (std::size_t i = 0; i < s.rows * s.cols; i += std::max<std::size_t>(1, s.rows * s.cols / 4)) {
        const std::size_t at = (i / s.cols) * ld + i % s.cols;
        std::vector<double> Xd(Xb.begin(), Xb.end());
        const double d = tad_test::central(
            [&](double t) {
              Xd[at] = t;
              return weighted_sin_lse(Xd.data(), ld, c, s, nullptr);
            },
            double(Xb[at]));
        BOOST_TEST(std::abs(d - want[i]) <= 1e-5 * std::max(1.0, std::abs(d)), "analytic dL/dX[" << i << "]");
      }
      // X also in a penalty: its gradient gets two writers, so the point adds to a zeroed buffer.
      const auto L2 = L + 0.5 * tad::squared_norm(X);
      static_assert(tad::detail::plan<std::remove_cvref_t<decltype(L2)>, tad::detail::wrt_list<decltype(X)>>::stash_var[0] ==
                    1);
      std::vector<double> want2;
      (void)weighted_sin_lse(Xb.data(), ld, c, s, &want2, 1.0);
      std::fill(gX.begin(), gX.end(), std::numeric_limits<T>::quiet_NaN());
      (void)tad::grad_into(L2, tad::wrt(X, std::span<T>(gX.data(), gX.size())));
      expect_close(std::vector<T>(gX.begin(), gX.end()), want2, "... + 0.5 squared_norm(X)", s);
      // Two passes: square(sum(c lse)): the point's adjoint 2 S c_r needs S, the first pass's.
      const auto L3 = tad::square(tad::sum(tad::constant(c) * tad::logsumexp(X, tad::axis<1>)));
      static_assert(tad::passes_v<decltype(L3), decltype(X)> == 2);
      double S = 0;
      std::vector<double> want3(s.rows * s.cols);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const T* x = Xb.data() + r * ld;
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, double(x[j]));
        for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(double(x[j]) - m);
        S += double(c[r]) * (m + std::log(sum));
      }
      for (std::size_t r = 0; r < s.rows; ++r) {
        const T* x = Xb.data() + r * ld;
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, double(x[j]));
        for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(double(x[j]) - m);
        for (std::size_t j = 0; j < s.cols; ++j)
          want3[r * s.cols + j] = 2 * S * double(c[r]) * std::exp(double(x[j]) - m) / sum;
      }
      std::fill(gX.begin(), gX.end(), std::numeric_limits<T>::quiet_NaN());
      const T v3 = tad::grad_into(L3, tad::wrt(X, std::span<T>(gX.data(), gX.size())));
      BOOST_TEST(tad_test::close(double(v3), S * S, tad_test::grad_tol<T>() * std::max(1.0, S * S)));
      std::vector<double> want3s(want3);
      for (double& w : want3s) w /= std::max(1.0, 2 * std::abs(S));  // compare relative to the scale 2S
      std::vector<T> got3(gX.begin(), gX.end());
      for (T& g : got3) g = T(double(g) / std::max(1.0, 2 * std::abs(S)));
      expect_close(got3, want3s, "square(sum(c logsumexp(X, axis<1>)))", s);
      // Below stop_gradient the point wants nothing: X's gradient is the penalty's alone.
      const auto L4 = tad::stop_gradient(L) + 0.5 * tad::squared_norm(X);
      static_assert(tad::detail::plan<std::remove_cvref_t<decltype(L4)>, tad::detail::wrt_list<decltype(X)>>::stash_var[0] ==
                    1);
      std::fill(gX.begin(), gX.end(), std::numeric_limits<T>::quiet_NaN());
      (void)tad::grad_into(L4, tad::wrt(X, std::span<T>(gX.data(), gX.size())));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < s.rows * s.cols; ++i)
        if (gX[i] != Xb[(i / s.cols) * ld + i % s.cols]) ++bad;
      BOOST_TEST(bad == 0u, "stop_gradient(L) + 0.5 squared_norm(X) at " << s.rows << " x " << s.cols);
    }
  }
}

BOOST_AUTO_TEST_CASE(logsumexp_keeping_its_terms_gives_the_special_values_of_semantics_md) {
  // The kept terms against semantics.md's logsumexp rules, per row (weights 1, 2, 3, 0.5):
  // [1000, 1000] -> 1/2 each; [-inf, -inf] -> NaN (0 * exp(-inf - (-inf))); [inf, 0] -> NaN
  // at inf (exp(inf - inf)), 0 elsewhere; [NaN, 0] -> NaN. The same expression with X used
  // a second time (0 * sum(X): nothing kept) must give the same.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const tad::matrix<double> Zm{{1000, 1000}, {-inf, -inf}, {inf, 0}, {nan, 0}};
  auto Z = tad::var<"Z">(Zm);
  const std::vector<double> w{1, 2, 3, 0.5};
  const auto lse = tad::sum(tad::constant(w) * tad::logsumexp(Z, tad::axis<1>));
  static_assert(tad::detail::plan<std::remove_cvref_t<decltype(lse)>, tad::detail::wrt_list<decltype(Z)>>::stash_var[0] == 0);
  const auto [v, g] = tad::grad(lse, Z);
  BOOST_TEST(std::isnan(v));
  const auto [v2, g2] = tad::grad(lse + 0.0 * tad::sum(Z), Z);
  BOOST_TEST(std::isnan(v2));
  BOOST_TEST(g.data()[0] == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(g.data()[1] == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(g.data()[2]));
  BOOST_TEST(std::isnan(g.data()[3]));
  BOOST_TEST(std::isnan(g.data()[4]));
  BOOST_TEST(g.data()[5] == 0.0);
  BOOST_TEST(std::isnan(g.data()[6]));
  BOOST_TEST(std::isnan(g.data()[7]));
  for (std::size_t i = 0; i < 8; ++i) {
    const double a = g.data()[i], b = g2.data()[i];
    BOOST_TEST(((std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-12), "element " << i << ": " << a << " vs " << b);
  }
}

BOOST_AUTO_TEST_CASE(rows_without_elements_and_special_values) {
  // max and min along rows of no elements raise, as max(e) of an empty array does; with no rows
  // there is nothing to reduce. logsumexp: -inf for rows of no elements; stable for large values
  // (lse(1000, 1000) = 1000 + log 2, gradient 1/2 each); a row of -inf gives -inf.
  const std::vector<double> none(3);
  const auto empty_rows = tad::constant(none.data(), 3, 0);
  tad_test::expect_message<std::domain_error>(
      [&] { (void)tad::value(tad::sum(tad::max(empty_rows, tad::axis<1>))); },
      "tad::max(e, axis<1>) / tad::min(e, axis<1>): e has rows but no columns (the maximum of no elements)");
  BOOST_CHECK_THROW((void)tad::value(tad::sum(tad::min(empty_rows, tad::axis<1>))), std::domain_error);
  BOOST_CHECK_THROW((void)tad::value(tad::max(empty_rows, tad::axis<1>)), std::domain_error);  // the store pass
  BOOST_TEST(tad::value(tad::sum(tad::max(tad::constant(none.data(), 0, 3), tad::axis<1>))) == 0.0);
  const auto lse_empty = tad::value(tad::logsumexp(empty_rows, tad::axis<1>));
  BOOST_TEST_REQUIRE(lse_empty.size() == 3u);
  for (double x : lse_empty) BOOST_TEST((std::isinf(x) && x < 0));
  const double inf = std::numeric_limits<double>::infinity();
  const tad::matrix<double> Zm{{1000, 1000}, {-inf, -inf}, {0, std::log(3.0)}};
  auto Z = tad::var<"Z">(Zm);
  const std::vector<double> l = tad::value(tad::logsumexp(Z, tad::axis<1>));
  BOOST_TEST(l[0] == 1000 + std::log(2.0), boost::test_tools::tolerance(1e-15));
  BOOST_TEST((std::isinf(l[1]) && l[1] < 0));
  BOOST_TEST(l[2] == std::log(4.0), boost::test_tools::tolerance(1e-15));
  const tad::matrix<double> Fm{{1000, 1000}, {0, std::log(3.0)}};
  auto F = tad::var<"F">(Fm);
  const std::vector<double> weights{1, 2};
  const auto [v, g] = tad::grad(tad::sum(tad::constant(weights) * tad::logsumexp(F, tad::axis<1>)), F);
  BOOST_TEST(v == 1000 + std::log(2.0) + 2 * std::log(4.0), boost::test_tools::tolerance(1e-15));
  const std::vector<double> want{0.5, 0.5, 2 * 0.25, 2 * 0.75};
  // exp(z - lse) with lse = 1000.69..., rounded to 1.1e-13: the gradient is good to ~1e-13.
  for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(g.data()[i] == want[i], boost::test_tools::tolerance(1e-12));
}

namespace {
// The identity whose rule is dy * dy, and an override of identity's rule, clip(dy, -0.1, 0.1):
// rules not linear in the adjoint, so sharing shows (test/gradient/sharing.cpp has them 1-D).
constexpr auto squared_rule = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) { return dy * dy; });
constexpr auto clip01 = [](auto dy, auto, auto) {
  using D = decltype(dy);
  const D c = D(1) / D(10);
  return tad::simd::select(dy < -c, -c, tad::simd::select(dy > c, c, dy));
};
constexpr auto identity_clip =
    boost::hana::make_map(boost::hana::make_pair(boost::hana::type_c<tad::identity_op>, clip01));
double clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(lets_inside_a_point_are_shared_per_element, T, reals) {
  // A let inside the argument of a reduction along an axis is one node per element of each of
  // the point's sweeps: its rule runs once on the summed adjoint of its uses (semantics.md,
  // "Shared subexpressions"). Expected values from that definition, by hand: with
  // c = let(clip_gradient(X, -0.5, 0.5)), sum(0.3 c + 0.3 c + 0.3 c, axis<1>) sends 0.9 into c,
  // clipped once: 0.5 (unshared copies: 0.9); two uses 0.6 -> 0.5 (0.6). The rule dy * dy:
  // 0.81 and 0.36 shared, 0.27 and 0.18 unshared; the override clip(dy, -0.1, 0.1) of
  // c + c + c: 0.1 (0.3). logsumexp (three sweeps a row) of c + c: c's adjoint 2 softmax(2x)_j,
  // clipped once to [-0.5, 0.5] (unshared: each copy clips softmax_j). A plain let z = X * w in sin(sum(z * z + z, axis<1>)) and
  // in softmax(z, axis<1>) (a column point: z in the sweeps and in the row's code) against the
  // analytic gradients. Shapes around the SIMD widths, unaligned rows, a row longer than a block.
  std::vector<shape> all = shapes;
  all.push_back({5, 700});
  for (const shape& s : all) {
    const std::size_t n = s.rows * s.cols;
    buffer<T> Xb(n, 1);
    tad_test::fill_uniform(Xb, -2, 2, static_cast<unsigned>(s.rows * 5 + s.cols));
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto row_sums = [](const auto& e) { return tad::sum(tad::sum(e, tad::axis<1>)); };
    auto gX = [&](const auto& L) {
      const auto [v, g] = tad::grad(L, X);
      return std::vector<T>(g.begin(), g.end());
    };
    auto all_of = [&](double v) { return std::vector<double>(n, v); };
    const auto c = tad::let<"c">(tad::clip_gradient(X, -0.5, 0.5));
    const auto u = tad::per_use(tad::clip_gradient(X, -0.5, 0.5));
    const auto L3 = row_sums(0.3 * c + 0.3 * c + 0.3 * c);
    static_assert(tad::passes_v<decltype(L3), decltype(X)> == 1);
    expect_close(gX(L3), all_of(0.5), "clip_gradient, 3 uses, shared", s);
    expect_close(gX(row_sums(0.3 * u + 0.3 * u + 0.3 * u)), all_of(0.9), "clip_gradient, 3 uses, unshared", s);
    expect_close(gX(row_sums(0.3 * c + 0.3 * c)), all_of(0.5), "clip_gradient, 2 uses, shared", s);
    expect_close(gX(row_sums(0.3 * u + 0.3 * u)), all_of(0.6), "clip_gradient, 2 uses, unshared", s);
    const auto q = tad::let<"q">(squared_rule(X));
    const auto qu = tad::per_use(squared_rule(X));
    expect_close(gX(row_sums(0.3 * q + 0.3 * q + 0.3 * q)), all_of(0.81), "dy * dy, 3 uses, shared", s);
    expect_close(gX(row_sums(0.3 * qu + 0.3 * qu + 0.3 * qu)), all_of(0.27), "dy * dy, 3 uses, unshared", s);
    expect_close(gX(row_sums(0.3 * q + 0.3 * q)), all_of(0.36), "dy * dy, 2 uses, shared", s);
    expect_close(gX(row_sums(0.3 * qu + 0.3 * qu)), all_of(0.18), "dy * dy, 2 uses, unshared", s);
    const auto o = tad::let<"o">(tad::override_gradients(tad::identity(X), identity_clip));
    const auto ou = tad::per_use(tad::override_gradients(tad::identity(X), identity_clip));
    expect_close(gX(row_sums(o + o + o)), all_of(0.1), "override, 3 uses, shared", s);
    expect_close(gX(row_sums(ou + ou + ou)), all_of(0.3), "override, 3 uses, unshared", s);
    expect_close(gX(row_sums(o + o)), all_of(0.1), "override, 2 uses, shared", s);
    // logsumexp of c + c: the value is sum_r lse(2 x_r).
    std::vector<double> want_lse(n);
    double lse_total = 0;
    for (std::size_t r = 0; r < s.rows && s.cols > 0; ++r) {
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, 2 * double(Xb[r * s.cols + j]));
      for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(2 * double(Xb[r * s.cols + j]) - m);
      lse_total += m + std::log(sum);
      for (std::size_t j = 0; j < s.cols; ++j)
        want_lse[r * s.cols + j] = clamp(2 * std::exp(2 * double(Xb[r * s.cols + j]) - m) / sum, -0.5, 0.5);
    }
    if (s.cols > 0) {  // a row of no elements has lse -inf: rows_without_elements_and_special_values
      const auto Lse = tad::sum(tad::logsumexp(c + c, tad::axis<1>));
      const auto [lv, lg] = tad::grad(Lse, X);
      BOOST_TEST(tad_test::close(double(lv), lse_total, tad_test::grad_tol<T>() * std::max(1.0, double(s.rows))));
      expect_close(std::vector<T>(lg.begin(), lg.end()), want_lse, "logsumexp(c + c, axis<1>), shared", s);
      std::vector<double> want_unshared(want_lse);
      for (std::size_t r = 0; r < s.rows; ++r) {
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t j = 0; j < s.cols; ++j) m = std::max(m, 2 * double(Xb[r * s.cols + j]));
        for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(2 * double(Xb[r * s.cols + j]) - m);
        for (std::size_t j = 0; j < s.cols; ++j)
          want_unshared[r * s.cols + j] = 2 * clamp(std::exp(2 * double(Xb[r * s.cols + j]) - m) / sum, -0.5, 0.5);
      }
      expect_close(gX(tad::sum(tad::logsumexp(u + u, tad::axis<1>))), want_unshared, "logsumexp(u + u, axis<1>), unshared",
                   s);
    }
    // Plain lets: z = X * w.
    std::vector<T> wt(s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) wt[j] = T(0.4 * std::cos(double(j)));
    auto w = tad::var<"w">(wt);
    const auto z = tad::let<"z">(X * w);
    std::vector<double> want_X(n), want_w(s.cols, 0.0);
    double want_value = 0;
    for (std::size_t r = 0; r < s.rows; ++r) {
      double a = 0;
      for (std::size_t j = 0; j < s.cols; ++j) {
        const double zz = double(Xb[r * s.cols + j]) * double(wt[j]);
        a += zz * zz + zz;
      }
      want_value += std::sin(a);
      for (std::size_t j = 0; j < s.cols; ++j) {
        const double zz = double(Xb[r * s.cols + j]) * double(wt[j]);
        const double dz = std::cos(a) * (2 * zz + 1);
        want_X[r * s.cols + j] = dz * double(wt[j]);
        want_w[j] += dz * double(Xb[r * s.cols + j]);
      }
    }
    const auto Lz = tad::sum(tad::sin(tad::sum(z * z + z, tad::axis<1>)));
    static_assert(tad::passes_v<decltype(Lz), decltype(X), decltype(w)> == 1);
    const auto [zv, zX, zw] = tad::grad(Lz, X, w);
    BOOST_TEST(tad_test::close(double(zv), want_value, tad_test::grad_tol<T>() * std::max(1.0, double(s.rows))));
    expect_close(std::vector<T>(zX.begin(), zX.end()), want_X, "sin(sum(z * z + z, axis<1>)), d/dX", s);
    std::vector<double> want_w_scaled(want_w);
    std::vector<T> got_w(zw.begin(), zw.end());
    for (std::size_t j = 0; j < s.cols; ++j) {  // a sum over rows: compared at the rows' scale
      want_w_scaled[j] /= std::max(1.0, double(s.rows));
      got_w[j] = T(double(got_w[j]) / std::max(1.0, double(s.rows)));
    }
    expect_close(got_w, want_w_scaled, "sin(sum(z * z + z, axis<1>)), d/dw", s);
    // softmax(z, axis<1>) weighted by G: dL/dz = s (G - sum(G s)) per row.
    if (s.cols > 0) {
      buffer<T> Gb(n, 2);
      tad_test::fill_uniform(Gb, 0, 1, 11);
      auto G = tad::constant(Gb.data(), s.rows, s.cols);
      const auto Ls = tad::sum(G * tad::softmax(z, tad::axis<1>));
      std::vector<double> sX(n), sw(s.cols, 0.0);
      for (std::size_t r = 0; r < s.rows; ++r) {
        std::vector<double> zr(s.cols), sm(s.cols);
        double m = -std::numeric_limits<double>::infinity(), sum = 0, gs = 0;
        for (std::size_t j = 0; j < s.cols; ++j) zr[j] = double(Xb[r * s.cols + j]) * double(wt[j]), m = std::max(m, zr[j]);
        for (std::size_t j = 0; j < s.cols; ++j) sum += std::exp(zr[j] - m);
        for (std::size_t j = 0; j < s.cols; ++j) sm[j] = std::exp(zr[j] - m) / sum, gs += double(Gb[r * s.cols + j]) * sm[j];
        for (std::size_t j = 0; j < s.cols; ++j) {
          const double dz = sm[j] * (double(Gb[r * s.cols + j]) - gs);
          sX[r * s.cols + j] = dz * double(wt[j]);
          sw[j] += dz * double(Xb[r * s.cols + j]);
        }
      }
      const auto [sv, gsX, gsw] = tad::grad(Ls, X, w);
      (void)sv;
      expect_close(std::vector<T>(gsX.begin(), gsX.end()), sX, "sum(G * softmax(z, axis<1>)), d/dX", s);
      expect_close(std::vector<T>(gsw.begin(), gsw.end()), sw, "sum(G * softmax(z, axis<1>)), d/dw", s);
    }
  }
}

BOOST_AUTO_TEST_CASE(row_wise_softmax_cross_entropy) {
  // mean(softmax_cross_entropy(Z, T)) over N rows of probability targets: row r's loss is
  // sum(t_r) lse(z_r) - dot(t_r, z_r), its gradient (sum(t_r) softmax(z_r) - t_r) / N; with
  // respect to the targets (lse(z_r) - z_r) / N. 21 x 5: three blocks of SIMD rows and a tail.
  const std::size_t N = 21, K = 5;
  tad::matrix<double> Zm(N, K), Tm(N, K);
  for (std::size_t r = 0; r < N; ++r) {
    double total = 0;
    for (std::size_t k = 0; k < K; ++k) {
      Zm(r, k) = std::sin(double(r * K + k)) * 3;
      Tm(r, k) = 1.0 + double((r + k) % 4);
      total += Tm(r, k);
    }
    for (std::size_t k = 0; k < K; ++k) Tm(r, k) /= total * (r % 2 == 0 ? 1.0 : 2.0);  // sums 1 or 1/2
  }
  auto Z = tad::var<"Z">(Zm);
  auto T = tad::var<"T">(Tm);
  const auto L = tad::mean(tad::softmax_cross_entropy(Z, T));
  static_assert(tad::passes_v<decltype(L), decltype(Z), decltype(T)> == 1);
  const auto [v, gZ, gT] = tad::grad(L, Z, T);
  double want = 0;
  for (std::size_t r = 0; r < N; ++r) {
    double m = -1e300, s = 0, st = 0, dot = 0;
    for (std::size_t k = 0; k < K; ++k) m = std::max(m, Zm(r, k));
    for (std::size_t k = 0; k < K; ++k) s += std::exp(Zm(r, k) - m), st += Tm(r, k), dot += Tm(r, k) * Zm(r, k);
    const double lse = m + std::log(s);
    want += (st * lse - dot) / double(N);
    for (std::size_t k = 0; k < K; ++k) {
      BOOST_TEST(gZ.data()[r * K + k] == (st * std::exp(Zm(r, k) - lse) - Tm(r, k)) / double(N), boost::test_tools::tolerance(1e-12));
      BOOST_TEST(gT.data()[r * K + k] == (lse - Zm(r, k)) / double(N), boost::test_tools::tolerance(1e-12));
    }
  }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(tad::to_string(tad::logsumexp(Z, tad::axis<1>)) == "logsumexp(Z, axis<1>)");
}

BOOST_AUTO_TEST_CASE(class_index_cross_entropy_and_pick) {
  // mean(softmax_cross_entropy(s * Z, labels)) with class indices: row r's loss is
  // lse(s z_r) - s z_r[l_r]; dL/dZ_rk = s (softmax(s z_r)_k - [k == l_r]) / N and
  // dL/ds = sum_r (sum_k softmax(s z_r)_k z_rk - z_r[l_r]) / N. 21 x 5: blocks and a tail. The
  // labels as int, as std::int64_t and through a std::span of std::size_t give one result.
  const std::size_t N = 21, K = 5;
  tad::matrix<double> Zm(N, K);
  std::vector<int> labels(N);
  for (std::size_t r = 0; r < N; ++r) {
    labels[r] = static_cast<int>((r * 3 + 1) % K);
    for (std::size_t k = 0; k < K; ++k) Zm(r, k) = std::cos(double(r * K + k) * 0.9) * 2;
  }
  const double sv = 1.5;
  auto Z = tad::var<"Z">(Zm);
  auto s = tad::var<"s">(sv);
  const auto L = tad::mean(tad::softmax_cross_entropy(s * Z, labels));
  static_assert(tad::passes_v<decltype(L), decltype(Z), decltype(s)> == 1);
  const auto [v, gZ, gs] = tad::grad(L, Z, s);
  double want = 0, want_s = 0;
  for (std::size_t r = 0; r < N; ++r) {
    double m = -1e300, total = 0, weighted = 0;
    for (std::size_t k = 0; k < K; ++k) m = std::max(m, sv * Zm(r, k));
    for (std::size_t k = 0; k < K; ++k) total += std::exp(sv * Zm(r, k) - m);
    const double lse = m + std::log(total);
    const auto l = static_cast<std::size_t>(labels[r]);
    want += (lse - sv * Zm(r, l)) / double(N);
    for (std::size_t k = 0; k < K; ++k) {
      const double p = std::exp(sv * Zm(r, k) - lse);
      weighted += p * Zm(r, k);
      BOOST_TEST(gZ.data()[r * K + k] == sv * (p - (k == l ? 1.0 : 0.0)) / double(N), boost::test_tools::tolerance(1e-12));
    }
    want_s += (weighted - Zm(r, l)) / double(N);
  }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(gs == want_s, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(tad::to_string(tad::pick(Z, labels)) == "pick(Z, labels)");
  const std::vector<std::int64_t> wide(labels.begin(), labels.end());
  const std::vector<std::size_t> unsigned_labels(labels.begin(), labels.end());
  BOOST_TEST(tad::value(tad::mean(tad::softmax_cross_entropy(s * Z, wide))) == want, boost::test_tools::tolerance(1e-13));
  const auto picked = tad::value(tad::pick(Z, std::span<const std::size_t>(unsigned_labels)));
  BOOST_TEST_REQUIRE(picked.size() == N);
  for (std::size_t r = 0; r < N; ++r) BOOST_TEST(picked[r] == Zm(r, unsigned_labels[r]));
}

BOOST_AUTO_TEST_CASE(pick_checks_its_labels_before_anything_is_written) {
  // A label outside [0, cols) is std::out_of_range, a count other than the rows a shape_error,
  // both before the gradient buffer is touched; no rows and no labels is an empty pick.
  tad::matrix<double> Zm(3, 4, 0.5);
  auto Z = tad::var<"Z">(Zm);
  std::vector<int> labels{0, 3, 1};
  const auto L = tad::sum(tad::softmax_cross_entropy(Z, labels));
  std::vector<double> g(12, 7.0);
  auto untouched = [&] { return std::all_of(g.begin(), g.end(), [](double x) { return x == 7.0; }); };
  labels[1] = 4;
  tad_test::expect_message<std::out_of_range>(
      [&] { (void)tad::grad_into(L, tad::wrt(Z, std::span<double>(g))); },
      "tad::pick(z, labels): label 4 of row 1 is not a column of z (0 <= label < 4)");
  BOOST_TEST(untouched());
  labels[1] = -1;
  BOOST_CHECK_THROW((void)tad::grad_into(L, tad::wrt(Z, std::span<double>(g))), std::out_of_range);
  BOOST_CHECK_THROW((void)tad::value(tad::pick(Z, labels)), std::out_of_range);  // the store pass
  BOOST_TEST(untouched());
  labels[1] = 3;
  const std::vector<int> two{0, 1};
  tad_test::expect_message<tad::shape_error>([&] { (void)tad::grad_into(tad::sum(tad::pick(Z, two)), tad::wrt(Z, std::span<double>(g))); },
                                             "tad::pick(z, labels): 2 labels for 3 rows of z (one class index per row)");
  BOOST_TEST(untouched());
  // Each row's loss is lse(0.5, ...) - 0.5 = log 4; the gradient 1/4 - [k == l].
  const double v = tad::grad_into(L, tad::wrt(Z, std::span<double>(g)));
  BOOST_TEST(v == 3 * std::log(4.0), boost::test_tools::tolerance(1e-14));
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t k = 0; k < 4; ++k)
      BOOST_TEST(g[r * 4 + k] == 0.25 - (static_cast<int>(k) == labels[r] ? 1.0 : 0.0), boost::test_tools::tolerance(1e-14));
  // A variable that only a pick reads: its gradient is 1 at each row's label and 0 elsewhere,
  // over whatever the buffer held (a gradient buffer is reused between steps; the pick's
  // sweep writes one element per row, the rest must be zeroed).
  const auto picked_only = tad::sum(tad::pick(Z * 2.0, labels));
  std::fill(g.begin(), g.end(), 7.0);
  BOOST_TEST(tad::grad_into(picked_only, tad::wrt(Z, std::span<double>(g))) == 3.0);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t k = 0; k < 4; ++k) BOOST_TEST(g[r * 4 + k] == (static_cast<int>(k) == labels[r] ? 2.0 : 0.0));
  const std::vector<double> none;
  const std::vector<int> no_labels;
  BOOST_TEST(tad::value(tad::sum(tad::pick(tad::constant(none.data(), 0, 4), no_labels))) == 0.0);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(tad::pick(tad::constant(none.data(), 2, 0), two))), std::out_of_range);
}

BOOST_AUTO_TEST_SUITE_END()
