// Every product form against closed forms (dA = dY B^T, dB = A^T dY by plain loops) and
// central differences of tad's own value: matmul of matrices in each layout (row-major,
// strided, column-major) and transposed, matrix-vector, vector-matrix, outer, products of
// products and of expressions, at sizes around the SIMD widths and Eigen's blocking.

#include "linalg/common.hpp"

#include <support/check.hpp>

#include <array>
#include <span>

namespace {

using namespace tad_test::linalg;
using tad_test::linalg::layout;

struct extents3 {
  std::size_t m, k, n;
};
const std::array<extents3, 5> sizes{{{1, 1, 1}, {3, 5, 7}, {16, 17, 15}, {64, 65, 63}, {257, 129, 131}}};

/// Central differences of tad::value(loss) at up to `count` elements of `s` (double only),
/// against the gradient `g` (row-major, s's logical shape).
template <class Loss, class G>
void check_central(const Loss& loss, stored<double>& s, const G& g, unsigned seed, int count = 6) {
  if (s.rows * s.cols == 0) return;
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::size_t> ri(0, s.rows - 1), ci(0, s.cols - 1);
  for (int t = 0; t < count; ++t) {
    const std::size_t i = ri(gen), j = ci(gen);
    const double x = s.at(i, j), h = 1e-6 * std::max(1.0, std::abs(x));
    s.at(i, j) = x + h;
    const double up = tad::value(loss);
    s.at(i, j) = x - h;
    const double down = tad::value(loss);
    s.at(i, j) = x;
    const double cd = (up - down) / (2 * h);
    BOOST_TEST(std::abs(cd - std::data(g)[i * s.cols + j]) <= 1e-5 * std::max(1.0, std::abs(cd)),
               "element (" << i << ", " << j << "): central difference " << cd << ", gradient "
                           << std::data(g)[i * s.cols + j]);
  }
}

/// sum(square(A B - C)) with A and B variables stored in layouts LA and LB, each given as
/// itself or (TA, TB) as the transpose of a stored transpose.
template <class T, layout LA, layout LB, bool TA, bool TB>
void check_matmul(const extents3& e) {
  BOOST_TEST_CONTEXT("A " << e.m << "x" << e.k << (TA ? " (transposed)" : "") << ", B " << e.k << "x" << e.n
                          << (TB ? " (transposed)" : "") << ", layouts " << int(LA) << int(LB)) {
    const dmat a = random_matrix(e.m, e.k, 1), b = random_matrix(e.k, e.n, 2), c = random_matrix(e.m, e.n, 3);
    stored<T> sa(TA ? transposed(a) : a, LA), sb(TB ? transposed(b) : b, LB), sc(c, layout::row);
    const auto va = var_of<"A", LA>(sa);
    const auto vb = var_of<"B", LB>(sb);
    const auto lhs = [&] {
      if constexpr (TA) return tad::transpose(va); else return va;
    }();
    const auto rhs = [&] {
      if constexpr (TB) return tad::transpose(vb); else return vb;
    }();
    const auto loss = tad::sum(tad::square(tad::matmul(lhs, rhs) - constant_of<layout::row>(sc)));
    const auto [v, ga, gb] = tad::grad(loss, va, vb);

    dmat r = product(a, b);
    double want = 0;
    for (std::size_t i = 0; i < r.v.size(); ++i) r.v[i] -= c.v[i], want += r.v[i] * r.v[i];
    dmat da = product(r, transposed(b)), db = product(transposed(a), r);
    for (double& x : da.v) x *= 2;
    for (double& x : db.v) x *= 2;
    BOOST_TEST(std::abs(static_cast<double>(v) - want) <= tolerance<T>(e.k) * std::max(1.0, want));
    BOOST_TEST(relative_error(ga, TA ? transposed(da) : da) <= tolerance<T>(e.n));
    BOOST_TEST(relative_error(gb, TB ? transposed(db) : db) <= tolerance<T>(e.m));
    if constexpr (std::is_same_v<T, double>) {
      if (e.m * e.k * e.n <= 20000) {
        check_central(loss, sa, ga, 4);
        check_central(loss, sb, gb, 5);
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(products)

// Every layout pair in double; in float (whose code differs only in the element type: each
// pair costs seconds of compile time) one of each kind.
BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_of_row_major_strided_and_column_major_variables, T, tad_test::reals) {
  for (const auto& e : sizes) {
    check_matmul<T, layout::row, layout::row, false, false>(e);
    check_matmul<T, layout::strided, layout::col, false, false>(e);
    if constexpr (std::is_same_v<T, double>) check_matmul<T, layout::col, layout::strided, false, false>(e);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_of_transposed_operands, T, tad_test::reals) {
  for (const auto& e : sizes) {
    check_matmul<T, layout::col, layout::row, true, true>(e);
    if constexpr (std::is_same_v<T, double>) {
      check_matmul<T, layout::row, layout::col, true, false>(e);
      check_matmul<T, layout::strided, layout::row, false, true>(e);
    }
  }
}

/// Matrix times vector, vector times matrix and outer products, with a contiguous and a
/// strided vector (a column of a matrix).
BOOST_AUTO_TEST_CASE_TEMPLATE(vectors_and_outer_products, T, tad_test::reals) {
  for (const auto& e : sizes) {
    BOOST_TEST_CONTEXT("m " << e.m << ", k " << e.k) {
      const dmat a = random_matrix(e.m, e.k, 6), x = random_matrix(e.k, 1, 7), u = random_matrix(e.m, 1, 8);
      const dmat cm = random_matrix(e.m, 1, 9), ck = random_matrix(e.k, 1, 10), cmk = random_matrix(e.m, e.k, 11);
      stored<T> sa(a, layout::col), sx(transposed(x), layout::row), sc(cm, layout::row), sck(ck, layout::row);
      // u as column 1 of an m x 3 row-major matrix: a strided vector.
      dmat uhost(e.m, 3);
      for (std::size_t i = 0; i < e.m; ++i) uhost(i, 1) = u(i, 0);
      stored<T> su(uhost, layout::row), scmk(cmk, layout::row);
      const auto va = var_of<"A", layout::col>(sa);
      const auto vx = tad::var<"x">(std::span<const T>(sx.data, e.k));
      const auto vu = tad::var<"u">(tad::column_of(static_cast<const T*>(su.data), e.m, 3, 1));
      const auto cvec = tad::constant(std::span<const T>(sc.data, e.m));
      const auto kvec = tad::constant(std::span<const T>(sck.data, e.k));

      // sum(square(A x - c)): dA = 2 r x^T, dx = 2 A^T r.
      {
        const auto [v, ga, gx] = tad::grad(tad::sum(tad::square(tad::matmul(va, vx) - cvec)), va, vx);
        dmat r = product(a, x);
        for (std::size_t i = 0; i < e.m; ++i) r.v[i] -= cm.v[i];
        dmat da = product(r, transposed(x)), dx = product(transposed(a), r);
        for (double& z : da.v) z *= 2;
        for (double& z : dx.v) z *= 2;
        BOOST_TEST(relative_error(ga, da) <= tolerance<T>(e.k));
        BOOST_TEST(relative_error(gx, dx) <= tolerance<T>(e.m));
        (void)v;
      }
      // sum(square(u^T A - d)) (u strided): dA = 2 u r^T, du = 2 A r.
      {
        const auto [v, gu, ga] = tad::grad(tad::sum(tad::square(tad::matmul(vu, va) - kvec)), vu, va);
        dmat r = product(transposed(u), a);
        for (std::size_t j = 0; j < e.k; ++j) r.v[j] -= ck.v[j];
        dmat da = product(u, r), du = product(a, transposed(r));
        for (double& z : da.v) z *= 2;
        for (double& z : du.v) z *= 2;
        BOOST_TEST(relative_error(ga, da) <= tolerance<T>(e.k));
        BOOST_TEST(relative_error(gu, du) <= tolerance<T>(e.k));
        (void)v;
      }
      // sum(square(outer(u, x) - C)): du = 2 R x, dx = 2 R^T u.
      {
        const auto [v, gu, gx] = tad::grad(tad::sum(tad::square(tad::outer(vu, vx) - constant_of<layout::row>(scmk))),
                                           vu, vx);
        dmat r = product(u, transposed(x));
        for (std::size_t i = 0; i < r.v.size(); ++i) r.v[i] -= cmk.v[i];
        dmat du = product(r, x), dx = product(transposed(r), u);
        for (double& z : du.v) z *= 2;
        for (double& z : dx.v) z *= 2;
        BOOST_TEST(relative_error(gu, du) <= tolerance<T>(e.k));
        BOOST_TEST(relative_error(gx, dx) <= tolerance<T>(e.m));
        (void)v;
      }
    }
  }
}

/// A product whose operands are a product and an expression: sum(exp(tanh(A) B) D) with
/// D's values as weights: dY2 = W, d(AB-part) through tanh by hand.
BOOST_AUTO_TEST_CASE_TEMPLATE(products_of_products_and_of_expressions, T, tad_test::reals) {
  for (const auto& e : sizes) {
    BOOST_TEST_CONTEXT("m " << e.m << ", k " << e.k << ", n " << e.n) {
      const dmat a = random_matrix(e.m, e.k, 12, 0.5), b = random_matrix(e.k, e.n, 13, 0.5);
      const dmat d = random_matrix(e.n, 2, 14, 0.5), w = random_matrix(e.m, 2, 15);
      stored<T> sa(a, layout::row), sb(b, layout::strided), sd(d, layout::col), sw(w, layout::row);
      const auto va = var_of<"A", layout::row>(sa);
      const auto vb = var_of<"B", layout::strided>(sb);
      const auto vd = var_of<"D", layout::col>(sd);
      // Y1 = tanh(A) B (an expression operand), Y2 = Y1 D (a product operand); L = sum(W * exp(Y2) / 4).
      const auto y2 = tad::matmul(tad::matmul(tad::tanh(va), vb), vd);
      const auto loss = tad::sum(constant_of<layout::row>(sw) * tad::exp(y2) * 0.25);
      const auto [v, ga, gb, gd] = tad::grad(loss, va, vb, vd);

      dmat ta = a;
      for (double& z : ta.v) z = std::tanh(z);
      const dmat y1 = product(ta, b), y = product(y1, d);
      dmat dy2(e.m, 2);
      double want = 0;
      for (std::size_t i = 0; i < dy2.v.size(); ++i) {
        dy2.v[i] = w.v[i] * std::exp(y.v[i]) * 0.25;
        want += dy2.v[i];
      }
      const dmat dd = product(transposed(y1), dy2), dy1 = product(dy2, transposed(d));
      const dmat db = product(transposed(ta), dy1);
      dmat da = product(dy1, transposed(b));
      for (std::size_t i = 0; i < da.v.size(); ++i) da.v[i] *= 1 - ta.v[i] * ta.v[i];
      BOOST_TEST(std::abs(static_cast<double>(v) - want) <= tolerance<T>(e.k) * std::max(1.0, std::abs(want)));
      BOOST_TEST(relative_error(ga, da) <= tolerance<T>(e.n * 2));
      BOOST_TEST(relative_error(gb, db) <= tolerance<T>(e.m * 2));
      BOOST_TEST(relative_error(gd, dd) <= tolerance<T>(e.m));
      if constexpr (std::is_same_v<T, double>) {
        if (e.m * e.k * e.n <= 20000) check_central(loss, sa, ga, 16);
      }
    }
  }
}

/// value and evaluate of product expressions: a matrix, a vector, and an expression of one.
BOOST_AUTO_TEST_CASE(values_of_product_expressions) {
  const dmat a = random_matrix(4, 3, 20), b = random_matrix(3, 5, 21);
  stored<double> sa(a, layout::row), sb(b, layout::col);
  const auto va = var_of<"A", layout::row>(sa);
  const auto cb = constant_of<layout::col>(sb);
  const dmat y = product(a, b);
  const tad::matrix<double> got = tad::value(tad::matmul(va, cb));
  BOOST_TEST(got.rows() == 4u);
  BOOST_TEST(got.cols() == 5u);
  BOOST_TEST(relative_error(got, y) <= 1e-14);
  tad::matrix<double> twice(4, 5);
  tad::evaluate(tad::matmul(va, cb) * 2.0, twice);
  dmat y2 = y;
  for (double& z : y2.v) z *= 2;
  BOOST_TEST(relative_error(twice, y2) <= 1e-14);
  const std::vector<double> x{1.0, -2.0, 0.5};
  const std::vector<double> ax = tad::value(tad::matmul(va, tad::constant(x)));
  BOOST_TEST_REQUIRE(ax.size() == 4u);
  for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(std::abs(ax[i] - (a(i, 0) - 2 * a(i, 1) + 0.5 * a(i, 2))) <= 1e-14);
}

BOOST_AUTO_TEST_SUITE_END()
