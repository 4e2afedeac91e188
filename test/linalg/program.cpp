// tad::program and the modifiers on products: a dense layer h = tanh(X W1 + b1) and a head
// h W2, each modifier against the backward derived by hand (with plain loops); shape errors;
// the workspace (caller-provided, too small, zero allocations when reused).

// Eigen checks its own allocations where a test forbids them (a.._repeated_training_step..).
#define EIGEN_RUNTIME_NO_MALLOC
#include "linalg/common.hpp"

#include <Eigen/Core>

#include <support/alloc_counter.hpp>
#include <support/check.hpp>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

namespace {

using namespace tad_test::linalg;
using tad_test::linalg::layout;

constexpr std::size_t batch = 9, d_in = 5, d_hidden = 17, d_out = 3;

/// The model's data: X (batch x d_in), W1, b1, W2, targets Yt, in double and stored as T.
template <class T>
struct model {
  dmat x = random_matrix(batch, d_in, 31), w1 = random_matrix(d_in, d_hidden, 32, 0.6);
  dmat b1 = random_matrix(1, d_hidden, 33, 0.3), w2 = random_matrix(d_hidden, d_out, 34, 0.6);
  dmat yt = random_matrix(batch, d_out, 35);
  stored<T> sx{x, layout::row}, sw1{w1, layout::col}, sb1{b1, layout::row}, sw2{w2, layout::strided};
  stored<T> syt{yt, layout::row};
  decltype(constant_of<layout::row>(sx)) X = constant_of<layout::row>(sx);
  decltype(var_of<"W1", layout::col>(sw1)) W1 = var_of<"W1", layout::col>(sw1);
  decltype(tad::var<"b1">(std::span<const T>())) b = tad::var<"b1">(std::span<const T>(sb1.data, d_hidden));
  decltype(var_of<"W2", layout::strided>(sw2)) W2 = var_of<"W2", layout::strided>(sw2);
  decltype(constant_of<layout::row>(syt)) Y = constant_of<layout::row>(syt);
};

/// The hand-derived backward of L = sum(square(h W2' - Yt)) / 2, h = tanh(X W1 + b1), for the
/// modifiers the tests use: `w2q` the head's weights in the forward (quantized or not),
/// `clip` the clip of dL (0: none), `head_scale` multiplies dh (reversal: -lambda; stop: 0 for
/// W2 only through `w2_gets`), `layer_scale` multiplies dZ on its way to W1 (not b1),
/// `w1_scale` the rule of a custom gradient on W1.
struct expected {
  double value = 0;
  dmat dw1{d_in, d_hidden}, db1{1, d_hidden}, dw2{d_hidden, d_out};
};
dmat scaled_copy(dmat m, double s) {
  for (double& x : m.v) x *= s;
  return m;
}
struct knobs {
  double head_scale = 1, layer_scale = 1, w1_scale = 1, clip = 0;
  bool w2_gets = true;
  double quant = 0;  // 0: none; else W2 in the forward is round(W2 * quant) / quant
};
expected reference(const model<double>& m, const knobs& k) {
  expected r;
  dmat z = product(m.x, m.w1);
  dmat h = z;
  for (std::size_t i = 0; i < batch; ++i)
    for (std::size_t j = 0; j < d_hidden; ++j) h(i, j) = std::tanh(z(i, j) + m.b1.v[j]);
  dmat w2f = m.w2;
  if (k.quant != 0)
    for (double& w : w2f.v) w = std::nearbyint(w * k.quant) / k.quant;
  dmat dl = product(h, w2f);
  for (std::size_t i = 0; i < dl.v.size(); ++i) {
    dl.v[i] -= m.yt.v[i];
    r.value += dl.v[i] * dl.v[i] / 2;
    if (k.clip != 0) dl.v[i] = std::clamp(dl.v[i], -k.clip, k.clip);
  }
  if (k.w2_gets) r.dw2 = product(transposed(h), dl);
  dmat dz = product(dl, transposed(w2f));
  for (std::size_t i = 0; i < dz.v.size(); ++i) dz.v[i] *= k.head_scale * (1 - h.v[i] * h.v[i]);
  for (std::size_t i = 0; i < batch; ++i)
    for (std::size_t j = 0; j < d_hidden; ++j) r.db1.v[j] += dz(i, j);
  r.dw1 = product(transposed(m.x), dz);
  for (double& g : r.dw1.v) g *= k.layer_scale * k.w1_scale;
  return r;
}

template <class T, class Loss>
void check(const model<T>& m, const Loss& loss, const knobs& k) {
  const model<double> md;
  const expected want = reference(md, k);
  tad::program p(loss);
  tad::matrix<T> gw1(d_in, d_hidden), gw2(d_hidden, d_out);
  std::vector<T> gb(d_hidden);
  for (int run = 0; run < 2; ++run) {  // the second run reuses the workspace
    const T v = p.grad_into(tad::wrt(m.W1, gw1), tad::wrt(m.b, gb), tad::wrt(m.W2, gw2));
    BOOST_TEST(std::abs(static_cast<double>(v) - want.value) <= tolerance<T>(64) * std::max(1.0, want.value));
    BOOST_TEST(relative_error(gw1, want.dw1) <= tolerance<T>(64));
    BOOST_TEST(relative_error(gb, want.db1) <= tolerance<T>(64));
    BOOST_TEST(relative_error(gw2, want.dw2) <= tolerance<T>(64));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(program)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_dense_layer_and_a_head_without_modifiers, T, tad_test::reals) {
  const model<T> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  check(m, tad::sum(tad::square(tad::matmul(h, m.W2) - m.Y)) * 0.5, {});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reverse_gradient_on_the_encoder_output, T, tad_test::reals) {
  const model<T> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  check(m, tad::sum(tad::square(tad::matmul(tad::reverse_gradient(h, 0.7), m.W2) - m.Y)) * 0.5,
        {.head_scale = -0.7});
}

BOOST_AUTO_TEST_CASE(stop_gradient_on_a_weight_operand) {
  const model<double> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  check(m, tad::sum(tad::square(tad::matmul(h, tad::stop_gradient(m.W2)) - m.Y)) * 0.5, {.w2_gets = false});
}

BOOST_AUTO_TEST_CASE(scale_gradient_on_a_layer_product) {
  const model<double> m;
  const auto h = tad::tanh(tad::scale_gradient(tad::matmul(m.X, m.W1), 0.25) + m.b);
  check(m, tad::sum(tad::square(tad::matmul(h, m.W2) - m.Y)) * 0.5, {.layer_scale = 0.25});
}

BOOST_AUTO_TEST_CASE(clip_gradient_on_the_head_clips_its_adjoint) {
  const model<double> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  check(m, tad::sum(tad::square(tad::clip_gradient(tad::matmul(h, m.W2), -0.3, 0.3) - m.Y)) * 0.5,
        {.clip = 0.3});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(straight_through_quantized_weights, T, tad_test::reals) {
  const model<T> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  const auto w2q = tad::straight_through(tad::round(m.W2 * 4.0) / 4.0, m.W2);
  check(m, tad::sum(tad::square(tad::matmul(h, w2q) - m.Y)) * 0.5, {.quant = 4});
}

BOOST_AUTO_TEST_CASE(custom_gradient_of_a_matrix_input) {
  const model<double> m;
  const auto tripled = tad::custom_gradient([](auto w) { return w; }, [](auto dy, auto, auto) { return dy * 3.0; });
  const auto h = tad::tanh(tad::matmul(m.X, tripled(m.W1)) + m.b);
  check(m, tad::sum(tad::square(tad::matmul(h, m.W2) - m.Y)) * 0.5, {.w1_scale = 3});
}

BOOST_AUTO_TEST_CASE(a_product_used_twice_is_computed_once) {
  // L = sum(square(X W)) + sum(C * (X W)) + sum(square(X V)): dP = 2 P + C for P = X W, so
  // dW = X^T (2 P + C); X V is another computation (other data, same type) and stays apart.
  const dmat x = random_matrix(7, 4, 40), w = random_matrix(4, 5, 41), v = random_matrix(4, 5, 42);
  const dmat c = random_matrix(7, 5, 43);
  stored<double> sx(x, layout::row), sw(w, layout::row), sv(v, layout::row), sc(c, layout::row);
  const auto X = constant_of<layout::row>(sx);
  const auto W = var_of<"W", layout::row>(sw);
  const auto C = constant_of<layout::row>(sc);
  const tad::program p(tad::sum(tad::square(tad::matmul(X, W))) + tad::sum(C * tad::matmul(X, W)) +
                       tad::sum(tad::square(tad::matmul(X, tad::constant(sv.data, 4, 5)))));
  BOOST_TEST(p.computed_products() == 2u);
  tad::matrix<double> g(4, 5);
  const double value = p.grad_into(tad::wrt(W, g));
  const dmat pw = product(x, w), pv = product(x, v);
  dmat dp = pw;
  double want = 0;
  for (std::size_t i = 0; i < dp.v.size(); ++i) {
    want += pw.v[i] * pw.v[i] + c.v[i] * pw.v[i] + pv.v[i] * pv.v[i];
    dp.v[i] = 2 * pw.v[i] + c.v[i];
  }
  BOOST_TEST(std::abs(value - want) <= 1e-12 * std::max(1.0, want));
  BOOST_TEST(relative_error(g, product(transposed(x), dp)) <= 1e-13);
  // The softmax cross-entropy of a layer holds its logits twice: 2 products, not 4.
  const std::vector<int> labels{0, 2, 1, 1, 0, 2, 3};
  const tad::program ce(tad::mean(tad::softmax_cross_entropy(tad::matmul(tad::tanh(tad::matmul(X, W)), tad::constant(sv.data, 5, 4)), labels)));
  BOOST_TEST(ce.computed_products() == 2u);
}

BOOST_AUTO_TEST_CASE(eigen_matrices_vectors_and_maps_are_leaves_and_gradient_buffers) {
  // sum(square(A B + b - C)) with A a column-major Eigen matrix, B a row-major one, b an Eigen
  // vector (a row broadcast), C a row-major Map with rows 7 apart: against loops over the
  // coefficients (R = A B + b - C, dA = 2 R B^T, dB = 2 A^T R, db = 2 colsum(R)).
  using rm = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::MatrixXd A(4, 3);
  rm B(3, 5);
  Eigen::VectorXd b(5);
  std::vector<double> host(4 * 7, std::numeric_limits<double>::quiet_NaN());
  Eigen::Map<rm, 0, Eigen::OuterStride<>> C(host.data(), 4, 5, Eigen::OuterStride<>(7));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) A(i, j) = std::sin(i + 3.0 * j);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) B(i, j) = std::cos(2.0 * i - j);
  for (int j = 0; j < 5; ++j) b(j) = 0.1 * j;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) C(i, j) = 0.05 * (i * 5 + j);
  const auto a = tad::var<"A">(A);
  const auto bb = tad::var<"B">(B);
  const auto bv = tad::var<"b">(b);
  const auto loss = tad::sum(tad::square(tad::matmul(a, bb) + bv - tad::constant(C)));
  // Gradient buffers in every layout: A's column-major (Eigen's default), B's a row-major Map
  // with rows 8 apart, b's a vector with elements 2 apart; the padding must stay NaN.
  Eigen::MatrixXd gA(4, 3);
  std::vector<double> gb_host(3 * 8, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> gv_host(2 * 5, std::numeric_limits<double>::quiet_NaN());
  Eigen::Map<rm, 0, Eigen::OuterStride<>> gB(gb_host.data(), 3, 5, Eigen::OuterStride<>(8));
  Eigen::Map<Eigen::VectorXd, 0, Eigen::InnerStride<2>> gb(gv_host.data(), 5);
  const double v = tad::grad_into(loss, tad::wrt(a, gA), tad::wrt(bb, gB), tad::wrt(bv, gb));
  for (std::size_t i = 0; i < gb_host.size(); ++i)
    if (i % 8 >= 5) BOOST_TEST(std::isnan(gb_host[i]));
  for (std::size_t i = 1; i < gv_host.size(); i += 2) BOOST_TEST(std::isnan(gv_host[i]));
  double want = 0, r[4][5];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      r[i][j] = b(j) - C(i, j);
      for (int q = 0; q < 3; ++q) r[i][j] += A(i, q) * B(q, j);
      want += r[i][j] * r[i][j];
    }
  BOOST_TEST(std::abs(v - want) <= 1e-13 * want);
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 3; ++q) {
      double g = 0;
      for (int j = 0; j < 5; ++j) g += 2 * r[i][j] * B(q, j);
      BOOST_TEST(std::abs(gA(i, q) - g) <= 1e-13);
    }
  for (int q = 0; q < 3; ++q)
    for (int j = 0; j < 5; ++j) {
      double g = 0;
      for (int i = 0; i < 4; ++i) g += 2 * A(i, q) * r[i][j];
      BOOST_TEST(std::abs(gB(q, j) - g) <= 1e-13);
    }
  for (int j = 0; j < 5; ++j) {
    double g = 0;
    for (int i = 0; i < 4; ++i) g += 2 * r[i][j];
    BOOST_TEST(std::abs(gb(j) - g) <= 1e-13);
  }
  // A buffer of the wrong shape is a shape_error (before anything is written).
  Eigen::MatrixXd wrong(5, 3);
  BOOST_CHECK_THROW((void)tad::grad_into(loss, tad::wrt(bb, wrong)), tad::shape_error);
}

