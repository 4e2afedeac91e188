// Several lengths in one expression (issue 15, item 3): each reduction runs over its own
// argument's length; arrays combined elementwise must agree. Expected values are the closed
// forms of each loss, written out per element below (never tad's own output), at the lengths
// around the SIMD widths and at unaligned starting addresses.
#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::close;
using tad_test::grad_tol;
using tad_test::lengths;
using tad_test::reals;

namespace {

/// One assertion for a whole array.
template <class T>
void expect_all(std::span<const T> got, const std::vector<double>& want, double tol, const char* what) {
  BOOST_TEST(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) bad += close(double(got[i]), want[i], tol) ? 0u : 1u;
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << got.size() << " elements differ");
}

/// Lengths of the second array, paired with each of `lengths`: a different one, crossing the
/// SIMD widths differently.
std::size_t other_length(std::size_t n) { return n == 1000 ? 37 : (n * 3 + 2) % 19; }

}  // namespace

BOOST_AUTO_TEST_SUITE(lengths_)

// The first example: a data term over r plus a penalty on w of another length.
// L = sum(r_i^2) + 0.01 sum(w_j^2): dL/dr_i = 2 r_i, dL/dw_j = 0.02 w_j.
BOOST_AUTO_TEST_CASE_TEMPLATE(data_term_plus_penalty_of_another_length, T, reals) {
  for (std::size_t n : lengths) {
    const std::size_t m = other_length(n);
    buffer<T> rs(n, 1), ws(m, 3), gr(n, 2), gw(m, 1);
    tad_test::fill_uniform(rs, -2, 2, 1);
    tad_test::fill_uniform(ws, -3, 3, 2);
    auto r = tad::var<"r">(rs.cspan());
    auto w = tad::var<"w">(ws.cspan());
    auto loss = tad::sum(tad::square(r)) + T(0.01) * tad::squared_norm(w);
    static_assert(tad::detail::plan<decltype(loss), tad::detail::wrt_list<decltype(r), decltype(w)>>::passes == 2,
                  "one fused loop per length");
    const T v = tad::grad_into(loss, tad::wrt(r, gr.span()), tad::wrt(w, gw.span()));
    double want = 0;
    std::vector<double> wr(n), ww(m);
    for (std::size_t i = 0; i < n; ++i) {
      want += double(rs[i]) * double(rs[i]);
      wr[i] = 2 * double(rs[i]);
    }
    for (std::size_t j = 0; j < m; ++j) {
      want += 0.01 * double(ws[j]) * double(ws[j]);
      ww[j] = 0.02 * double(ws[j]);
    }
    BOOST_TEST(close(double(v), want, grad_tol<T>()), "n = " << n << ", m = " << m);
    expect_all<T>(gr.cspan(), wr, grad_tol<T>(), "dL/dr");
    expect_all<T>(gw.cspan(), ww, grad_tol<T>(), "dL/dw");
    BOOST_TEST(close(double(tad::value(loss)), want, grad_tol<T>()));
  }
}

