// override_gradients with a rule for a product (tad::matmul_op, tad::outer_op): the rule gets
// dY, A, B, Y as Eigen expressions and returns tad::adjoints{dA, dB}. Each case against the
// backward derived by hand and computed with plain loops (linalg/common.hpp): the default rule,
// a rule reading Y, feedback alignment on a head (the layer below keeps its own rule), a
// transposed operand, tad::zero for an inner product and for an operand expression (with a
// workspace full of NaN: nothing stale is read), outer and matrix-vector, and a wrong shape.

// Eigen checks its own allocations where a test forbids them.
#define EIGEN_RUNTIME_NO_MALLOC
#include "linalg/common.hpp"

#include <Eigen/Core>

#include <boost/hana.hpp>

#include <support/alloc_counter.hpp>
#include <support/check.hpp>

#include <array>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace {

namespace hana = boost::hana;
using namespace tad_test::linalg;
using tad_test::linalg::layout;

constexpr std::size_t m_ = 7, k_ = 5, n_ = 3;

/// The default rule, written as a user would.
constexpr auto true_rule = [](const auto& dy, const auto& a, const auto& b, const auto&) {
  return tad::adjoints{dy * b.transpose(), a.transpose() * dy};
};
template <class Rule>
auto matmul_rule(const Rule& r) {
  return hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, r));
}