// Without products (the engine's tad::grad_into): a column-major gradient buffer of a
// column-major variable, L = sum(W .* W .* C): dW = 2 W .* C.
BOOST_AUTO_TEST_CASE(column_major_gradient_buffers_without_products) {
  Eigen::MatrixXf W(5, 3), C(5, 3), G(5, 3);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) W(i, j) = 0.3f * static_cast<float>(i) - 0.2f * static_cast<float>(j), C(i, j) = static_cast<float>(1 + i + 5 * j);
  G.setConstant(std::numeric_limits<float>::quiet_NaN());
  const auto w = tad::var<"W">(W);
  const float v = tad::grad_into(tad::sum(w * w * tad::constant(C)), tad::wrt(w, G));
  float want = 0;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) {
      want += W(i, j) * W(i, j) * C(i, j);
      BOOST_TEST(std::abs(G(i, j) - 2 * W(i, j) * C(i, j)) <= 1e-5f * std::abs(C(i, j)));
    }
  BOOST_TEST(std::abs(v - want) <= 1e-5f * want);
  // A negative stride is refused by name.
  Eigen::Map<Eigen::VectorXf, 0, Eigen::InnerStride<>> reversed(G.data() + 14, 15, Eigen::InnerStride<>(-1));
  const auto flat = tad::var<"f">(std::span<const float>(C.data(), 15));
  BOOST_CHECK_THROW((void)tad::wrt(flat, reversed), std::invalid_argument);
}