// A regression over x, y (length n) with a per-sample parameter p (length n), penalties on p and
// on a second parameter q (length m) and a scalar bias b in both:
// L = 0.5 sum((p_i x_i + b - y_i)^2) + 0.1 sum(p_i^2) + 0.3 sum((q_j - b)^2)
// dL/dp_i = (p_i x_i + b - y_i) x_i + 0.2 p_i, dL/dq_j = 0.6 (q_j - b),
// dL/db = sum_i (p_i x_i + b - y_i) - 0.6 sum_j (q_j - b).
BOOST_AUTO_TEST_CASE_TEMPLATE(three_parameters_two_lengths_and_a_shared_scalar, T, reals) {
  for (std::size_t n : lengths) {
    const std::size_t m = other_length(n);
    buffer<T> xs(n, 1), ys(n, 2), ps(n, 3), qs(m, 1), gp(n, 2), gq(m, 3);
    tad_test::fill_uniform(xs, -1, 1, 3);
    tad_test::fill_uniform(ys, -1, 1, 4);
    tad_test::fill_uniform(ps, -1, 1, 5);
    tad_test::fill_uniform(qs, -1, 1, 6);
    T bv = T(0.25), gb = T(7);
    auto x = tad::constant(xs.cspan());
    auto y = tad::constant(ys.cspan());
    auto p = tad::var<"p">(ps.cspan());
    auto q = tad::var<"q">(qs.cspan());
    auto b = tad::var<"b">(bv);
    auto loss = T(0.5) * tad::sum(tad::square(p * x + b - y)) + T(0.1) * tad::squared_norm(p) +
                T(0.3) * tad::squared_norm(q - b);
    const T v = tad::grad_into(loss, tad::wrt(p, gp.span()), tad::wrt(q, gq.span()), tad::wrt(b, gb));
    double want = 0, wb = 0;
    std::vector<double> wp(n), wq(m);
    for (std::size_t i = 0; i < n; ++i) {
      const double res = double(ps[i]) * double(xs[i]) + double(bv) - double(ys[i]);
      want += 0.5 * res * res + 0.1 * double(ps[i]) * double(ps[i]);
      wp[i] = res * double(xs[i]) + 0.2 * double(ps[i]);
      wb += res;
    }
    for (std::size_t j = 0; j < m; ++j) {
      const double d = double(qs[j]) - double(bv);
      want += 0.3 * d * d;
      wq[j] = 0.6 * d;
      wb -= 0.6 * d;
    }
    BOOST_TEST(close(double(v), want, grad_tol<T>()), "n = " << n << ", m = " << m);
    expect_all<T>(gp.cspan(), wp, grad_tol<T>(), "dL/dp");
    expect_all<T>(gq.cspan(), wq, grad_tol<T>(), "dL/dq");
    BOOST_TEST(close(double(gb), wb, grad_tol<T>() * 10));
  }
}

// mean divides by its own argument's length: L = mean(x) * mean(y),
// dL/dx_i = mean(y) / n, dL/dy_j = mean(x) / m. And sum(x + 2) + sum(y + 3) pulls the constants
// out of both loops, each multiplied by its own length: sum(x) + 2n + sum(y) + 3m.
BOOST_AUTO_TEST_CASE_TEMPLATE(mean_and_pulled_out_constants_use_their_own_length, T, reals) {
  for (std::size_t n : std::vector<std::size_t>{1, 3, 8, 17, 1000}) {
    const std::size_t m = other_length(n) + 1;
    buffer<T> xs(n, 1), ys(m, 2);
    tad_test::fill_uniform(xs, -1, 2, 7);
    tad_test::fill_uniform(ys, -2, 1, 8);
    auto x = tad::var<"x">(xs.cspan());
    auto y = tad::var<"y">(ys.cspan());
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < n; ++i) mx += double(xs[i]) / double(n);
    for (std::size_t j = 0; j < m; ++j) my += double(ys[j]) / double(m);
    auto [v, gx, gy] = tad::grad(tad::mean(x) * tad::mean(y), x, y);
    BOOST_TEST(close(double(v), mx * my, grad_tol<T>()));
    expect_all<T>(std::span<const T>(gx), std::vector<double>(n, my / double(n)), grad_tol<T>(), "dL/dx");
    expect_all<T>(std::span<const T>(gy), std::vector<double>(m, mx / double(m)), grad_tol<T>(), "dL/dy");
    const double sums = mx * double(n) + 2.0 * double(n) + my * double(m) + 3.0 * double(m);
    BOOST_TEST(close(double(tad::value(tad::sum(x + T(2)) + tad::sum(y + T(3)))), sums, grad_tol<T>()));
  }
}