/// dL/dY of L = sum(square(Y - T)) / 2: Y - T.
dmat residual(const dmat& y, const dmat& t) {
  dmat r = y;
  for (std::size_t i = 0; i < r.v.size(); ++i) r.v[i] -= t.v[i];
  return r;
}
dmat scaled(dmat a, double s) {
  for (double& x : a.v) x *= s;
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(linalg_override)

BOOST_AUTO_TEST_CASE_TEMPLATE(the_default_rule_and_a_rule_that_reads_y, T, tad_test::reals) {
  const dmat x = random_matrix(m_, k_, 1), w = random_matrix(k_, n_, 2), t = random_matrix(m_, n_, 3);
  stored<T> sx{x, layout::row}, sw{w, layout::col}, st{t, layout::strided};
  const auto X = constant_of<layout::row>(sx);
  const auto W = var_of<"W", layout::col>(sw);
  const auto Tg = constant_of<layout::strided>(st);
  const dmat y = product(x, w), dy = residual(y, t);
  // The rule that is the product's own derivative: dW = X^T (XW - T).
  {
    const auto loss = tad::sum(tad::square(tad::override_gradients(tad::matmul(X, W), matmul_rule(true_rule)) - Tg)) * T(0.5);
    auto [v, g] = tad::grad(loss, W);
    BOOST_TEST(relative_error(g, product(transposed(x), dy)) <= tolerance<T>(m_));
    (void)v;
  }
  // A rule of Y (the product's value): dW = X^T (dY .* Y).
  {
    const auto rule = [](const auto& dy2, const auto& a, const auto&, const auto& yv) {
      return tad::adjoints{tad::zero{}, a.transpose() * dy2.cwiseProduct(yv)};
    };
    const auto loss = tad::sum(tad::square(tad::override_gradients(tad::matmul(X, W), matmul_rule(rule)) - Tg)) * T(0.5);
    auto [v, g] = tad::grad(loss, W);
    dmat dyy = dy;
    for (std::size_t i = 0; i < dyy.v.size(); ++i) dyy.v[i] *= y.v[i];
    BOOST_TEST(relative_error(g, product(transposed(x), dyy)) <= tolerance<T>(m_));
    (void)v;
  }
}

// Feedback alignment (Lillicrap et al., 2016): the head's dA is dY R with a fixed random R in
// place of W2^T; dW2 keeps h^T dY. The scope covers every product in it, the layer below too:
// an inner scope with the true rule gives that one back its own (the inner scope wins).
BOOST_AUTO_TEST_CASE_TEMPLATE(feedback_alignment_on_a_head, T, tad_test::reals) {
  const std::size_t hid = 17;
  const dmat x = random_matrix(m_, k_, 4), w1 = random_matrix(k_, hid, 5, 0.6), w2 = random_matrix(hid, n_, 6, 0.6);
  const dmat t = random_matrix(m_, n_, 7), rf = random_matrix(n_, hid, 8);
  stored<T> sx{x, layout::row}, sw1{w1, layout::row}, sw2{w2, layout::strided}, st{t, layout::row};
  const auto X = constant_of<layout::row>(sx);
  const auto W1 = var_of<"W1", layout::row>(sw1);
  const auto W2 = var_of<"W2", layout::strided>(sw2);
  const auto Tg = constant_of<layout::row>(st);
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> R(n_, hid);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t j = 0; j < hid; ++j) R(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = static_cast<T>(rf(i, j));
  const auto feedback = [&R](const auto& dy, const auto& a, const auto&, const auto&) {
    return tad::adjoints{dy * R, a.transpose() * dy};
  };
  const auto h = tad::tanh(tad::override_gradients(tad::matmul(X, W1), matmul_rule(true_rule)));
  const auto loss = tad::sum(tad::square(tad::override_gradients(tad::matmul(h, W2), matmul_rule(feedback)) - Tg)) * T(0.5);
  tad::program p(loss);
  tad::matrix<T> g1(k_, hid), g2(hid, n_);
  (void)p.grad_into(tad::wrt(W1, g1), tad::wrt(W2, g2));
  // By hand.
  dmat hv = product(x, w1);
  for (double& v : hv.v) v = std::tanh(v);
  const dmat dy = residual(product(hv, w2), t);
  dmat dh = product(dy, rf);
  for (std::size_t i = 0; i < dh.v.size(); ++i) dh.v[i] *= 1 - hv.v[i] * hv.v[i];
  BOOST_TEST(relative_error(g2, product(transposed(hv), dy)) <= tolerance<T>(m_));
  BOOST_TEST(relative_error(g1, product(transposed(x), dh)) <= tolerance<T>(m_ * hid));
  // Not the true gradient: without the override dW1 differs.
  auto [v, g1_true] = tad::grad(tad::sum(tad::square(tad::matmul(tad::tanh(tad::matmul(X, W1)), W2) - Tg)) * T(0.5), W1);
  (void)v;
  BOOST_TEST(relative_error(g1_true, product(transposed(x), dh)) > 1e-2);
}

// A transposed operand: the rule sees A = W^T (as multiplied) and its dA is transposed back.
BOOST_AUTO_TEST_CASE(a_transposed_operand) {
  const dmat w = random_matrix(k_, m_, 9), x = random_matrix(k_, n_, 10), t = random_matrix(m_, n_, 11);
  stored<double> sw{w, layout::strided}, sx{x, layout::col}, st{t, layout::row};
  const auto W = var_of<"W", layout::strided>(sw);
  const auto X = var_of<"X", layout::col>(sx);
  const auto Tg = constant_of<layout::row>(st);
  const auto doubled = [](const auto& dy, const auto& a, const auto& b, const auto&) {
    BOOST_TEST(a.rows() == static_cast<Eigen::Index>(m_));  // W^T: m x k
    return tad::adjoints{2.0 * (dy * b.transpose()), a.transpose() * dy};
  };
  const auto loss = tad::sum(tad::square(tad::override_gradients(tad::matmul(tad::transpose(W), X), matmul_rule(doubled)) - Tg)) * 0.5;
  auto [v, gw, gx] = tad::grad(loss, W, X);
  (void)v;
  const dmat dy = residual(product(transposed(w), x), t);
  BOOST_TEST(relative_error(gw, scaled(product(x, transposed(dy)), 2.0)) <= tolerance<double>(n_));  // (2 dY X^T)^T
  BOOST_TEST(relative_error(gx, product(w, dy)) <= tolerance<double>(m_));
}

// An overridden product in a program whose gradient buffers go through staging: a block of a
// column-major matrix (A's gradient, written by the rule through the operand's path) and a
// strided vector (b's, from the engine's run around the product). Padding stays NaN.
BOOST_AUTO_TEST_CASE(an_overridden_product_with_staged_gradient_buffers) {
  const dmat a = random_matrix(m_, k_, 21), x = random_matrix(k_, n_, 22), t = random_matrix(m_, n_, 23);
  std::vector<double> av = a.v, bv(n_, 0.25);
  const auto A = tad::var<"A">(av.data(), m_, k_);
  const auto X = tad::constant(x.v.data(), k_, n_);
  const auto b = tad::var<"b">(std::span<const double>(bv));
  const auto Tg = tad::constant(t.v.data(), m_, n_);
  const auto tripled = [](const auto& dy, const auto& lhs, const auto& rhs, const auto&) {
    return tad::adjoints{3.0 * (dy * rhs.transpose()), lhs.transpose() * dy};
  };
  const tad::program p(tad::sum(tad::square(tad::override_gradients(tad::matmul(A, X), matmul_rule(tripled)) + b - Tg)) * 0.5);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Eigen::MatrixXd big = Eigen::MatrixXd::Constant(m_ + 2, k_ + 1, nan);  // A's gradient in the block (1, 1)
  auto block = big.block(1, 1, m_, k_);
  Eigen::VectorXd host = Eigen::VectorXd::Constant(2 * n_, nan);  // b's gradient at every other element
  Eigen::Map<Eigen::VectorXd, 0, Eigen::InnerStride<2>> gb(host.data(), n_);
  std::vector<double> ws(p.workspace_size(), nan);
  (void)p.grad_into(ws, tad::wrt(A, block), tad::wrt(b, gb));
  // Y = A X + b (b added to every row), dY = Y - T; dA = 3 dY X^T (the rule), db = column sums of dY.
  dmat y = product(a, x);
  for (std::size_t i = 0; i < m_; ++i)
    for (std::size_t j = 0; j < n_; ++j) y(i, j) += bv[j];
  const dmat dy = residual(y, t);
  const dmat want = scaled(product(dy, transposed(x)), 3.0);
  for (Eigen::Index i = 0; i < big.rows(); ++i)
    for (Eigen::Index j = 0; j < big.cols(); ++j) {
      const bool inside = i >= 1 && i <= static_cast<Eigen::Index>(m_) && j >= 1 && j <= static_cast<Eigen::Index>(k_);
      if (inside) BOOST_TEST(std::abs(big(i, j) - want(static_cast<std::size_t>(i - 1), static_cast<std::size_t>(j - 1))) <= 1e-12);
      else BOOST_TEST(std::isnan(big(i, j)));
    }
  for (std::size_t j = 0; j < n_; ++j) {
    double s = 0;
    for (std::size_t i = 0; i < m_; ++i) s += dy(i, j);
    BOOST_TEST(std::abs(host(static_cast<Eigen::Index>(2 * j)) - s) <= 1e-12);
    BOOST_TEST(std::isnan(host(static_cast<Eigen::Index>(2 * j + 1))));
  }
}

// tad::zero for an operand: an inner product's adjoint is zeroed (not left from the
// workspace), an operand expression gets nothing. The workspace is full of NaN.
BOOST_AUTO_TEST_CASE_TEMPLATE(zero_for_an_inner_product_and_for_an_operand_expression, T, tad_test::reals) {
  const std::size_t hid = 4;
  const dmat x = random_matrix(m_, k_, 12), w1 = random_matrix(k_, hid, 13), w2 = random_matrix(hid, n_, 14);
  stored<T> sx{x, layout::row}, sw1{w1, layout::row}, sw2{w2, layout::row};
  const auto X = constant_of<layout::row>(sx);
  const auto W1 = var_of<"W1", layout::row>(sw1);
  const auto W2 = var_of<"W2", layout::row>(sw2);
  const auto rule = [](const auto& dy, const auto& a, const auto&, const auto&) {
    return tad::adjoints{tad::zero{}, a.transpose() * dy};
  };
  const auto nan = std::numeric_limits<T>::quiet_NaN();
  const auto check = [&](const auto& loss, const dmat& a_value) {
    tad::program p(loss);
    std::vector<T> ws(p.workspace_size(), nan);
    tad::matrix<T> g1(k_, hid), g2(hid, n_);
    for (T& g : g1) g = nan;
    (void)p.grad_into(ws, tad::wrt(W1, g1), tad::wrt(W2, g2));
    dmat ones(m_, n_);
    for (double& v : ones.v) v = 1;
    BOOST_TEST(relative_error(g1, dmat(k_, hid)) == 0.0);  // exactly zero
    BOOST_TEST(relative_error(g2, product(transposed(a_value), ones)) <= tolerance<T>(m_));
  };
  // The left operand is a product (X W1): its adjoint zeroed, so no gradient reaches W1.
  check(tad::sum(tad::override_gradients(tad::matmul(tad::matmul(X, W1), W2), matmul_rule(rule))), product(x, w1));
  // The left operand is an expression (tanh(X W1)): no seed pushed through it.
  dmat th = product(x, w1);
  for (double& v : th.v) v = std::tanh(v);
  const auto scoped = tad::override_gradients(tad::matmul(tad::tanh(tad::matmul(X, W1)), W2), matmul_rule(rule));
  check(tad::sum(scoped), th);
}

// tad::zero for B (the right operand, a variable): its gradient buffer is zeroed, A's is the
// rule's; and a product used twice (per_use) with a rule that is not linear in dY (sign): each
// use runs the rule on its own adjoint (not merged: computed twice).
BOOST_AUTO_TEST_CASE(zero_for_b_and_a_nonlinear_rule_used_twice) {
  const dmat a = random_matrix(m_, k_, 24), w = random_matrix(k_, n_, 25);
  const auto A = tad::var<"A">(a.v.data(), m_, k_);
  const auto W = tad::var<"W">(w.v.data(), k_, n_);
  const auto only_a = [](const auto& dy, const auto&, const auto& b, const auto&) {
    return tad::adjoints{dy * b.transpose(), tad::zero{}};
  };
  tad::matrix<double> ga(m_, k_), gw(k_, n_);
  for (double& g : gw) g = std::numeric_limits<double>::quiet_NaN();
  (void)tad::grad_into(tad::sum(tad::override_gradients(tad::matmul(A, W), matmul_rule(only_a))), tad::wrt(A, ga),
                       tad::wrt(W, gw));
  dmat ones(m_, n_);
  for (double& v : ones.v) v = 1;
  BOOST_TEST(relative_error(gw, dmat(k_, n_)) == 0.0);
  BOOST_TEST(relative_error(ga, product(ones, transposed(w))) <= 1e-13);

  const auto sign_rule = [](const auto& dy, const auto& a2, const auto&, const auto&) {
    return tad::adjoints{tad::zero{}, a2.transpose() * dy.cwiseSign()};
  };
  // Two uses without per_use are the repeated-rule compile error (one node: a let of the
  // product, lets_of_products): with per_use, each use runs the rule on its own dY.
  const auto P = tad::per_use(tad::override_gradients(tad::matmul(tad::constant(a.v.data(), m_, k_), W), matmul_rule(sign_rule)));
  static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::sum(P.arg) + tad::sum(P.arg))>>);
  const tad::program p(tad::sum(tad::square(P)) - tad::sum(P) * 3.0);
  BOOST_TEST(p.computed_products() == 2u);
  (void)p.grad_into(tad::wrt(W, gw));
  // Use 1: dY = 2P, sign(2P); use 2: dY = -3, sign -1. dW = A^T (sign(P) - 1).
  dmat s = product(a, w);
  for (double& v : s.v) v = (v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0) - 1.0;
  BOOST_TEST(relative_error(gw, product(transposed(a), s)) <= 1e-13);
}