// A vector variable's gradient into Eigen matrices (column-major, Eigen's default): one column
// or one row is the vector, written in place; several rows and columns are a shape_error.
BOOST_AUTO_TEST_CASE(eigen_matrix_buffers_for_a_vector_variable) {
  std::vector<double> xv{0.5, -1.0, 2.0, 0.25, 3.0}, cv{1, 2, 3, 4, 5};
  const auto x = tad::var<"x">(std::span<const double>(xv));
  const auto e = tad::sum(tad::square(x) * tad::constant(std::span<const double>(cv)));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Eigen::MatrixXd column = Eigen::MatrixXd::Constant(5, 1, nan), row = Eigen::MatrixXd::Constant(1, 5, nan);
  (void)tad::grad_into(e, tad::wrt(x, column));
  (void)tad::grad_into(e, tad::wrt(x, row));
  for (Eigen::Index i = 0; i < 5; ++i) {
    const double want = 2 * xv[static_cast<std::size_t>(i)] * cv[static_cast<std::size_t>(i)];  // d/dx c x^2
    BOOST_TEST(column(i, 0) == want);
    BOOST_TEST(row(0, i) == want);
  }
  // A matrix variable without rows and its column-major buffer (Eigen's strides of an empty
  // matrix are 0): nothing to write, no error.
  std::vector<double> none;
  const auto empty = tad::var<"E">(none.data(), 0, 3);
  Eigen::MatrixXd no_rows(0, 3);
  BOOST_CHECK_NO_THROW((void)tad::grad_into(tad::sum(empty), tad::wrt(empty, no_rows)));
  std::vector<double> six(6, 1.0);
  const auto y = tad::var<"y">(std::span<const double>(six));
  Eigen::MatrixXd square(2, 3);
  try {
    (void)tad::wrt(y, square);
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& err) {
    BOOST_TEST(std::string(err.what()) == "tad::wrt(x, buffer): the gradient buffer of vector 'y' is a 2 x 3 matrix; pass "
                                          "a vector, or a matrix of one row or one column");
  }
}

BOOST_AUTO_TEST_CASE(shape_errors_name_both_shapes) {
  std::vector<double> a(15), b(28);
  const auto va = tad::var<"A">(a.data(), 3, 5);
  const auto vb = tad::var<"B">(b.data(), 4, 7);
  const auto loss = tad::sum(tad::matmul(va, vb));
  try {
    (void)tad::grad(loss, va, vb);
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& e) {
    BOOST_TEST(std::string(e.what()) == "tad::matmul(a, b): a is 3 x 5, b is 4 x 7: a's columns must be b's rows");
  }
  // Transposed: B^T is 7 x 4, A^T 5 x 3.
  BOOST_CHECK_THROW((void)tad::value(tad::sum(tad::matmul(tad::transpose(vb), va))), tad::shape_error);
  // The operands' own expressions are checked as everywhere (A + B of two shapes).
  std::vector<double> c(35);
  const auto vc = tad::var<"C">(c.data(), 5, 7);
  BOOST_CHECK_THROW((void)tad::value(tad::sum(tad::matmul(va + va, vc + vb))), tad::shape_error);
  // A workspace too small.
  tad::program p(tad::sum(tad::matmul(va, vc)));
  std::vector<double> ws(p.workspace_size() - 1);
  BOOST_CHECK_THROW((void)p.value(ws), tad::shape_error);
}

