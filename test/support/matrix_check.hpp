#pragma once
// Shared by test/eval/matrix.cpp and test/property/matrix_ops.cpp: matrix shapes around the
// SIMD widths, random unaligned matrix data, and check_elementwise, which checks
// sum(C * op(X, Y)) against the per-element formula (central differences, or the modifier's
// rule by hand) at every shape.
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <type_traits>
#include <vector>

namespace tad_test::matrix_check {

using tad_test::buffer;

struct shape {
  std::size_t rows, cols;
};
inline const std::vector<shape> shapes{{0, 5}, {5, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {300, 257}};

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

inline double central_x(elem f, double x, double y) {
  return tad_test::central([&](double t) { return f(t, y); }, x);
}
inline double central_y(elem f, double x, double y) {
  return tad_test::central([&](double t) { return f(x, t); }, y);
}

/// |a - b| <= tol * max(1, scale): a sum's rounding error grows with the sum of |terms|.
inline bool near(double a, double b, double tol, double scale) { return std::abs(a - b) <= tol * std::max(1.0, scale); }

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

/// sum(C * op(X, b)) at every shape, b a vector variable of length cols broadcast across X's
/// rows (Form::row; Form::column: b of length rows as `as_column(b)`, broadcast across X's
/// columns): its value against sum c f(x, b_j) (b_r), d/dX against c times the central
/// difference of f in x (or gx), d/db_j against the sum over the rows (columns) of c times the
/// central difference in y (or gy). With a `penalty{lambda}` argument the loss adds
/// `lambda * squared_norm(b)` before and after the sum (two losses), so b is also read in a
/// nest of its own (first touch in the row nest, or after it); the choice is made at compile
/// time, so no loss is instantiated unrun.
struct no_penalty {};
struct penalty {
  double lambda;
};
enum class form { row, column };
template <class T, form Form, class Op, class Penalty = no_penalty>
void check_broadcast(const char* what, Op op, elem f, elem_grad gx, elem_grad gy, domain dx, domain dy,
                     Penalty pen = {}) {
  constexpr bool penalized = std::is_same_v<Penalty, penalty>;
  constexpr bool column = Form == form::column;
  static_assert(penalized || std::is_same_v<Penalty, no_penalty>, "the last argument is penalty{lambda} or nothing");
  double lambda = 0;
  if constexpr (penalized) lambda = pen.lambda;
  for (const shape& s : shapes) {
    const std::size_t n = s.rows * s.cols, nb = column ? s.rows : s.cols;
    const buffer<T> xs = make<T>(n, dx, 1, 1), bs = make<T>(nb, dy, 2, 3), cs = make<T>(n, {-1, 1}, 3, 2);
    auto X = tad::var<"X">(xs.data(), s.rows, s.cols);
    auto b = tad::var<"b">(bs.cspan());
    auto C = tad::constant(cs.data(), s.rows, s.cols);
    double want = 0, scale = 0;
    std::vector<double> wx(n), wb(nb);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t j = 0; j < s.cols; ++j) {
        const std::size_t i = r * s.cols + j, k = column ? r : j;
        const double x = double(xs[i]), y = double(bs[k]), c = double(cs[i]);
        want += c * f(x, y);
        scale += std::abs(c * f(x, y));
        wx[i] = gx ? gx(x, y, c) : c * central_x(f, x, y);
        wb[k] += gy ? gy(x, y, c) : c * central_y(f, x, y);
      }
    for (std::size_t k = 0; k < nb; ++k) {
      want += lambda * double(bs[k]) * double(bs[k]);
      wb[k] += 2 * lambda * double(bs[k]);
    }
    auto check = [&](const auto& loss) {
      const auto [v, gX, gb] = tad::grad(loss, X, b);
      BOOST_TEST(near(double(v), want, std::is_same_v<T, float> ? 1e-4 : 1e-12, scale),
                 what << " value at " << s.rows << " x " << s.cols << ": tad " << v << ", expected " << want);
      expect_matrix(gX, s, wx, what, "X");
      std::size_t bad = 0;
      // Each d/db_k sums cols (rows) terms: its tolerance grows with them.
      const double tol = tad_test::grad_tol<T>() * std::max(1.0, std::sqrt(double(column ? s.cols : s.rows)));
      for (std::size_t k = 0; k < nb; ++k) bad += !tad_test::close(double(gb[k]), wb[k], tol);
      BOOST_TEST(gb.size() == nb);
      BOOST_TEST(bad == 0u, what << " d/db at " << s.rows << " x " << s.cols << ": " << bad << " elements differ");
    };
    const auto bb = [&] {
      if constexpr (column) return tad::as_column(b); else return b;
    }();
    if constexpr (!penalized) {
      check(tad::sum(C * op(X, bb)));
    } else {
      check(tad::sum(C * op(X, bb)) + lambda * tad::squared_norm(b));
      check(lambda * tad::squared_norm(b) + tad::sum(C * op(X, bb)));
    }
  }
}
template <class T, class Op, class Penalty = no_penalty>
void check_row_broadcast(const char* what, Op op, elem f, elem_grad gx, elem_grad gy, domain dx, domain dy,
                         Penalty pen = {}) {
  check_broadcast<T, form::row>(what, op, f, gx, gy, dx, dy, pen);
}
template <class T, class Op, class Penalty = no_penalty>
void check_column_broadcast(const char* what, Op op, elem f, elem_grad gx, elem_grad gy, domain dx, domain dy,
                            Penalty pen = {}) {
  check_broadcast<T, form::column>(what, op, f, gx, gy, dx, dy, pen);
}

struct times3 {
  auto operator()(auto dy, auto /*v*/, auto /*out*/) const { return 3 * dy; }
};

inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

}  // namespace tad_test::matrix_check
