// Every product form against closed forms (dA = dY B^T, dB = A^T dY by plain loops) and
// central differences of tad's own value: matmul of matrices in each layout (row-major,
// strided, column-major) and transposed, matrix-vector, vector-matrix, outer, products of
// products and of expressions, at sizes around the SIMD widths and Eigen's blocking.

#include "linalg/common.hpp"

#include <support/check.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

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

/// Operand expressions the program renames to one form (eval/canonical.hpp) and whose products
/// are not the expression's first: L1 = sum(square(tanh(X W1 + b) tanh(U W2 + c) - C)) + sum(b * b)
/// (the right operand's product is product 1: its shape and buffer were once read from product
/// 0's), L2 = sum(square((tanh(X W1 + b) * b) V - C)) (b twice in one operand: one gradient),
/// and an operand holding a scalar variable and a column of a vector variable. Every gradient
/// against central differences of the value.
BOOST_AUTO_TEST_CASE(operands_of_one_form_and_products_after_the_first) {
  constexpr std::size_t m = 5, p = 3, k = 6, q = 4, n = 7;
  stored<double> sx(random_matrix(m, p, 40), layout::row), sw1(random_matrix(p, k, 41, 0.7), layout::row);
  stored<double> su(random_matrix(k, q, 42), layout::row), sw2(random_matrix(q, n, 43, 0.7), layout::col);
  stored<double> sb(random_matrix(1, k, 44, 0.5), layout::row), sc(random_matrix(1, n, 45, 0.5), layout::row);
  stored<double> sv(random_matrix(k, n, 46, 0.7), layout::strided), sy(random_matrix(m, n, 47), layout::row);
  const auto X = constant_of<layout::row>(sx);
  const auto U = constant_of<layout::row>(su);
  const auto W1 = var_of<"W1", layout::row>(sw1);
  const auto W2 = var_of<"W2", layout::col>(sw2);
  const auto V = var_of<"V", layout::strided>(sv);
  const auto b = tad::var<"b">(std::span<const double>(sb.data, k));
  const auto c = tad::var<"c">(std::span<const double>(sc.data, n));
  const auto C = constant_of<layout::row>(sy);
  const auto left = tad::tanh(tad::matmul(X, W1) + b);
  {
    const auto loss = tad::sum(tad::square(tad::matmul(left, tad::tanh(tad::matmul(U, W2) + c)) - C)) + tad::sum(b * b);
    const auto [v, gw1, gw2, gb, gc] = tad::grad(loss, W1, W2, b, c);
    BOOST_TEST(std::abs(v - tad::value(loss)) <= 1e-12 * std::max(1.0, std::abs(v)));
    check_central(loss, sw1, gw1, 48);
    check_central(loss, sw2, gw2, 49);
    check_central(loss, sb, gb, 50);
    check_central(loss, sc, gc, 51);
  }
  {
    const auto loss = tad::sum(tad::square(tad::matmul(left * b, V) - C));
    const auto [v, gw1, gb, gv] = tad::grad(loss, W1, b, V);
    (void)v;
    check_central(loss, sw1, gw1, 52);
    check_central(loss, sb, gb, 53);
    check_central(loss, sv, gv, 54);
  }
  {
    // A scalar variable and a column of a vector variable in an operand (both renamed).
    double s = 0.7;
    stored<double> sr(random_matrix(1, m, 55, 0.5), layout::row);
    const auto S = tad::var<"s">(s);
    const auto r = tad::var<"r">(std::span<const double>(sr.data, m));
    const auto loss =
        tad::sum(tad::square(tad::matmul(tad::tanh(tad::matmul(X, W1) * S + tad::as_column(r)), V) - C));
    const auto [v, gw1, gs, gr] = tad::grad(loss, W1, S, r);
    (void)v;
    check_central(loss, sw1, gw1, 56);
    check_central(loss, sr, gr, 57);
    const double h = 1e-6;
    s += h;
    const double up = tad::value(loss);
    s -= 2 * h;
    const double down = tad::value(loss);
    s += h;
    const double cd = (up - down) / (2 * h);
    BOOST_TEST(std::abs(cd - gs) <= 1e-5 * std::max(1.0, std::abs(cd)));
  }
}

