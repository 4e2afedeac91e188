// Reductions (tad/ops/reductions.hpp): sum, mean, max, min, norm, squared_norm, dot, logsumexp,
// softmax_cross_entropy. Gradients at every test length (unaligned, float and double) against
// central differences of the expression in double, with array and scalar variables inside;
// exact special values: empty arrays (0, NaN, -inf, std::domain_error), ties of max/min share
// the gradient 1/k, NaN, norm's zero gradient at the zero vector, logsumexp of huge values
// and of all -inf.
#include <support/gradient_check.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace tad_test::gradient_check;

// ---- reductions ------------------------------------------------------------------------------

constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

struct sum_fn {
  auto operator()(auto x) const { return tad::sum(x); }
};
struct mean_fn {
  auto operator()(auto x) const { return tad::mean(x); }
};
struct max_fn {
  auto operator()(auto x) const { return tad::max(x); }
};
struct min_fn {
  auto operator()(auto x) const { return tad::min(x); }
};
struct norm_fn {
  auto operator()(auto x) const { return tad::norm(x); }
};
struct squared_norm_fn {
  auto operator()(auto x) const { return tad::squared_norm(x); }
};
struct dot_fn {
  auto operator()(auto x, auto y) const { return tad::dot(x, y); }
};
struct logsumexp_fn {
  auto operator()(auto x) const { return tad::logsumexp(x); }
};
struct cross_entropy_fn {
  auto operator()(auto z, auto t) const { return tad::softmax_cross_entropy(z, t); }
};

template <class T>
std::span<const std::span<T>> one(std::span<T>& s) {
  return {&s, 1};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reductions)

