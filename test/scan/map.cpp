// tad::map: a body over the k-th slices of its inputs (each_row, each_block), for K at run
// time, stacked. A Gaussian mixture's per-component terms (a mean row and a D x D factor per
// component, GradBench's gmm without its packing) reduced by a logsumexp down the components,
// a body of one slice returning a matrix, clip_gradient on a slice (the rule once per row, on
// its summed adjoint), against central differences of the same computation written by hand;
// three slices (a weight per component: each_element) with a bound scalar captured by the body,
// K = 0, 1 and more, sizes around the SIMD width, float and double; shapes that do not fit.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::scan::differences;
using tad_test::scan::doubles;
using tad_test::scan::expect_all_close;
using tad_test::scan::tol;
using tad_test::scan::unaligned;

namespace {

struct mixture {
  std::size_t K, D, N;
  std::vector<double> mu, q, x;
  mixture(std::size_t k, std::size_t d, std::size_t n) : K(k), D(d), N(n), mu(k * d), q(k * d * d), x(n * d) {
    tad_test::fill_uniform(mu, -1, 1, 3);
    tad_test::fill_uniform(q, -0.8, 0.8, 4);
    tad_test::fill_uniform(x, -1, 1, 5);
  }
  /// sum_i logsumexp_k(-0.5 |Q_k (x_i - mu_k)|^2) (0 for K = 0: an empty logsumexp is -inf; not tested).
  double loss() const {
    double total = 0;
    for (std::size_t i = 0; i < N; ++i) {
      std::vector<double> t(K);
      for (std::size_t k = 0; k < K; ++k) {
        double s = 0;
        for (std::size_t a = 0; a < D; ++a) {
          double y = 0;
          for (std::size_t b = 0; b < D; ++b) y += q[(k * D + a) * D + b] * (x[i * D + b] - mu[k * D + b]);
          s += y * y;
        }
        t[k] = -0.5 * s;
      }
      const double m = *std::max_element(t.begin(), t.end());
      double e = 0;
      for (double v : t) e += std::exp(v - m);
      total += m + std::log(e);
    }
    return total;
  }
};

template <class T>
void check_mixture(mixture p) {
  auto smu = unaligned<T>(p.mu), sq = unaligned<T>(p.q), sx = unaligned<T>(p.x);
  const auto Mu = tad::var<"mu">(static_cast<const T*>(smu.data()), p.K, p.D);
  const auto Q = tad::var<"Q">(static_cast<const T*>(sq.data()), p.K * p.D, p.D);
  const auto X = tad::constant(static_cast<const T*>(sx.data()), p.N, p.D);
  const auto terms = tad::map(
      p.K, [&](auto m, auto qk) { return tad::sum(tad::square(tad::matmul(X - m, tad::transpose(qk))), tad::axis<1>); },
      tad::each_row(Mu), tad::each_block(Q));
  const tad::program prog(tad::sum(tad::logsumexp(T(-0.5) * terms, tad::axis<0>)));
  const auto [v, gmu, gq] = prog.grad(Mu, Q);
  const std::string what = "K " + std::to_string(p.K) + " D " + std::to_string(p.D) + " N " + std::to_string(p.N);
  BOOST_TEST(tad_test::close(double(v), p.loss(), tol<T>()), what << ": value " << v << ", expected " << p.loss());
  expect_all_close(doubles(gmu), differences(p.mu, [&] { return p.loss(); }), tol<T>(), what + " dmu");
  expect_all_close(doubles(gq), differences(p.q, [&] { return p.loss(); }), tol<T>(), what + " dQ");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(map)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_mixtures_components_reduced_down_the_columns, T, tad_test::reals) {
  for (const std::size_t k : {1u, 2u, 5u, 17u}) check_mixture<T>(mixture(k, 3, 7));
  for (const std::size_t d : {1u, 4u, 5u, 8u}) check_mixture<T>(mixture(3, d, 9));
  for (const std::size_t n : {1u, 4u, 8u, 16u, 17u, 100u}) check_mixture<T>(mixture(2, 2, n));
}

// One slice, a matrix per k: tanh(Q_k W), stacked (K r) x c, W captured: its gradient summed over k.
BOOST_AUTO_TEST_CASE_TEMPLATE(blocks_of_a_matrix_into_stacked_matrices, T, tad_test::reals) {
  for (const std::size_t k : {0u, 1u, 3u}) {
    const std::size_t r = 2, d = 5, c = 3;
    std::vector<double> q(k * r * d), w(d * c);
    tad_test::fill_uniform(q, -1, 1, 8);
    tad_test::fill_uniform(w, -0.5, 0.5, 9);
    const auto f = [&] {
      double s = 0;
      for (std::size_t row = 0; row < k * r; ++row)
        for (std::size_t j = 0; j < c; ++j) {
          double a = 0;
          for (std::size_t i = 0; i < d; ++i) a += q[row * d + i] * w[i * c + j];
          s += std::tanh(a) * std::tanh(a) * double(j + 1);
        }
      return s;
    };
    auto sq = unaligned<T>(q), sw = unaligned<T>(w);
    std::vector<T> weights(k * r * c);
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = T(i % c + 1);
    const auto Q = tad::var<"Q">(static_cast<const T*>(sq.data()), k * r, d);
    const auto W = tad::var<"W">(static_cast<const T*>(sw.data()), d, c);
    const auto out = tad::map(k, [&](auto qk) { return tad::tanh(tad::matmul(qk, W)); }, tad::each_block(Q));
    static_assert(tad::rank_v<decltype(out)> == 2);
    const tad::program prog(tad::sum(tad::square(out) * tad::constant(weights.data(), k * r, c)));
    BOOST_TEST(prog.result_rows() == 1u);
    const auto [v, gq, gw] = prog.grad(Q, W);
    const std::string what = "K " + std::to_string(k);
    BOOST_TEST(tad_test::close(double(v), f(), tol<T>()), what << ": value " << v << ", expected " << f());
    expect_all_close(doubles(gq), differences(q, f), tol<T>(), what + " dQ");
    expect_all_close(doubles(gw), differences(w, f), tol<T>(), what + " dW");
  }
}

// clip_gradient on a row slice: row k of mu is used only by component k, so its gradient is the
// clip of the whole derivative (the rule once, on the sum of the body's uses, per k).
BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_on_a_slice_clips_each_rows_summed_adjoint, T, tad_test::reals) {
  const std::size_t K = 4, D = 3, N = 6;
  std::vector<double> mu(K * D), x(N * D);
  tad_test::fill_uniform(mu, -1, 1, 11);
  tad_test::fill_uniform(x, -1, 1, 12);
  const auto f = [&] {
    double s = 0;
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t i = 0; i < N; ++i) {
        double a = 0, b = 0;
        for (std::size_t j = 0; j < D; ++j) a += x[i * D + j] * mu[k * D + j], b += mu[k * D + j];
        s += std::sin(a) + 0.5 * b * b;  // mu_k used twice in the body
      }
    return s;
  };
  auto smu = unaligned<T>(mu), sx = unaligned<T>(x);
  const auto Mu = tad::var<"mu">(static_cast<const T*>(smu.data()), K, D);
  const auto X = tad::constant(static_cast<const T*>(sx.data()), N, D);
  const auto body = [&](auto m) {
    const auto c = tad::let<"c">(tad::clip_gradient(m, T(-0.3), T(0.3)));
    return tad::sin(tad::matmul(X, c)) + T(0.5) * tad::square(tad::sum(c));
  };
  const tad::program prog(tad::sum(tad::map(K, body, tad::each_row(Mu))));
  const auto [v, gmu] = prog.grad(Mu);
  auto want = differences(mu, f);
  BOOST_TEST(std::any_of(want.begin(), want.end(), [](double g) { return std::abs(g) > 0.3; }));
  for (double& g : want) g = std::clamp(g, -0.3, 0.3);
  BOOST_TEST(tad_test::close(double(v), f(), tol<T>()));
  expect_all_close(doubles(gmu), want, tol<T>(), "clipped dmu");
}