// outer(u, v) is A B with A = u as a column and B = v as a row; matrix-vector: B a column.
BOOST_AUTO_TEST_CASE(outer_and_matrix_vector) {
  const dmat u = random_matrix(m_, 1, 15), v = random_matrix(1, n_, 16), c = random_matrix(m_, n_, 17);
  const auto U = tad::var<"u">(std::span<const double>(u.v));
  const auto V = tad::var<"v">(std::span<const double>(v.v));
  const auto C = tad::constant(c.v.data(), m_, n_);
  const auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::outer_op>, [](const auto& dy, const auto& a, const auto& b, const auto&) {
    BOOST_TEST((a.cols() == 1 && b.rows() == 1));
    return tad::adjoints{3.0 * (dy * b.transpose()), a.transpose() * dy};
  }));
  auto [val, gu, gv] = tad::grad(tad::sum(tad::override_gradients(tad::outer(U, V), rules) * C), U, V);
  BOOST_TEST(std::abs(val - [&] {
               double s = 0;
               for (std::size_t i = 0; i < m_; ++i)
                 for (std::size_t j = 0; j < n_; ++j) s += u.v[i] * v.v[j] * c(i, j);
               return s;
             }()) <= 1e-12);
  BOOST_TEST(relative_error(gu, scaled(product(c, transposed(v)), 3.0)) <= 1e-13);  // 3 C v
  BOOST_TEST(relative_error(gv, product(transposed(u), c)) <= 1e-13);  // C^T u, as a row

  // Matrix-vector: W x, B = x as a k x 1 column; the rule halves dW.
  const dmat w = random_matrix(m_, k_, 18), x = random_matrix(k_, 1, 19);
  const auto W = tad::var<"W">(w.v.data(), m_, k_);
  const auto Xv = tad::var<"x">(std::span<const double>(x.v));
  const auto half = [](const auto& dy, const auto& a, const auto& b, const auto&) {
    BOOST_TEST(b.cols() == 1);
    return tad::adjoints{0.5 * (dy * b.transpose()), a.transpose() * dy};
  };
  auto [val2, gw, gx] = tad::grad(tad::sum(tad::square(tad::override_gradients(tad::matmul(W, Xv), matmul_rule(half)))) * 0.5, W, Xv);
  (void)val2;
  const dmat y = product(w, x);  // dY = Y
  BOOST_TEST(relative_error(gw, scaled(product(y, transposed(x)), 0.5)) <= 1e-13);
  BOOST_TEST(relative_error(gx, product(transposed(w), y)) <= 1e-13);
}