BOOST_AUTO_TEST_CASE(a_caller_workspace_and_new_data_between_calls) {
  model<double> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  const auto loss = tad::sum(tad::square(tad::matmul(h, m.W2) - m.Y)) * 0.5;
  const tad::program p(loss);  // const: every call brings its workspace
  std::vector<double> ws(p.workspace_size());
  const double before = p.value(ws);
  BOOST_TEST(std::abs(before - reference(model<double>{}, {}).value) <= 1e-12);
  // The leaves view the caller's data: a new W2 is read at the next call.
  for (std::size_t i = 0; i < d_hidden; ++i)
    for (std::size_t j = 0; j < d_out; ++j) m.sw2.at(i, j) = 0;
  double zero_head = 0;
  for (double y : m.yt.v) zero_head += y * y / 2;
  BOOST_TEST(std::abs(p.value(ws) - zero_head) <= 1e-12);
}

BOOST_AUTO_TEST_CASE(a_repeated_training_step_allocates_nothing) {
  const model<float> m;
  const auto h = tad::tanh(tad::matmul(m.X, m.W1) + m.b);
  tad::program p(tad::sum(tad::square(tad::matmul(tad::reverse_gradient(h, 0.5), m.W2) - m.Y)) * 0.5);
  tad::matrix<float> gw1(d_in, d_hidden), gw2(d_hidden, d_out);
  std::vector<float> gb(d_hidden);
  (void)p.grad_into(tad::wrt(m.W1, gw1), tad::wrt(m.b, gb), tad::wrt(m.W2, gw2));
  // Neither operator new (tad) nor Eigen's malloc (its GEMM takes packing buffers from the stack
  // up to EIGEN_STACK_ALLOCATION_LIMIT, 128 KB: doc/linear-algebra.md): Eigen asserts.
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  float sum = 0;
  for (int step = 0; step < 5; ++step) sum += p.grad_into(tad::wrt(m.W1, gw1), tad::wrt(m.b, gb), tad::wrt(m.W2, gw2));
  Eigen::internal::set_is_malloc_allowed(true);
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(std::isfinite(sum));
}

/// Products whose GEMM packing buffers exceed EIGEN_STACK_ALLOCATION_LIMIT (128 KB), which
/// Eigen's own GEMM takes from malloc at every product: the program's workspace holds them
/// (forward and both backward GEMMs), and the gradients are those of the closed form.
BOOST_AUTO_TEST_CASE(large_products_pack_in_the_workspace) {
  constexpr std::size_t m = 192, k = 320, n = 256;
  const dmat x = random_matrix(m, k, 70), w = random_matrix(k, n, 71, 0.1), y = random_matrix(m, n, 72);
  stored<double> sx(x, layout::row), sw(w, layout::row), sy(y, layout::row);
  const auto X = var_of<"X", layout::row>(sx);
  const auto W = var_of<"W", layout::row>(sw);
  const tad::program p(tad::sum(tad::square(tad::matmul(X, W) - constant_of<layout::row>(sy))) * 0.5);
  tad::matrix<double> gx(m, k), gw(k, n);
  (void)p.grad_into(tad::wrt(X, gx), tad::wrt(W, gw));
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);  // Eigen asserts on its own malloc
  double v = 0;
  for (int step = 0; step < 2; ++step) v = p.grad_into(tad::wrt(X, gx), tad::wrt(W, gw));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  // L = |X W - Y|^2 / 2: dX = R W^T, dW = X^T R with R = X W - Y.
  dmat r = product(x, w);
  double want = 0;
  for (std::size_t i = 0; i < r.v.size(); ++i) r.v[i] -= y.v[i], want += r.v[i] * r.v[i] / 2;
  BOOST_TEST(std::abs(v - want) <= 1e-10 * want);
  BOOST_TEST(relative_error(gx, product(r, transposed(w))) <= 1e-12);
  BOOST_TEST(relative_error(gw, product(transposed(x), r)) <= 1e-12);
}

// Staged buffers in a program: a variable the expression does not contain (its strided buffer
// is zeroed, padding untouched), a block of a column-major matrix, a workspace full of NaN;
// zero and negative strides are refused.
BOOST_AUTO_TEST_CASE(staged_gradient_buffers_in_a_program) {
  const dmat a = random_matrix(4, 3, 41), w = random_matrix(3, 2, 42);
  const auto A = tad::constant(a.v.data(), 4, 3);
  std::vector<double> wv = w.v;
  const auto W = tad::var<"W">(wv.data(), 3, 2);
  std::vector<double> zv(6, 1.0);
  const auto Z = tad::var<"Z">(zv.data(), 2, 3);
  const tad::program p(tad::sum(tad::square(tad::matmul(A, W))));
  std::vector<double> ws(p.workspace_size(), std::numeric_limits<double>::quiet_NaN());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Eigen::MatrixXd big = Eigen::MatrixXd::Constant(5, 4, nan);  // W's gradient in big's block (1, 1)
  Eigen::MatrixXd gz = Eigen::MatrixXd::Constant(2, 3, nan);
  auto block = big.block(1, 1, 3, 2);
  (void)p.grad_into(ws, tad::wrt(W, block), tad::wrt(Z, gz));
  const dmat y = product(a, w);
  const dmat want = product(transposed(a), scaled_copy(y, 2.0));  // dW = A^T 2Y
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 4; ++j) {
      const bool inside = i >= 1 && i <= 3 && j >= 1 && j <= 2;
      if (inside) BOOST_TEST(std::abs(big(i, j) - want(static_cast<std::size_t>(i - 1), static_cast<std::size_t>(j - 1))) <= 1e-12);
      else BOOST_TEST(std::isnan(big(i, j)));
    }
  BOOST_TEST((gz.array() == 0.0).all());
  // Strides that do not make distinct elements, or negative ones.
  Eigen::Map<Eigen::VectorXd, 0, Eigen::InnerStride<>> repeated(gz.data(), 6, Eigen::InnerStride<>(0));
  BOOST_CHECK_THROW((void)tad::wrt(tad::var<"v">(std::span<const double>(zv)), repeated), std::invalid_argument);
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> same_column(gz.data(), 2, 3, Eigen::OuterStride<>(0));
  BOOST_CHECK_THROW((void)tad::wrt(Z, same_column), std::invalid_argument);
}