// Three slices (a weight per component: each_element), and a scalar parameter bound to an
// lvalue captured by the body (read once per call, as anywhere in a program): GradBench's gmm
// without its packing, against central differences.
BOOST_AUTO_TEST_CASE_TEMPLATE(three_slices_and_a_bound_scalar, T, tad_test::reals) {
  for (const std::size_t k : {1u, 3u, 9u}) {
    mixture p(k, 3, 5);
    std::vector<double> alpha(k), s{0.7};
    tad_test::fill_uniform(alpha, -1, 1, 13);
    const auto f = [&] {
      double total = 0;
      for (std::size_t i = 0; i < p.N; ++i) {
        std::vector<double> t(p.K);
        for (std::size_t c = 0; c < p.K; ++c) {
          double q = 0;
          for (std::size_t a = 0; a < p.D; ++a) {
            double y = 0;
            for (std::size_t b = 0; b < p.D; ++b) y += p.q[(c * p.D + a) * p.D + b] * (p.x[i * p.D + b] - p.mu[c * p.D + b]);
            q += y * y;
          }
          t[c] = alpha[c] - s[0] * q;
        }
        const double m = *std::max_element(t.begin(), t.end());
        double e = 0;
        for (double v : t) e += std::exp(v - m);
        total += m + std::log(e);
      }
      return total;
    };
    auto smu = unaligned<T>(p.mu), sq = unaligned<T>(p.q), sx = unaligned<T>(p.x), sa = unaligned<T>(alpha);
    T sv = T(s[0]);
    const auto A = tad::var<"alpha">(static_cast<const T*>(sa.data()), k);
    const auto Mu = tad::var<"mu">(static_cast<const T*>(smu.data()), p.K, p.D);
    const auto Q = tad::var<"Q">(static_cast<const T*>(sq.data()), p.K * p.D, p.D);
    const auto S = tad::var<"s">(sv);  // bound: read when the program is called
    const auto X = tad::constant(static_cast<const T*>(sx.data()), p.N, p.D);
    const auto terms = tad::map(
        p.K,
        [&](auto a, auto m, auto qk) {
          return a - S * tad::sum(tad::square(tad::matmul(X - m, tad::transpose(qk))), tad::axis<1>);
        },
        tad::each_element(A), tad::each_row(Mu), tad::each_block(Q));
    const tad::program prog(tad::sum(tad::logsumexp(terms, tad::axis<0>)));
    sv = T(s[0]);
    const auto [v, ga, gmu, gq, gs] = prog.grad(A, Mu, Q, S);
    const std::string what = "K " + std::to_string(k);
    BOOST_TEST(tad_test::close(double(v), f(), tol<T>()), what << ": value " << v << ", expected " << f());
    expect_all_close(doubles(ga), differences(alpha, f), tol<T>(), what + " dalpha");
    expect_all_close(doubles(gmu), differences(p.mu, f), tol<T>(), what + " dmu");
    expect_all_close(doubles(gq), differences(p.q, f), tol<T>(), what + " dQ");
    expect_all_close({double(gs)}, differences(s, f), tol<T>(), what + " ds");
  }
}