// Nested reductions over different lengths (two levels, two nests each):
// L = sum((w_j - mean(x))^2), w of length m, x of length n:
// dL/dw_j = 2 (w_j - mean(x)), dL/dx_i = -2 sum_j (w_j - mean(x)) / n.
BOOST_AUTO_TEST_CASE_TEMPLATE(nested_reductions_over_different_lengths, T, reals) {
  for (std::size_t n : std::vector<std::size_t>{1, 4, 9, 16, 1000}) {
    const std::size_t m = other_length(n) + 1;
    buffer<T> xs(n, 1), ws(m, 3), gx(n, 1), gw(m, 2);
    tad_test::fill_uniform(xs, -1, 1, 9);
    tad_test::fill_uniform(ws, -1, 1, 10);
    auto x = tad::var<"x">(xs.cspan());
    auto w = tad::var<"w">(ws.cspan());
    const T v = tad::grad_into(tad::sum(tad::square(w - tad::mean(x))), tad::wrt(x, gx.span()), tad::wrt(w, gw.span()));
    double mx = 0, want = 0, s = 0;
    for (std::size_t i = 0; i < n; ++i) mx += double(xs[i]) / double(n);
    std::vector<double> ww(m);
    for (std::size_t j = 0; j < m; ++j) {
      const double d = double(ws[j]) - mx;
      want += d * d;
      ww[j] = 2 * d;
      s += d;
    }
    BOOST_TEST(close(double(v), want, grad_tol<T>()));
    expect_all<T>(gw.cspan(), ww, grad_tol<T>(), "dL/dw");
    expect_all<T>(gx.cspan(), std::vector<double>(n, -2 * s / double(n)), grad_tol<T>(), "dL/dx");
  }
}

// The scaled schedule (log(sum(exp(x)))) next to a reduction of another length that needs no
// gradient: L = log(sum(exp(x))) + max(c), dL/dx_i = softmax(x)_i.
BOOST_AUTO_TEST_CASE_TEMPLATE(scaled_pass_next_to_another_length, T, reals) {
  for (std::size_t n : std::vector<std::size_t>{1, 5, 8, 17, 1000}) {
    const std::size_t m = other_length(n) + 1;
    buffer<T> xs(n, 1), cs(m, 2), gx(n, 3);
    tad_test::fill_uniform(xs, -1, 1, 11);
    tad_test::fill_uniform(cs, -1, 1, 12);
    auto x = tad::var<"x">(xs.cspan());
    auto c = tad::constant(cs.cspan());
    auto loss = tad::log(tad::sum(tad::exp(x))) + tad::max(c);
    static_assert(tad::detail::plan<decltype(loss), tad::detail::wrt_list<decltype(x)>>::scaled);
    const T v = tad::grad_into(loss, tad::wrt(x, gx.span()));
    double z = 0, cmax = -INFINITY;
    for (std::size_t i = 0; i < n; ++i) z += std::exp(double(xs[i]));
    for (std::size_t j = 0; j < m; ++j) cmax = std::max(cmax, double(cs[j]));
    std::vector<double> wx(n);
    for (std::size_t i = 0; i < n; ++i) wx[i] = std::exp(double(xs[i])) / z;
    BOOST_TEST(close(double(v), std::log(z) + cmax, grad_tol<T>()));
    expect_all<T>(gx.cspan(), wx, grad_tol<T>(), "dL/dx");
  }
}