// A scalar variable's gradient into an element of an input array: the program writes it when
// the engine around the products ends, before the product's backward reads A, so it is
// refused as an array's buffer is (the expression's value and gradients by formula apart).
BOOST_AUTO_TEST_CASE(a_scalar_gradient_into_an_input_array_is_refused) {
  const dmat a = random_matrix(4, 3, 53), w = random_matrix(3, 2, 54);
  std::vector<double> av = a.v, wv = w.v;
  double s = 1.5;
  const auto A = tad::var<"A">(av.data(), 4, 3);
  const auto W = tad::var<"W">(wv.data(), 3, 2);
  const auto S = tad::var<"s">(s);
  const tad::program p(tad::sum(tad::square(tad::matmul(A, W))) * S);
  std::vector<double> gw(6, 0.0);
  try {
    (void)p.grad_into(tad::wrt(S, av[2]), tad::wrt(W, gw));
    BOOST_FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()) ==
               "tad::program::grad_into: gradient buffer of 's' overlaps an input array of the expression");
  }
  BOOST_TEST(av == a.v);
  double gs = 0;
  const double value = p.grad_into(tad::wrt(S, gs), tad::wrt(W, gw));
  const dmat y = product(a, w);
  double squares = 0;
  for (double v : y.v) squares += v * v;
  BOOST_TEST(std::abs(value - s * squares) <= 1e-13 * squares);
  BOOST_TEST(std::abs(gs - squares) <= 1e-13 * squares);  // d/ds of s sum((A W)^2)
  BOOST_TEST(relative_error(gw, product(transposed(a), scaled_copy(y, 2.0 * s))) <= 1e-13);  // 2 s A^T (A W)
}

// A scalar variable in a product's operand is read again by the product's backward, after the
// engine around the products has written the gradients (0 into a scalar it does not hold, and
// into an array target it zero-fills). A program reads each scalar once, before anything is
// written, so a gradient buffer may hold one, as with tad::grad_into: the scalar's own storage,
// or an element of another variable's buffer. Gradients by formula: for sum((s A) W), dA = s
// times W's row sums in every row, ds = sum(A W).
BOOST_AUTO_TEST_CASE(a_gradient_buffer_may_hold_a_scalar_variable) {
  const dmat a = random_matrix(4, 3, 55), w = random_matrix(3, 2, 56);
  std::vector<double> av = a.v, wv = w.v;
  const auto A = tad::var<"A">(av.data(), 4, 3);
  const auto W = tad::constant(wv.data(), 3, 2);
  const dmat y = product(a, w);
  double sum_aw = 0;
  for (double v : y.v) sum_aw += v;
  const auto want_ga = [&](double s) {
    dmat g = a;
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t p = 0; p < 3; ++p) g(i, p) = s * (w(p, 0) + w(p, 1));
    return g;
  };
  {  // s's gradient into s itself
    double s = 1.5;
    const auto S = tad::var<"s">(s);
    const tad::program prog(tad::sum(tad::matmul(S * A, W)));
    std::vector<double> ga(12, 0.0);
    const double value = prog.grad_into(tad::wrt(S, s), tad::wrt(A, ga));
    BOOST_TEST(std::abs(value - 1.5 * sum_aw) <= 1e-13 * std::max(1.0, std::abs(sum_aw)));
    BOOST_TEST(std::abs(s - sum_aw) <= 1e-13 * std::max(1.0, std::abs(sum_aw)));
    BOOST_TEST(relative_error(ga, want_ga(1.5)) <= 1e-13);
  }
  {  // s is an element of A's gradient buffer
    std::vector<double> ga(12, 0.0);
    ga[5] = -0.75;
    const auto S = tad::var<"s">(ga[5]);
    const tad::program prog(tad::sum(tad::matmul(S * A, W)));
    const double value = prog.grad_into(tad::wrt(A, ga));
    BOOST_TEST(std::abs(value + 0.75 * sum_aw) <= 1e-13 * std::max(1.0, std::abs(sum_aw)));
    BOOST_TEST(relative_error(ga, want_ga(-0.75)) <= 1e-13);
  }
}

