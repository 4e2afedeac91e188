// Eight threads evaluate one const tad::program, each with its own workspace and gradient
// buffers (a program keeps nothing of an evaluation that is given a workspace): every thread
// gets the single-threaded results bit for bit, and those match a plain-loop formula.
#include <tad/linalg.hpp>

#include <support/check.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_CASE(eight_threads_evaluate_one_program_with_their_own_workspaces) {
  constexpr std::size_t m = 33, k = 17, n = 9;
  std::vector<double> xs(m * k), ws1(k * n), ys(m * n);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.1 * static_cast<double>(i));
  for (std::size_t i = 0; i < ws1.size(); ++i) ws1[i] = std::cos(0.3 * static_cast<double>(i)) / 4;
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = std::sin(0.7 * static_cast<double>(i));
  const auto X = tad::constant(xs.data(), m, k);
  const auto W = tad::var<"W">(ws1.data(), k, n);
  const auto Y = tad::constant(ys.data(), m, n);
  const tad::program p(tad::sum(tad::square(tad::reverse_gradient(tad::tanh(tad::matmul(X, W)), 0.5) - Y)));

  std::vector<double> ws0(p.workspace_size()), g0(k * n);
  const double v0 = p.grad_into(ws0, tad::wrt(W, g0));

  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      std::vector<double> ws(p.workspace_size()), g(k * n);
      for (int rep = 0; rep < 50; ++rep) {
        if (p.grad_into(ws, tad::wrt(W, g)) != v0 || g != g0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST(mismatches.load() == 0);

  // L = sum((tanh(X W) - Y)^2); reversed: dW = -0.5 X^T (2 (h - Y) (1 - h^2)).
  double want = 0, worst = 0;
  std::vector<double> dz(m * n), dw(k * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double z = 0;
      for (std::size_t q = 0; q < k; ++q) z += xs[i * k + q] * ws1[q * n + j];
      const double h = std::tanh(z), r = h - ys[i * n + j];
      want += r * r;
      dz[i * n + j] = -0.5 * 2 * r * (1 - h * h);
    }
  for (std::size_t q = 0; q < k; ++q)
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t i = 0; i < m; ++i) dw[q * n + j] += xs[i * k + q] * dz[i * n + j];
      worst = std::max(worst, std::abs(dw[q * n + j] - g0[q * n + j]));
    }
  BOOST_TEST(std::abs(v0 - want) <= 1e-12 * want);
  BOOST_TEST(worst <= 1e-13);
}