// An array-valued expression with a reduction of another length inside: x * sum(y).
// evaluate: x_i sum(y); vjp with seed s: dx_i = s_i sum(y), dy_j = sum_i s_i x_i.
BOOST_AUTO_TEST_CASE(array_expression_with_a_reduction_of_another_length) {
  std::vector<double> xs{1, -2, 3, 0.5, 4}, ys{0.5, 1.5, -1}, seed{1, 2, 3, 4, 5}, out(5);
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
  tad::evaluate(x * tad::sum(y), out);
  for (std::size_t i = 0; i < 5; ++i) BOOST_TEST(out[i] == xs[i] * 1.0);
  auto [v, gx, gy] = tad::vjp(x * tad::sum(y), seed, x, y);
  const double sx = 1 - 4 + 9 + 2 + 20;  // sum_i s_i x_i
  BOOST_TEST(close(v, sx * 1.0, 1e-12));
  for (std::size_t i = 0; i < 5; ++i) BOOST_TEST(close(gx[i], seed[i] * 1.0, 1e-12));
  for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(close(gy[j], sx, 1e-12));
  std::vector<double> short_seed{1, 2, 3};
  BOOST_CHECK_THROW((void)tad::vjp(x * tad::sum(y), short_seed, x), tad::shape_error);
}

// One variable is one length wherever it appears; a scalar variable collects from every loop:
// L = sum(s x) + sum(s y) + sum(x^2): ds = sum(x) + sum(y), dx_i = s + 2 x_i, dy_j = s.
BOOST_AUTO_TEST_CASE(a_variable_in_several_reductions_and_a_scalar_in_every_loop) {
  std::vector<double> xs{1, 2, 3, 4, 5, 6, 7, 8, 9}, ys{-1, 0.5, 2};
  double sv = 1.5;
  auto x = tad::var<"x">(xs);
  auto y = tad::var<"y">(ys);
  auto s = tad::var<"s">(sv);
  auto loss = tad::sum(s * x) + tad::sum(s * y) + tad::sum(tad::square(x));
  auto [v, gs, gx, gy] = tad::grad(loss, s, x, y);
  BOOST_TEST(close(v, 1.5 * 45 + 1.5 * 1.5 + 285, 1e-12));
  BOOST_TEST(close(gs, 45 + 1.5, 1e-12));
  for (std::size_t i = 0; i < 9; ++i) BOOST_TEST(close(gx[i], 1.5 + 2 * xs[i], 1e-12));
  for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(close(gy[j], 1.5, 1e-12));
  // Two occurrences of x must still agree: a second x of another length is a shape error.
  std::vector<double> other{1, 2};
  auto x2 = tad::var<"x">(other);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(x) + tad::sum(x2)), std::exception);
}

// max/min reject an empty array per loop: max(x) with x empty throws even when another
// length is not empty, and an empty array elsewhere does not make max throw.
BOOST_AUTO_TEST_CASE(empty_max_is_rejected_per_length) {
  std::vector<double> none, some{1, 3, 2};
  auto e = tad::var<"e">(none);
  auto s = tad::var<"s">(some);
  BOOST_CHECK_THROW((void)tad::value(tad::max(e) + tad::sum(s)), std::domain_error);
  BOOST_TEST(tad::value(tad::max(s) + tad::sum(e)) == 3.0);
  auto [v, ge, gs] = tad::grad(tad::max(s) + tad::sum(e), e, s);
  BOOST_TEST(v == 3.0);
  BOOST_TEST(ge.empty());
  BOOST_TEST(gs == std::vector<double>({0, 1, 0}), boost::test_tools::per_element());
}

// Repeated evaluations over two lengths allocate nothing.
BOOST_AUTO_TEST_CASE(grad_into_over_two_lengths_allocates_nothing) {
  std::vector<double> rs(100, 0.5), ws(7, 2.0), gr(100), gw(7);
  auto r = tad::var<"r">(rs);
  auto w = tad::var<"w">(ws);
  auto loss = tad::sum(tad::square(r)) + 0.01 * tad::squared_norm(w);
  double v = 0;
  tad_test::alloc_counter::start();
  for (int k = 0; k < 10; ++k) v += tad::grad_into(loss, tad::wrt(r, gr), tad::wrt(w, gw));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(close(v, 10 * (100 * 0.25 + 0.01 * 7 * 4), 1e-12));
  BOOST_TEST(close(gw[3], 0.04, 1e-12));
}

BOOST_AUTO_TEST_SUITE_END()