BOOST_AUTO_TEST_CASE(slices_that_do_not_fit_K) {
  std::vector<double> mu(3 * 2), q(7 * 2);
  const auto Mu = tad::var<"mu">(mu.data(), 3, 2);
  const auto Q = tad::var<"Q">(q.data(), 7, 2);
  const auto rows = tad::map(4, [](auto m) { return tad::exp(m); }, tad::each_row(Mu));
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(rows)); },
                               "tad::map(K, f, slices...): K is 4, slice 0 is 3 x 2: each_row needs K rows", 4, 3);
  const auto blocks = tad::map(2, [](auto m, auto qk) { return tad::sum(qk, tad::axis<1>) + tad::sum(m); },
                               tad::each_row(tad::constant(mu.data(), 2, 3)), tad::each_block(Q));
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(blocks)); },
                               "tad::map(K, f, slices...): K is 2, slice 1 is 7 x 2: each_block needs a multiple of K "
                               "rows",
                               2, 7);
  const std::vector<double> ones(3, 1.0);
  const auto elements = tad::map(2, [&](auto a) { return tad::exp(a * tad::constant(ones)); },
                                 tad::each_element(tad::constant(q)));
  tad_test::expect_shape_error([&] { (void)tad::program(tad::sum(elements)); },
                               "tad::map(K, f, slices...): K is 2, slice 0 is 14 x 1: each_element needs K elements", 2,
                               14);
}

BOOST_AUTO_TEST_SUITE_END()