BOOST_AUTO_TEST_CASE(a_rule_of_the_wrong_shape_is_a_shape_error) {
  const dmat x = random_matrix(3, 4, 20), w = random_matrix(4, 2, 21);
  const auto X = tad::constant(x.v.data(), 3, 4);
  const auto W = tad::var<"W">(w.v.data(), 4, 2);
  const auto wrong = [](const auto& dy, const auto&, const auto&, const auto&) { return tad::adjoints{dy, dy}; };
  try {
    (void)tad::grad(tad::sum(tad::override_gradients(tad::matmul(X, W), matmul_rule(wrong))), W);
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& e) {
    BOOST_TEST(std::string(e.what()) ==
               "tad::override_gradients: a matrix product's rule returned dA of 3 x 2 for A of 3 x 4");
  }
}

// A repeated step with an overridden product allocates nothing (the rule's GEMMs are
// evaluated into their destinations).
BOOST_AUTO_TEST_CASE(an_overridden_step_allocates_nothing) {
  const dmat x = random_matrix(m_, k_, 22), w = random_matrix(k_, n_, 23);
  const auto X = tad::constant(x.v.data(), m_, k_);
  const auto W = tad::var<"W">(w.v.data(), k_, n_);
  tad::program p(tad::sum(tad::square(tad::override_gradients(tad::matmul(tad::tanh(X), W), matmul_rule(true_rule)))));
  tad::matrix<double> g(k_, n_);
  (void)p.grad_into(tad::wrt(W, g));
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  double sum = 0;
  for (int step = 0; step < 3; ++step) sum += p.grad_into(tad::wrt(W, g));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  BOOST_TEST(std::isfinite(sum));
}