// A program checks the gradient buffers as tad::grad_into does, on its whole expression and
// before it writes anything: shape, length, overlap with any input array (here A, which only a
// product reads) or with the workspace.
BOOST_AUTO_TEST_CASE(a_program_checks_gradient_buffers_before_writing) {
  const dmat a = random_matrix(4, 3, 51), w = random_matrix(3, 2, 52);
  std::vector<double> av = a.v, wv = w.v;
  std::vector<double> host(10, 0.5);  // c is host[3, 7)
  const auto A = tad::var<"A">(av.data(), 4, 3);
  const auto W = tad::var<"W">(wv.data(), 3, 2);
  const auto c = tad::var<"c">(std::span<const double>(host.data() + 3, 4));
  const tad::program p(tad::sum(tad::square(tad::matmul(A, W))) + tad::sum(c));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> gc(4, nan);
  const auto untouched = [&] { return std::all_of(gc.begin(), gc.end(), [](double g) { return std::isnan(g); }); };
  const auto message = [&](auto&&... t) {
    try {
      (void)p.grad_into(tad::wrt(c, gc), t...);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  tad::matrix<double> wrong(2, 3);
  BOOST_TEST(message(tad::wrt(W, wrong)) == "tad::program::grad_into: gradient buffer of 'W' has shape 2 x 3, expected 3 x 2");
  std::vector<double> short_buffer(5);
  BOOST_TEST(message(tad::wrt(W, short_buffer)).starts_with("tad::program::grad_into: gradient buffer of 'W'"));
  BOOST_TEST(untouched());
  // W's gradient into A's data: A is read by the product's backward, after W's gradient would
  // have been written there.
  BOOST_TEST(message(tad::wrt(W, std::span<double>(av.data(), 6))) ==
             "tad::program::grad_into: gradient buffer of 'W' overlaps an input array of the expression");
  // A column-major buffer with an outer stride whose span holds c, though no element is c's.
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> strided(host.data(), 3, 2, Eigen::OuterStride<>(7));
  BOOST_TEST(message(tad::wrt(W, strided)) ==
             "tad::program::grad_into: gradient buffer of 'W' overlaps an input array of the expression");
  BOOST_TEST(untouched());
  std::vector<double> ws(p.workspace_size() + 6);
  try {
    (void)p.grad_into(ws, tad::wrt(c, gc), tad::wrt(W, std::span<double>(ws.data() + 1, 6)));
    BOOST_FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()) == "tad::program::grad_into: gradient buffer of 'W' overlaps the workspace");
  }
  BOOST_TEST(untouched());
  // The same buffers, apart: c's gradient is 1, W's 2 A^T (A W); W's in the tail of a larger
  // workspace, which the program does not use.
  (void)p.grad_into(ws, tad::wrt(c, gc), tad::wrt(W, std::span<double>(ws.data() + p.workspace_size(), 6)));
  const std::vector<double> gw(ws.begin() + static_cast<std::ptrdiff_t>(p.workspace_size()), ws.end());
  BOOST_TEST(std::all_of(gc.begin(), gc.end(), [](double g) { return g == 1.0; }));
  BOOST_TEST(relative_error(gw, product(transposed(a), scaled_copy(product(a, w), 2.0))) <= 1e-13);
  // The expression around the products is shape-checked when the program is built (A W is
  // 4 x 2, the constant 3 x 3), not at a call that might first zero an absent variable's buffer.
  std::vector<double> nine(9, 1.0);
  try {
    const tad::program bad(tad::sum(tad::matmul(A, W) * tad::constant(nine.data(), 3, 3)));
    BOOST_FAIL("no shape_error");
  } catch (const tad::shape_error& e) {
    BOOST_TEST(std::string(e.what()).find("differ in shape") != std::string::npos);
  }
}