namespace {
/// An m x n matrix in a padded buffer (leading dimension ld = inner extent + 3), row- or
/// column-major, as a read-only Eigen map with an outer stride.
template <bool RowMajor>
struct padded {
  using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, RowMajor ? Eigen::RowMajor : Eigen::ColMajor>;
  std::vector<double> buf;
  Eigen::Map<const matrix, 0, Eigen::OuterStride<>> map;
  padded(const dmat& a, std::size_t ld)
      : buf(std::max<std::size_t>(1, (RowMajor ? a.rows : a.cols) * ld), std::nan("")),
        map(buf.data(), static_cast<Eigen::Index>(a.rows), static_cast<Eigen::Index>(a.cols),
            Eigen::OuterStride<>(static_cast<Eigen::Index>(ld))) {
    for (std::size_t i = 0; i < a.rows; ++i)
      for (std::size_t j = 0; j < a.cols; ++j) buf[RowMajor ? i * ld + j : j * ld + i] = a(i, j);
  }
};

/// detail::assign_product<Add>(d, a * b) against the plain loop: d = (Add ? d0 : 0) + A B.
template <bool Add, class MA, class MB>
void check_assign_product(const MA& a, const MB& b, const dmat& da, const dmat& db, const dmat& d0) {
  dmat want = product(da, db);
  if constexpr (Add) {
    for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] += d0.v[i];
  }
  std::vector<double> out(d0.v);
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> d(
      out.data(), static_cast<Eigen::Index>(d0.rows), static_cast<Eigen::Index>(d0.cols));
  tad::detail::assign_product<Add>(d, a * b);
  double err = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double diff = std::abs(out[i] - want.v[i]);
    err = std::isnan(diff) ? std::numeric_limits<double>::infinity() : std::max(err, diff);  // a padding NaN read
  }
  BOOST_TEST(err <= 1e-12 * std::max<double>(1.0, static_cast<double>(da.cols)), "max error " << err);
}

template <bool RA, bool RB, bool TA, bool TB>
void check_kernel_layouts(std::size_t m, std::size_t k, std::size_t n) {
  BOOST_TEST_CONTEXT(m << "x" << k << "x" << n << ", A " << (RA ? "row" : "col") << (TA ? "^T" : "") << ", B "
                       << (RB ? "row" : "col") << (TB ? "^T" : "")) {
    const dmat a = random_matrix(m, k, 60), b = random_matrix(k, n, 61), d0 = random_matrix(m, n, 62);
    // A (or A^T, stored, then transposed back) with a padded leading dimension.
    const dmat sa = TA ? transposed(a) : a, sb = TB ? transposed(b) : b;
    const padded<RA> pa(sa, (RA ? sa.cols : sa.rows) + 3);
    const padded<RB> pb(sb, (RB ? sb.cols : sb.rows) + 3);
    const auto ea = [&] {
      if constexpr (TA) return pa.map.transpose(); else return pa.map;
    }();
    const auto eb = [&] {
      if constexpr (TB) return pb.map.transpose(); else return pb.map;
    }();
    check_assign_product<false>(ea, eb, a, b, d0);
    check_assign_product<true>(ea, eb, a, b, d0);
  }
}
}  // namespace

/// Eigen's GEMM and GEMV kernels as tad calls them (eval/eigen_products.hpp), against plain
/// loops: every pair of storage orders, as stored and transposed, with padded leading
/// dimensions; results of one row or one column (GEMV; its row-major kernel needs a unit-stride
/// vector, else GEMM runs), an empty depth, and both = and +=. Products whose extents sum to
/// less than 20 take tad's own small loop (the first six shapes but 6 x 0 x 7; it and 0 x 3 x 2
/// are empty, done before any kernel), the rest the kernels: 4 x 9 x 7 is the first size GEMM
/// takes, 1 x 12 x 9, 14 x 9 x 1 and 1 x 25 x 1 run GEMV.
BOOST_AUTO_TEST_CASE(products_on_eigens_kernels) {
  const std::array<extents3, 12> shapes{{{1, 1, 1},
                                         {1, 5, 7},
                                         {6, 5, 1},
                                         {1, 4, 1},
                                         {6, 0, 7},
                                         {3, 5, 7},
                                         {0, 3, 2},
                                         {4, 9, 7},
                                         {17, 9, 13},
                                         {1, 12, 9},
                                         {14, 9, 1},
                                         {1, 25, 1}}};
  for (const auto& e : shapes) {
    check_kernel_layouts<true, true, false, false>(e.m, e.k, e.n);
    check_kernel_layouts<true, false, false, false>(e.m, e.k, e.n);
    check_kernel_layouts<false, true, false, false>(e.m, e.k, e.n);
    check_kernel_layouts<false, false, false, false>(e.m, e.k, e.n);
    check_kernel_layouts<true, true, true, false>(e.m, e.k, e.n);
    check_kernel_layouts<true, false, false, true>(e.m, e.k, e.n);
    check_kernel_layouts<false, true, true, true>(e.m, e.k, e.n);
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