// ---- Shared stages (decisions.md 56): a let holding a product, a let of a rule read by
// products and elsewhere. Each against the backward derived by hand, in Eigen (double).

using emat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
emat to_eigen(const dmat& m) {
  return Eigen::Map<const emat>(m.v.data(), static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(m.cols));
}
template <class G>
double error_vs(const G& got, const emat& want) {
  dmat w(static_cast<std::size_t>(want.rows()), static_cast<std::size_t>(want.cols()));
  Eigen::Map<emat>(w.v.data(), want.rows(), want.cols()) = want;
  return relative_error(got, w);
}
emat clipped(const emat& m, double lo, double hi) { return m.cwiseMax(lo).cwiseMin(hi); }

/// A shared dense layer feeding two heads, its output clipped: H = let(clip(tanh(X W + b))),
/// loss = sum((H V1)^2) + sum((H V2) * T). TensorFlow's backward: the heads' adjoints of H
/// summed, clipped once, then through tanh and the product.
template <class T>
void shared_layer(std::size_t m, std::size_t k, std::size_t n, std::size_t p, double tol) {
  const dmat x = random_matrix(m, k, 31), w = random_matrix(k, n, 32), b1 = random_matrix(1, n, 33),
             v1 = random_matrix(n, p, 34), v2 = random_matrix(n, p, 35), t = random_matrix(m, p, 36);
  const auto cast = [](const dmat& d) { return std::vector<T>(d.v.begin(), d.v.end()); };
  auto xs = cast(x), ws = cast(w), bs = cast(b1), v1s = cast(v1), v2s = cast(v2), ts = cast(t);
  const auto X = tad::constant(xs.data(), m, k);
  const auto W = tad::var<"W">(ws.data(), k, n);
  const auto b = tad::var<"b">(bs);
  const auto V1 = tad::var<"V1">(v1s.data(), n, p);
  const auto V2 = tad::var<"V2">(v2s.data(), n, p);
  const auto Tm = tad::constant(ts.data(), m, p);
  const auto H = tad::let<"h">(tad::clip_gradient(tad::tanh(tad::matmul(X, W) + b), T(-0.3), T(0.3)));
  const tad::program prog(tad::sum(tad::square(tad::matmul(H, V1))) + tad::sum(tad::matmul(H, V2) * Tm));
  BOOST_TEST(prog.computed_products() == 3u);  // X W once
  std::vector<T> gw(k * n), gb(n), gv1(n * p), gv2(n * p);
  (void)prog.grad_into(tad::wrt(W, gw), tad::wrt(b, gb), tad::wrt(V1, gv1), tad::wrt(V2, gv2));
  emat Z = to_eigen(x) * to_eigen(w);
  Z.rowwise() += Eigen::Map<const Eigen::RowVectorXd>(b1.v.data(), static_cast<Eigen::Index>(n));
  const emat Hv = Z.array().tanh().matrix();
  const emat Y1 = Hv * to_eigen(v1);
  const emat dH = clipped(2 * Y1 * to_eigen(v1).transpose() + to_eigen(t) * to_eigen(v2).transpose(), -0.3, 0.3);
  const emat dZ = dH.cwiseProduct((1 - Hv.array().square()).matrix());
  const std::string at = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + "x" + std::to_string(p);
  BOOST_TEST(error_vs(gw, to_eigen(x).transpose() * dZ) <= tol, "dW at " << at);
  BOOST_TEST(error_vs(gb, dZ.colwise().sum()) <= tol, "db at " << at);
  BOOST_TEST(error_vs(gv1, Hv.transpose() * (2 * Y1)) <= tol, "dV1 at " << at);
  BOOST_TEST(error_vs(gv2, Hv.transpose() * to_eigen(t)) <= tol, "dV2 at " << at);
}