// A program's workspace holds the staging of a column-major gradient buffer: a repeated step
// with one allocates nothing either.
BOOST_AUTO_TEST_CASE(a_column_major_gradient_buffer_in_a_repeated_step_allocates_nothing) {
  const model<double> m;
  tad::program p(tad::sum(tad::square(tad::matmul(tad::tanh(tad::matmul(m.X, m.W1) + m.b), m.W2) - m.Y)) * 0.5);
  Eigen::MatrixXd gw1(d_in, d_hidden), gw2(d_hidden, d_out);
  std::vector<double> gb(d_hidden);
  (void)p.grad_into(tad::wrt(m.W1, gw1), tad::wrt(m.b, gb), tad::wrt(m.W2, gw2));
  const expected want = reference(model<double>{}, {});
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  (void)p.grad_into(tad::wrt(m.W1, gw1), tad::wrt(m.b, gb), tad::wrt(m.W2, gw2));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rw1 = gw1, rw2 = gw2;
  BOOST_TEST(relative_error(std::span<const double>(rw1.data(), d_in * d_hidden), want.dw1) <= 1e-13);
  BOOST_TEST(relative_error(std::span<const double>(rw2.data(), d_hidden * d_out), want.dw2) <= 1e-13);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- vjp of expressions with products (issue 39, point 5) --------------------------------
// y = tanh(X W + b) (a matrix) and X w (a vector), against the formulas by plain loops:
// G = seed ⊙ (1 - y²), dW = X^T G, dX = G W^T, db = G's column sums; in and out of a program.

namespace {

struct layer_data {
  dmat x = random_matrix(batch, d_in, 61), w = random_matrix(d_in, d_hidden, 62, 0.6);
  dmat b = random_matrix(1, d_hidden, 63, 0.3), seed = random_matrix(batch, d_hidden, 64);
};

/// The value sum(seed ⊙ y) and the gradients of it, y = tanh(X W + b), by plain loops.
struct layer_vjp {
  double value = 0;
  dmat y{batch, d_hidden}, dx{batch, d_in}, dw{d_in, d_hidden}, db{1, d_hidden};
};
layer_vjp layer_reference(const dmat& x, const dmat& w, const dmat& b, const dmat& seed) {
  layer_vjp r;
  r.y = product(x, w);
  dmat g(x.rows, w.cols);
  for (std::size_t i = 0; i < x.rows; ++i)
    for (std::size_t j = 0; j < w.cols; ++j) {
      const double y = std::tanh(r.y(i, j) + b.v[j]);
      r.y(i, j) = y;
      r.value += seed(i, j) * y;
      g(i, j) = seed(i, j) * (1 - y * y);
      r.db.v[j] += g(i, j);
    }
  r.dw = product(transposed(x), g);
  r.dx = product(g, transposed(w));
  return r;
}

/// The layer's leaves in T: X row-major, W strided (rows 3 apart, NaN padding), b a vector.
template <class T>
struct layer : layer_data {
  stored<T> sx{x, layout::row}, sw{w, layout::strided}, sb{b, layout::row};
  std::vector<T> seed_t = std::vector<T>(seed.v.begin(), seed.v.end());
  decltype(var_of<"X", layout::row>(sx)) X = var_of<"X", layout::row>(sx);
  decltype(var_of<"W", layout::strided>(sw)) W = var_of<"W", layout::strided>(sw);
  decltype(tad::var<"b">(std::span<const T>())) B = tad::var<"b">(std::span<const T>(sb.data, d_hidden));
  auto expr() const { return tad::tanh(tad::matmul(X, W) + B); }
};

template <class T>
bool close_value(T got, double want) {
  return std::abs(static_cast<double>(got) - want) <= tolerance<T>(256) * std::max(1.0, std::abs(want));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(vjp)

// program::vjp_into with a random seed, twice (the second call reuses the workspace), and with
// the caller's workspace: the one float case.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_program_vjp_of_a_dense_layer, T, tad_test::reals) {
  const layer<T> l;
  const layer_vjp want = layer_reference(l.x, l.w, l.b, l.seed);
  const tad::program p(l.expr());
  BOOST_TEST(p.result_rows() == batch);
  BOOST_TEST(p.result_cols() == d_hidden);
  tad::matrix<T> gx(batch, d_in), gw(d_in, d_hidden);
  std::vector<T> gb(d_hidden);
  std::vector<T> ws(p.workspace_size());
  for (int run = 0; run < 3; ++run) {
    const T v = run < 2 ? p.vjp_into(l.seed_t, tad::wrt(l.X, gx), tad::wrt(l.W, gw), tad::wrt(l.B, gb))
                        : p.vjp_into(ws, l.seed_t, tad::wrt(l.X, gx), tad::wrt(l.W, gw), tad::wrt(l.B, gb));
    BOOST_TEST(close_value(v, want.value));
    BOOST_TEST(relative_error(gx, want.dx) <= tolerance<T>(64));
    BOOST_TEST(relative_error(gw, want.dw) <= tolerance<T>(64));
    BOOST_TEST(relative_error(gb, want.db) <= tolerance<T>(64));
  }
}

// The free tad::vjp / tad::vjp_into (a program built for the call) and program::vjp, with a
// tad::matrix seed and a column-major (staged) gradient buffer; a product alone (the top is the
// product's result) as a matrix and as a vector (X w).
BOOST_AUTO_TEST_CASE(free_vjp_and_program_vjp_with_products) {
  const layer<double> l;
  const layer_vjp want = layer_reference(l.x, l.w, l.b, l.seed);
  const auto e = l.expr();
  {
    const auto [v, gx, gw, gb] = tad::vjp(e, l.seed_t, l.X, l.W, l.B);
    BOOST_TEST(close_value(v, want.value));
    BOOST_TEST(gw.rows() == d_in);
    BOOST_TEST(relative_error(gx, want.dx) <= 1e-13);
    BOOST_TEST(relative_error(gw, want.dw) <= 1e-13);
    BOOST_TEST(relative_error(gb, want.db) <= 1e-13);
  }
  {
    Eigen::MatrixXd gw(d_in, d_hidden);  // column-major: staged
    std::vector<double> gb(d_hidden);
    const double v = tad::vjp_into(e, l.seed_t, tad::wrt(l.W, gw), tad::wrt(l.B, gb));
    BOOST_TEST(close_value(v, want.value));
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rw = gw;
    BOOST_TEST(relative_error(std::span<const double>(rw.data(), d_in * d_hidden), want.dw) <= 1e-13);
    BOOST_TEST(relative_error(gb, want.db) <= 1e-13);
  }
  {
    tad::matrix<double> seed(batch, d_hidden);
    std::copy(l.seed.v.begin(), l.seed.v.end(), seed.data());
    const tad::program p(e);
    const auto [v, gw] = p.vjp(seed, l.W);
    BOOST_TEST(close_value(v, want.value));
    BOOST_TEST(relative_error(gw, want.dw) <= 1e-13);
  }
  {
    // matmul(X, W) alone: dX = seed W^T, dW = X^T seed.
    const auto [v, gx, gw] = tad::vjp(tad::matmul(l.X, l.W), l.seed_t, l.X, l.W);
    double value = 0;
    const dmat y = product(l.x, l.w);
    for (std::size_t i = 0; i < y.v.size(); ++i) value += l.seed.v[i] * y.v[i];
    BOOST_TEST(close_value(v, value));
    BOOST_TEST(relative_error(gx, product(l.seed, transposed(l.w))) <= 1e-13);
    BOOST_TEST(relative_error(gw, product(transposed(l.x), l.seed)) <= 1e-13);
    // The same product twice, computed once: its adjoints summed (2 seed) before its backward.
    const tad::program twice(tad::matmul(l.X, l.W) + tad::matmul(l.X, l.W));
    BOOST_TEST(twice.computed_products() == 1u);
    const auto [v2, gw2] = twice.vjp(l.seed_t, l.W);
    BOOST_TEST(close_value(v2, 2 * value));
    BOOST_TEST(relative_error(gw2, product(transposed(l.x), scaled_copy(l.seed, 2.0))) <= 1e-13);
  }
  {
    // A vector result: y = X w, dX = s w^T, dw = X^T s.
    const dmat w = random_matrix(d_in, 1, 65), s = random_matrix(batch, 1, 66);
    const auto wv = tad::var<"w">(std::span<const double>(w.v));
    const auto y = tad::matmul(l.X, wv);
    const dmat want_dx = product(s, transposed(w)), want_dw = product(transposed(l.x), s);
    const auto [v, gx, gw] = tad::vjp(y, s.v, l.X, wv);
    BOOST_TEST(close_value(v, product(transposed(s), product(l.x, w)).v[0]));
    BOOST_TEST(relative_error(gx, want_dx) <= 1e-13);
    BOOST_TEST(relative_error(gw, want_dw) <= 1e-13);
    const tad::program p(y);
    BOOST_TEST(p.result_rows() == batch);
    BOOST_TEST(p.result_cols() == 1u);
    tad::matrix<double> px(batch, d_in);
    std::vector<double> pw(d_in);
    (void)p.vjp_into(s.v, tad::wrt(l.X, px), tad::wrt(wv, pw));
    BOOST_TEST(relative_error(px, want_dx) <= 1e-13);
    BOOST_TEST(relative_error(pw, want_dw) <= 1e-13);
  }
}

// A Jacobian row: the seed e_i gives row i of dy/dW (y flattened row-major), against central
// differences of the layer computed by plain loops.
BOOST_AUTO_TEST_CASE(unit_seeds_give_jacobian_rows) {
  const layer<double> l;
  const tad::program p(l.expr());
  tad::matrix<double> gw(d_in, d_hidden);
  std::vector<double> seed(batch * d_hidden, 0.0);
  const dmat zero_seed(batch, d_hidden);
  for (const std::size_t i : {std::size_t{0}, std::size_t{40}, batch * d_hidden - 1}) {
    seed[i] = 1;
    const double v = p.vjp_into(seed, tad::wrt(l.W, gw));
    seed[i] = 0;
    BOOST_TEST(std::abs(v - layer_reference(l.x, l.w, l.b, zero_seed).y.v[i]) <= 1e-14);
    dmat w = l.w;
    double worst = 0;
    for (std::size_t q = 0; q < w.v.size(); ++q) {
      const double x = w.v[q], h = 1e-6;
      w.v[q] = x + h;
      const double up = layer_reference(l.x, w, l.b, zero_seed).y.v[i];
      w.v[q] = x - h;
      const double down = layer_reference(l.x, w, l.b, zero_seed).y.v[i];
      w.v[q] = x;
      worst = std::max(worst, std::abs(gw.data()[q] - (up - down) / (2 * h)));
    }
    BOOST_TEST(worst <= 1e-8);
  }
}

// A seed of the wrong length or shape: tad::shape_error naming the call, before anything is
// written (the buffers keep their NaN); a seed overlapping a gradient buffer or the workspace.
BOOST_AUTO_TEST_CASE(a_seed_of_the_wrong_shape_is_a_shape_error) {
  const layer<double> l;
  const tad::program p(l.expr());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  tad::matrix<double> gw(d_in, d_hidden);
  std::fill_n(gw.data(), d_in * d_hidden, nan);
  const std::vector<double> short_seed(batch * d_hidden - 1);
  const auto message = [](const auto& f) {
    try {
      f();
    } catch (const tad::shape_error& e) {
      return std::string(e.what());
    }
    return std::string("no shape_error");
  };
  BOOST_TEST(message([&] { (void)p.vjp_into(short_seed, tad::wrt(l.W, gw)); }) ==
             "tad::program::vjp_into(seed, ...): seed: expected length 153, got length 152");
  BOOST_TEST(message([&] { (void)p.vjp(short_seed, l.W); }) ==
             "tad::program::vjp(seed, x...): seed: expected length 153, got length 152");
  BOOST_TEST(message([&] { (void)tad::vjp(l.expr(), short_seed, l.W); }) ==
             "tad::vjp(e, seed, x...): seed: expected length 153, got length 152");
  BOOST_TEST(message([&] { (void)tad::vjp_into(l.expr(), short_seed, tad::wrt(l.W, gw)); }) ==
             "tad::vjp_into(e, seed, ...): seed: expected length 153, got length 152");
  // A tad::matrix seed of the transposed shape: same length, refused by its shape.
  const tad::matrix<double> transposed_seed(d_hidden, batch);
  BOOST_TEST(message([&] { (void)p.vjp_into(transposed_seed, tad::wrt(l.W, gw)); }) ==
             "tad::program::vjp_into(seed, ...): seed has shape 17 x 9, expected 9 x 17");
  BOOST_TEST(message([&] { (void)tad::vjp(tad::matmul(l.X, tad::var<"w">(std::span<const double>(l.seed.v.data(), d_in))),
                                          short_seed, l.W); }) ==
             "tad::vjp(e, seed, x...): seed: expected length 9, got length 152");
  BOOST_TEST(std::all_of(gw.data(), gw.data() + d_in * d_hidden, [](double g) { return std::isnan(g); }));
  // A gradient buffer inside the seed, or a seed inside the workspace: std::invalid_argument.
  std::vector<double> seed(batch * d_hidden, 1.0), ws(p.workspace_size());
  const auto refusal = [](const auto& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  BOOST_TEST(refusal([&] { (void)p.vjp_into(seed, tad::wrt(l.B, std::span<double>(seed.data() + 5, d_hidden))); }) ==
             "tad::program::vjp_into: gradient buffer of 'b' overlaps the seed");
  BOOST_TEST(refusal([&] { (void)p.vjp_into(ws, std::span<const double>(ws.data() + ws.size() - seed.size(), seed.size()),
                                            tad::wrt(l.W, gw)); }) ==
             "tad::program::vjp_into: the seed overlaps the workspace");
  BOOST_TEST(std::all_of(seed.begin(), seed.end(), [](double x) { return x == 1.0; }));
}

// A repeated vjp_into of a program, with a column-major (staged) buffer, allocates nothing:
// neither operator new nor Eigen's malloc.
BOOST_AUTO_TEST_CASE(a_repeated_program_vjp_allocates_nothing) {
  const layer<double> l;
  const tad::program p(l.expr());
  tad::matrix<double> gx(batch, d_in);
  Eigen::MatrixXd gw(d_in, d_hidden);
  std::vector<double> gb(d_hidden);
  (void)p.vjp_into(l.seed_t, tad::wrt(l.X, gx), tad::wrt(l.W, gw), tad::wrt(l.B, gb));
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  double v = 0;
  for (int step = 0; step < 3; ++step) v = p.vjp_into(l.seed_t, tad::wrt(l.X, gx), tad::wrt(l.W, gw), tad::wrt(l.B, gb));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  const layer_vjp want = layer_reference(l.x, l.w, l.b, l.seed);
  BOOST_TEST(close_value(v, want.value));
  BOOST_TEST(relative_error(gx, want.dx) <= 1e-13);
}

BOOST_AUTO_TEST_SUITE_END()
