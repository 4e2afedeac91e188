// Eigen objects in and out of tad (doc/linear-algebra.md, "Eigen interop"): a ridge regression
// whose data, weights and gradients are plain Eigen (column-major, Eigen's default) matrices
// and vectors, read and written without a copy of the inputs; the gradient is checked against
// Eigen's closed form X^T (X W - Y) / n + alpha W, then 200 steps of gradient descent must
// reach the closed-form solution; then one row of the Jacobian of tanh(X W) by vjp_into against
// the formula. Returns 1 if not.
#include <tad/linalg.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>

int main() {
  constexpr Eigen::Index n = 200, d = 6, k = 2;
  constexpr double alpha = 0.1;
  Eigen::MatrixXd Xd = Eigen::MatrixXd::Random(n, d);
  Eigen::MatrixXd Wtrue = Eigen::MatrixXd::Random(d, k);
  Eigen::MatrixXd Yd = Xd * Wtrue + 0.01 * Eigen::MatrixXd::Random(n, k);

  // [eigen interop]
  Eigen::MatrixXd Wm = Eigen::MatrixXd::Zero(d, k);  // column-major, as Eigen's default
  Eigen::MatrixXd G(d, k);                           // the gradient, column-major too
  auto X = tad::constant(Xd);                        // leaves view the Eigen storage
  auto Y = tad::constant(Yd);
  auto W = tad::var<"W">(Wm);
  auto loss = tad::sum(tad::square(tad::matmul(X, W) - Y)) * (0.5 / n) + tad::sum(tad::square(W)) * (0.5 * alpha);
  tad::program step(loss);                           // its workspace stages G's column-major layout
  double value = step.grad_into(tad::wrt(W, G));
  // [eigen interop]

  const Eigen::MatrixXd want = Xd.transpose() * (Xd * Wm - Yd) / n + alpha * Wm;
  const double first = (G - want).cwiseAbs().maxCoeff();
  for (int it = 0; it < 200; ++it) {
    value = step.grad_into(tad::wrt(W, G));
    Wm -= 0.5 * G;  // W views Wm: the next call reads the new weights
  }
  const Eigen::MatrixXd A = Xd.transpose() * Xd / n + alpha * Eigen::MatrixXd::Identity(d, d);
  const Eigen::MatrixXd best = A.ldlt().solve(Xd.transpose() * Yd / n);
  const double gap = (Wm - best).cwiseAbs().maxCoeff();
  std::printf("gradient vs Eigen's closed form: max error %.2e; after 200 steps loss %.6f, |W - W*| %.2e\n", first,
              value, gap);

  // One row of the Jacobian of an array-valued expression with a product: the vjp with a unit
  // seed of the expression's shape (n x k; a flat seed is read row-major).
  // [vjp with products]
  const tad::program predict(tad::tanh(tad::matmul(X, W)));               // y: n x k
  tad::matrix<double> seed(predict.result_rows(), predict.result_cols());  // zeros, y's shape
  seed(3, 1) = 1;                                                          // picks y(3, 1)
  Eigen::MatrixXd J(d, k);                                                 // d y(3, 1) / dW
  const double y31 = predict.vjp_into(seed, tad::wrt(W, J));              // sum(seed * y)
  // [vjp with products]
  // By hand: y(3, 1) = tanh(x3 . w1), whose gradient is x3 (1 - y(3, 1)^2) in column 1, zero
  // in column 0.
  const double y = std::tanh(Xd.row(3).dot(Wm.col(1)));
  const double jac = std::max((J.col(1) - Xd.row(3).transpose() * (1 - y * y)).cwiseAbs().maxCoeff(),
                              J.col(0).cwiseAbs().maxCoeff());
  std::printf("a Jacobian row by vjp_into: |y(3, 1) - tanh| %.2e, max error %.2e\n", std::abs(y31 - y), jac);
  const bool ok = first < 1e-12 && gap < 1e-6 && std::abs(y31 - y) < 1e-14 && jac < 1e-14;
  std::printf("%s\n", ok ? "all checks passed" : "FAILED");
  return ok ? 0 : 1;
}