BOOST_AUTO_TEST_CASE(a_shared_layer_under_a_clip_is_one_node) {
  for (const auto& s : {std::array<std::size_t, 4>{1, 1, 1, 1}, {3, 4, 5, 2}, {7, 5, 9, 3}, {16, 8, 17, 4}, {33, 3, 15, 7}})
    shared_layer<double>(s[0], s[1], s[2], s[3], 1e-12);
  shared_layer<float>(9, 5, 8, 3, 1e-4);
  // Without the let, the two heads' copies of the clip are the repeated-rule compile error.
  std::vector<double> xs(4), ws(4);
  const auto X = tad::constant(xs.data(), 2, 2);
  const auto W = tad::var<"W">(ws.data(), 2, 2);
  const auto Hc = tad::clip_gradient(tad::tanh(tad::matmul(X, W)), -0.3, 0.3);
  static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::sum(tad::matmul(Hc, W)) + tad::sum(Hc))>>);
}

BOOST_AUTO_TEST_CASE(a_clipped_weight_in_two_products_and_elsewhere_is_one_node) {
  const dmat x1 = random_matrix(m_, k_, 41), x2 = random_matrix(m_, k_, 42), w = random_matrix(k_, n_, 43, 2.0),
             t = random_matrix(m_, n_, 44);
  const auto X1 = tad::constant(x1.v.data(), m_, k_);
  const auto X2 = tad::constant(x2.v.data(), m_, k_);
  const auto Tm = tad::constant(t.v.data(), m_, n_);
  const auto W = tad::var<"W">(w.v.data(), k_, n_);
  const auto cw = tad::let<"cw">(tad::clip_gradient(W, -0.5, 0.5));
  tad::matrix<double> g(k_, n_);
  (void)tad::grad_into(tad::sum(tad::square(tad::matmul(X1, cw))) + tad::sum(tad::matmul(X2, cw) * Tm), tad::wrt(W, g));
  const emat E1 = to_eigen(x1), E2 = to_eigen(x2), Ew = to_eigen(w), Et = to_eigen(t);
  BOOST_TEST(error_vs(g, clipped(2 * E1.transpose() * (E1 * Ew) + E2.transpose() * Et, -0.5, 0.5)) <= 1e-13);
  // In a product's operand and in the expression around it.
  (void)tad::grad_into(tad::sum(tad::matmul(X1, cw)) + tad::sum(tad::square(cw)), tad::wrt(W, g));
  BOOST_TEST(error_vs(g, clipped(E1.transpose() * emat::Ones(m_, n_) + 2 * Ew, -0.5, 0.5)) <= 1e-13);
}