BOOST_AUTO_TEST_CASE_TEMPLATE(gradients, T, types) {
  for (const std::size_t n : lengths) {
    check_gradient<T>("sum(x)", n, sum_fn{}, arr{-2, 2});
    check_gradient<T>("mean(x)", n, mean_fn{}, arr{-2, 2});
    if (n > 0) {  // empty: std::domain_error, below
      check_gradient<T>("max(x)", n, max_fn{}, arr{-2, 2});
      check_gradient<T>("min(x)", n, min_fn{}, arr{-2, 2});
    }
    check_gradient<T>("norm(x)", n, norm_fn{}, arr{-2, 2});
    check_gradient<T>("squared_norm(x)", n, squared_norm_fn{}, arr{-2, 2});
    check_gradient<T>("dot(x, y)", n, dot_fn{}, arr{-2, 2}, arr{-2, 2});
    check_gradient<T>("logsumexp(x)", n, logsumexp_fn{}, arr{-3, 3});
    check_gradient<T>("softmax_cross_entropy(z, t)", n, cross_entropy_fn{}, arr{-3, 3}, arr{0, 1});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_of_expressions, T, types) {
  // Scalar variables inside and outside the reduced expressions.
  // (n = 0 only for norm: the others are NaN or infinite there, see empty_arrays.)
  for (const std::size_t n : lengths) {
    check_gradient<T>("norm(x - s)", n, [](auto x, auto s) { return tad::norm(x - s); }, arr{-2, 2},
                      scal{3, 4});
    if (n == 0) continue;
    check_gradient<T>("mean(x * s)", n, [](auto x, auto s) { return tad::mean(x * s); }, arr{-2, 2},
                      scal{-2, 2});
    check_gradient<T>("s * logsumexp(x * s) + dot(x, y) / s", n,
                      [](auto x, auto s, auto y) { return s * tad::logsumexp(x * s) + tad::dot(x, y) / s; },
                      arr{-2, 2}, scal{0.5, 2}, arr{-2, 2});
    check_gradient<T>("max(exp(x)) - min(x * s)", n,
                      [](auto x, auto s) { return tad::max(tad::exp(x)) - tad::min(x * s); }, arr{-2, 2},
                      scal{0.5, 2});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(empty_arrays, T, types) {
  tad_test::buffer<T> b(0);
  std::span<T> e = b.span();
  const std::array<std::span<T>, 2> e2{e, e};
  const auto check = [](const result& r, double value, const std::string& what) {
    expect_close(r.value, value, 0, what);
    for (const auto& g : r.grads) BOOST_TEST(g.empty(), what << ": empty gradient");
  };
  check(grad_of<T, sum_fn, arr>(one(e)), 0, "sum of empty");
  check(grad_of<T, mean_fn, arr>(one(e)), quiet_nan, "mean of empty");
  check(grad_of<T, logsumexp_fn, arr>(one(e)), -infinity, "logsumexp of empty");
  check(grad_of<T, norm_fn, arr>(one(e)), 0, "norm of empty");
  check(grad_of<T, squared_norm_fn, arr>(one(e)), 0, "squared_norm of empty");
  check(grad_of<T, dot_fn, arr, arr>(e2), 0, "dot of empty");
  check(grad_of<T, cross_entropy_fn, arr, arr>(e2), quiet_nan, "softmax_cross_entropy of empty (0 * -inf)");
  BOOST_CHECK_THROW((grad_of<T, max_fn, arr>(one(e))), std::domain_error);
  BOOST_CHECK_THROW((grad_of<T, min_fn, arr>(one(e))), std::domain_error);
  const auto x = tad::var<"x">(e);
  BOOST_CHECK_THROW(tad::value(tad::max(x)), std::domain_error);
  BOOST_CHECK_THROW(tad::value(tad::min(x)), std::domain_error);
  expect_close(tad::value(tad::logsumexp(x)), -infinity, 0, "value(logsumexp of empty)");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(norm_gradient_at_zero_vector_is_zero, T, types) {
  for (const std::size_t n : {1u, 4u, 5u, 8u, 17u, 1000u}) {
    tad_test::buffer<T> b(n);
    std::fill(b.begin(), b.end(), T(0));
    std::span<T> s = b.span();
    const result r = grad_of<T, norm_fn, arr>(one(s));
    const std::string at = " (n = " + std::to_string(n) + ")";
    expect_close(r.value, 0, 0, "norm(0)" + at);
    expect_all_close(r.grads[0], std::vector<double>(n, 0.0), 0, "d/dx norm(x) at 0" + at);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_min_ties_share_the_gradient, T, types) {
  // k tied extrema get 1/k each, in SIMD lanes and the tail; everything else 0.
  for (const std::size_t n : {1u, 7u, 19u, 40u}) {
    for (const bool is_max : {true, false}) {
      auto b = make_data<T>(true, -1, 1, false, n, unsigned(n));
      std::vector<std::size_t> at;
      for (std::size_t i = 0; i < n; i += 1 + (i % 5)) at.push_back(i);  // 0, 1, 3, 7, 10, 11, ...
      if (n > 1) at.push_back(n - 1);                                       // the tail
      std::sort(at.begin(), at.end());
      at.erase(std::unique(at.begin(), at.end()), at.end());
      const T extreme = is_max ? T(2) : T(-2);
      for (const std::size_t i : at) b[i] = extreme;
      std::span<T> s = b.span();
      const result r = is_max ? grad_of<T, max_fn, arr>(one(s)) : grad_of<T, min_fn, arr>(one(s));
      std::vector<double> want(n, 0.0);
      for (const std::size_t i : at) want[i] = T(1) / T(at.size());
      const std::string what = std::string(is_max ? "max" : "min") + " with " + std::to_string(at.size()) +
                               " ties (n = " + std::to_string(n) + ")";
      expect_close(r.value, extreme, 0, what);
      expect_all_close(r.grads[0], want, 0, "d/dx " + what);
    }
  }
  // All equal.
  tad_test::buffer<T> c(17);
  std::fill(c.begin(), c.end(), T(0.25));
  std::span<T> s = c.span();
  expect_all_close(grad_of<T, max_fn, arr>(one(s)).grads[0], std::vector<double>(17, double(T(1) / T(17))), 0,
                   "d/dx max of 17 equal values");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(max_min_propagate_nan, T, types) {
  for (const std::size_t at : {0u, 5u, 9u, 16u, 18u}) {
    auto b = make_data<T>(true, -1, 1, false, 19, 3);
    b[at] = T(quiet_nan);
    std::span<T> s = b.span();
    const std::string where = " with NaN at " + std::to_string(at);
    expect_close(grad_of<T, max_fn, arr>(one(s)).value, quiet_nan, 0, "max" + where);
    expect_close(grad_of<T, min_fn, arr>(one(s)).value, quiet_nan, 0, "min" + where);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(logsumexp_is_stable, T, types) {
  // {1000, 1001}: 1001 + log(1 + e^-1), finite, gradient softmax; repeated (SIMD path) and
  // negated; length 2 runs the scalar tail only.
  const double tol = 16 * std::numeric_limits<T>::epsilon();
  for (const double sign : {1.0, -1.0}) {
    for (const std::size_t reps : {1u, 9u, 20u}) {
      tad_test::buffer<T> b(2 * reps);
      for (std::size_t i = 0; i < 2 * reps; ++i) b[i] = T(sign * (i % 2 ? 1001 : 1000));
      std::span<T> s = b.span();
      const result r = grad_of<T, logsumexp_fn, arr>(one(s));
      const double hi = sign > 0 ? 1001 : -1000;
      const double want = hi + std::log(double(reps)) + std::log1p(std::exp(-1.0));
      std::vector<double> soft;  // softmax, shifted by the maximum
      for (const T v : b) soft.push_back(std::exp(double(v) - hi) / (double(reps) * (1 + std::exp(-1.0))));
      const std::string what = "logsumexp of " + std::to_string(2 * reps) + " values +-1000, 1001";
      BOOST_TEST(std::isfinite(r.value), what);
      expect_close(r.value, want, tol, what);
      expect_all_close(r.grads[0], soft, tol, "d/dx " + what);
    }
  }
  // All -infinity: -infinity (value and grad, scalar path and SIMD lanes).
  for (const std::size_t n : {1u, 3u, 8u, 17u}) {
    tad_test::buffer<T> b(n);
    std::fill(b.begin(), b.end(), T(-infinity));
    std::span<T> s = b.span();
    const std::string what = "logsumexp of " + std::to_string(n) + " x -infinity";
    expect_close(grad_of<T, logsumexp_fn, arr>(one(s)).value, -infinity, 0, what);
    expect_close(tad::value(tad::logsumexp(tad::var<"x">(s))), -infinity, 0, "value(" + what + ")");
  }
}

BOOST_AUTO_TEST_SUITE_END()
