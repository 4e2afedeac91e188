// Expressions that need several passes over the data (reductions inside reductions, reduction
// values used elementwise, scalar variables around them): value and gradients at every test
// length (unaligned, float and double) against central differences of the expression
// evaluated in double.
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

// ---- multi-pass expressions -----------------------------------------------------------------

struct layer_norm {
  auto operator()(auto x, auto w) const {
    const auto centered = x - tad::mean(x);
    return tad::sum(w * centered / tad::sqrt(tad::mean(tad::square(centered)) + 1e-5));
  }
};
struct shifted_exp {
  auto operator()(auto x) const { return tad::sum(tad::exp(x - tad::max(x))); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(multipass)

BOOST_AUTO_TEST_CASE_TEMPLATE(logsumexp_and_cross_entropy, T, types) {
  for (const std::size_t n : lengths) {
    check_gradient<T>("logsumexp(x)", n, [](auto x) { return tad::logsumexp(x); }, arr{-3, 3});
    // w.r.t. the logits z and the targets t
    check_gradient<T>("softmax_cross_entropy(z, t)", n,
                      [](auto z, auto t) { return tad::softmax_cross_entropy(z, t); }, arr{-3, 3}, arr{0, 1});
    check_gradient<T>(
        "sum(exp(x - logsumexp(x)) * y)", n,
        [](auto x, auto y) { return tad::sum(tad::exp(x - tad::logsumexp(x)) * y); }, arr{-3, 3}, arr{-1, 1});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(centered_moments, T, types) {
  for (const std::size_t n : lengths) {
    check_gradient<T>("sum(square(x - mean(x)))", n,
                      [](auto x) { return tad::sum(tad::square(x - tad::mean(x))); }, arr{-2, 2});
    check_gradient<T>("mean(square(x - mean(x)))", n,
                      [](auto x) { return tad::mean(tad::square(x - tad::mean(x))); }, arr{-2, 2});
    // w.r.t. x and the weights w
    check_gradient<T>("layer norm", n, layer_norm{}, arr{-2, 2}, arr{-1, 1});
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(nested_reductions, T, types) {
  for (const std::size_t n : lengths) {
    check_gradient<T>("sum(x * sum(x))", n, [](auto x) { return tad::sum(x * tad::sum(x)); }, arr{-2, 2});
    check_gradient<T>("sum(x * mean(x * mean(x)))", n,
                      [](auto x) { return tad::sum(x * tad::mean(x * tad::mean(x))); }, arr{-2, 2});
    check_gradient<T>(
        "log(sum(exp(x))) * sum(y)", n,
        [](auto x, auto y) { return tad::log(tad::sum(tad::exp(x))) * tad::sum(y); }, arr{-2, 2}, arr{-1, 1});
    if (n > 0) check_gradient<T>("sum(exp(x - max(x)))", n, shifted_exp{}, arr{-2, 2});
  }
  std::vector<T> empty;
  const auto x = tad::var<"x">(empty);
  BOOST_CHECK_THROW(tad::grad(shifted_exp{}(x), x), std::domain_error);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(scalar_variables_and_reuse, T, types) {
  for (const std::size_t n : lengths) {
    // w.r.t. x and s
    check_gradient<T>(
        "s * sum(x) + sum(square(x - s))", n,
        [](auto x, auto s) { return s * tad::sum(x) + tad::sum(tad::square(x - s)); }, arr{-2, 2},
        scal{-1, 1});
    check_gradient<T>("sum(x * x + sin(x) * x)", n, [](auto x) { return tad::sum(x * x + tad::sin(x) * x); },
                      arr{-2, 2});
    if (n > 0)  // mean of empty: NaN
      check_gradient<T>(
          "s * s * mean(x * s) / (1 + squared_norm(x - s))", n,
          [](auto x, auto s) { return s * s * tad::mean(x * s) / (1 + tad::squared_norm(x - s)); },
          arr{-2, 2}, scal{-1, 1});
  }
}

BOOST_AUTO_TEST_SUITE_END()