BOOST_AUTO_TEST_CASE(lets_of_products) {
  const dmat x = random_matrix(m_, k_, 51), w1 = random_matrix(k_, n_, 52), w2 = random_matrix(n_, n_, 53);
  const auto X = tad::constant(x.v.data(), m_, k_);
  const auto W1 = tad::var<"W1">(w1.v.data(), k_, n_);
  const auto W2 = tad::var<"W2">(w2.v.data(), n_, n_);
  const emat Ex = to_eigen(x), E1 = to_eigen(w1), E2 = to_eigen(w2);
  tad::matrix<double> g1(k_, n_), g2(n_, n_);
  // A product as a let, used twice, no rule: computed once.
  const auto P = tad::let<"p">(tad::matmul(X, W1));
  const tad::program lin(tad::sum(P * P) + tad::sum(P));
  BOOST_TEST(lin.computed_products() == 1u);
  (void)lin.grad_into(tad::wrt(W1, g1));
  BOOST_TEST(error_vs(g1, Ex.transpose() * (2 * (Ex * E1) + emat::Ones(m_, n_))) <= 1e-13);
  // A let used under stop_gradient and not: only the second carries an adjoint.
  const auto H = tad::let<"h">(tad::tanh(tad::matmul(X, W1)));
  (void)tad::grad_into(tad::sum(H * tad::stop_gradient(H)), tad::wrt(W1, g1));
  const emat Hv = (Ex * E1).array().tanh().matrix();
  BOOST_TEST(error_vs(g1, Ex.transpose() * Hv.cwiseProduct((1 - Hv.array().square()).matrix())) <= 1e-13);
  // A let inside another let's body, each holding a product, one a clip.
  const auto H2 = tad::let<"h2">(tad::clip_gradient(tad::matmul(H, W2), -0.5, 0.5));
  (void)tad::grad_into(tad::sum(H2 * H) + tad::sum(tad::square(H2)), tad::wrt(W1, g1), tad::wrt(W2, g2));
  const emat Pv = Hv * E2;
  const emat dP = clipped(Hv + 2 * Pv, -0.5, 0.5);
  const emat dH = Pv + dP * E2.transpose();
  BOOST_TEST(error_vs(g2, Hv.transpose() * dP) <= 1e-13);
  BOOST_TEST(error_vs(g1, Ex.transpose() * dH.cwiseProduct((1 - Hv.array().square()).matrix())) <= 1e-13);
}

