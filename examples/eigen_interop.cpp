// Eigen objects in and out of tad (doc/linear-algebra.md, "Eigen interop"): a ridge regression
// whose data, weights and gradients are plain Eigen (column-major, Eigen's default) matrices
// and vectors, read and written without a copy of the inputs; the gradient is checked against
// Eigen's closed form X^T (X W - Y) / n + alpha W, then 200 steps of gradient descent must
// reach the closed-form solution. Returns 1 if not.
#include <tad/linalg.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
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
  const bool ok = first < 1e-12 && gap < 1e-6;
  std::printf("%s\n", ok ? "all checks passed" : "FAILED");
  return ok ? 0 : 1;
}
