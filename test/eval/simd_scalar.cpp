// The SIMD path (full batches, unrolled) and the scalar path (the tail loop) agree at every
// length 0..67 (unaligned, float and double). For elementwise-then-sum expressions the
// reference is the same expression over each length-1 array {x[i]}, which only the scalar tail
// evaluates: gradients agree within a few ulps, values and scalar gradients within the
// rounding of a sum. Multi-pass expressions are compared with central differences.
#include <support/gradient_check.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace tad_test::gradient_check;

// ---- SIMD against scalar ---------------------------------------------------------------------

struct trig_mix {
  auto operator()(auto x) const { return tad::sum(tad::exp(tad::sin(x)) * x + tad::square(tad::tanh(x))); }
};
struct branches {
  auto operator()(auto x) const { return tad::sum(tad::where(x > 0, tad::log1p(x), tad::expm1(x))); }
};
struct many_ops {
  auto operator()(auto x) const {
    return tad::sum(tad::pow(tad::abs(x) + 1, 1.5) * tad::cos(x) + tad::sqrt(tad::abs(x) + 0.5) +
                    tad::max(x, 0.25 * x) - tad::min(tad::tan(x / 2), 0.5) + tad::clamp(x, -0.5, 0.5) +
                    tad::log(tad::square(x) + 1) / tad::round(x * 3 + 10));
  }
};
struct with_scalar {
  auto operator()(auto x, auto s) const {
    return tad::sum(s * tad::abs(x) + tad::relu(x - s) + tad::sigmoid(x * s) + tad::softplus(-x) / s);
  }
};

constexpr std::size_t max_length = 67;

/// |got - want| <= tol (absolute).
void expect_near(double got, double want, double tol, const std::string& what) {
  BOOST_TEST(std::abs(got - want) <= tol,
             what << ": tad " << got << ", expected " << want << " (tolerance " << tol << ")");
}

/// g (an elementwise-then-sum expression of an array x and, with scalar, a scalar s) at every
/// length 0..67: against the sum of g over the length-1 arrays {x[i]}.
template <class T>
void check_against_scalar_path(const std::string& name, grad_fn<T> g, bool scalar) {
  const double eps = std::numeric_limits<T>::epsilon();
  for (std::size_t n = 0; n <= max_length; ++n) {
    const std::string at = " (n = " + std::to_string(n) + ")";
    auto x = make_data<T>(true, -2, 2, false, n, unsigned(n) + 1);
    T s = T(0.75);
    const std::array<std::span<T>, 2> all{x.span(), std::span<T>(&s, 1)};
    const result r = g({all.data(), scalar ? 2u : 1u});
    double value = 0, value_scale = 0, ds = 0, ds_scale = 0;
    std::vector<double> dx;
    for (std::size_t i = 0; i < n; ++i) {
      const std::array<std::span<T>, 2> one{x.span().subspan(i, 1), std::span<T>(&s, 1)};
      const result ri = g({one.data(), scalar ? 2u : 1u});
      value += ri.value;
      value_scale += std::abs(ri.value);
      dx.push_back(ri.grads[0][0]);
      if (scalar) {
        ds += ri.grads[1][0];
        ds_scale += std::abs(ri.grads[1][0]);
      }
    }
    // A few ulps per element (xsimd's functions against std's), plus the rounding of the sums.
    expect_near(r.value, value, (8 + double(n)) * eps * value_scale + 1e-300, name + ": value" + at);
    expect_all_close(r.grads[0], dx, 8 * eps, name + ": d/dx" + at);
    if (scalar)
      expect_near(r.grads[1][0], ds, (8 + double(n)) * eps * ds_scale + 1e-300, name + ": d/ds" + at);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(simd_scalar)

BOOST_AUTO_TEST_CASE_TEMPLATE(elementwise_then_sum, T, types) {
  check_against_scalar_path<T>("sum(exp(sin(x)) * x + square(tanh(x)))", grad_of<T, trig_mix, arr>, false);
  check_against_scalar_path<T>("sum(where(x > 0, log1p(x), expm1(x)))", grad_of<T, branches, arr>, false);
  check_against_scalar_path<T>("sum(pow, cos, sqrt, abs, max, min, tan, clamp, log, round)",
                               grad_of<T, many_ops, arr>, false);
  check_against_scalar_path<T>("sum(s * abs(x) + relu(x - s) + sigmoid(x * s) + softplus(-x) / s)",
                               grad_of<T, with_scalar, arr, scal>, true);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(multi_pass, T, types) {
  for (std::size_t n = 0; n <= max_length; ++n) {
    check_gradient<T>("logsumexp(x)", n, [](auto x) { return tad::logsumexp(x); }, arr{-3, 3});
    check_gradient<T>("sum(square(x - mean(x)))", n,
                      [](auto x) { return tad::sum(tad::square(x - tad::mean(x))); }, arr{-2, 2});
    check_gradient<T>("softmax_cross_entropy(z, t)", n,
                      [](auto z, auto t) { return tad::softmax_cross_entropy(z, t); }, arr{-3, 3}, arr{0, 1});
  }
}

BOOST_AUTO_TEST_SUITE_END()