BOOST_AUTO_TEST_CASE(a_shared_layer_step_allocates_nothing) {
  const dmat x = random_matrix(m_, k_, 61), w = random_matrix(k_, n_, 62);
  const auto X = tad::constant(x.v.data(), m_, k_);
  const auto W = tad::var<"W">(w.v.data(), k_, n_);
  const auto H = tad::let<"h">(tad::clip_gradient(tad::tanh(tad::matmul(X, W)), -0.3, 0.3));
  tad::program p(tad::sum(tad::square(tad::matmul(H, tad::transpose(W)))) + tad::sum(H));
  tad::matrix<double> g(k_, n_);
  (void)p.grad_into(tad::wrt(W, g));
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  double sum = 0;
  for (int step = 0; step < 3; ++step) sum += p.grad_into(tad::wrt(W, g));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  BOOST_TEST(std::isfinite(sum));
}

BOOST_AUTO_TEST_SUITE_END()

// The repeated-rule check through products (eval/shared_rules.hpp, decisions.md 54).
namespace {
std::vector<double> xs_rule(4);
[[maybe_unused]] const auto x_ct = tad::constant(xs_rule.data(), 2, 2);
// Two products of one type are two occurrences (a program aliases them only when their data are
// equal, at run time), so a clipped weight shared by them without a let is refused; a let of it,
// used in a product's operand and elsewhere, is a stage (a_clipped_weight_in_two_products...).
std::vector<double> w_rule(4);
[[maybe_unused]] const auto W_rule = tad::var<"W">(w_rule.data(), 2, 2);
[[maybe_unused]] const auto cW_rule = tad::clip_gradient(W_rule, -0.5, 0.5);
static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::sum(tad::matmul(x_ct, cW_rule)) + tad::sum(tad::matmul(x_ct, cW_rule)))>>);
[[maybe_unused]] const auto lW_rule = tad::let<"cw">(cW_rule);
static_assert(tad::detail::rule_problem<decltype(tad::sum(tad::matmul(x_ct, lW_rule)) + tad::sum(lW_rule))>::kind == 0);
static_assert(tad::detail::is_stage_node_v<decltype(lW_rule)>);
// A scalar let of a rule is the engines' (not a stage): used in a product's operand and
// elsewhere, each engine would run its rule on its own share, so it is refused.
std::vector<double> v_rule(2);
[[maybe_unused]] const auto v_ct = tad::var<"v">(v_rule);
[[maybe_unused]] const auto s_rule = tad::let<"s">(tad::clip_gradient(tad::sum(v_ct * v_ct), -1.0, 1.0));
static_assert(tad::detail::rule_problem<decltype(tad::sum(tad::matmul(x_ct, v_ct * s_rule)) + s_rule)>::kind == 2);
static_assert(tad::detail::rule_problem<decltype(tad::sum(tad::matmul(x_ct, v_ct * s_rule)))>::kind == 0);
// A copy of a rule inside a stage (a broadcast vector, a composite's matrix argument) and one
// outside it are two copies: the repeated-rule error; a per_use holding a stage is refused.
[[maybe_unused]] const auto c_rule = tad::clip_gradient(v_ct, -1.0, 1.0);
static_assert(tad::detail::rule_problem<decltype(tad::sum(x_ct * c_rule) + tad::sum(c_rule))>::kind == 1);
[[maybe_unused]] const auto z_rule = tad::clip_gradient(W_rule, -0.1, 0.1);
static_assert(tad::detail::rule_problem<decltype(tad::sum(tad::log_softmax(z_rule, tad::axis<1>)) + tad::sum(z_rule))>::kind == 1);
static_assert(tad::detail::rule_problem<decltype(tad::sum(tad::log_softmax(z_rule, tad::axis<1>)))>::kind == 0);
[[maybe_unused]] const auto q_rule = tad::per_use(x_ct * c_rule);
static_assert(tad::detail::rule_problem<decltype(tad::sum(q_rule) + tad::sum(q_rule))>::kind == 5);
}  // namespace
