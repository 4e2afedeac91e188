// grad with respect to more than 64 variables (the per-variable sets of the schedule are
// bitsets of ceil(N / 64) words). The expression holds only a few of them, on both sides of
// the word boundary: compile time grows about quadratically with the number of scalar
// variables in the expression (doc/compile-time-checks.md, "Diagnostics"), and a gradient
// with respect to the others is zero.

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

/// "v00", "v01", ...: one name per variable.
template <std::size_t K>
constexpr tad::fixed_string<4> numbered_name() {
  const char s[4] = {'v', static_cast<char>('0' + K / 10), static_cast<char>('0' + K % 10), '\0'};
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(many_variables)

// 66 scalar variables v00..v65 and the array x (the 67th) in one grad call; the expression
// holds v00, v63, v64, v65 and x: L = log(sum_i exp(x_i S)) + v65^2, S = sum_k c_k v_k over
// those k, c_k = k + 1. dL/dv_k = c_k sum_i x_i p_i (+ 2 v65 for v65), dL/dx_i = S p_i with
// p = softmax(x S), and 0 for the other variables. The sum over exp is the plan's scaled pass,
// which scales the gradients of exactly the variables in its bitset: v64, v65 and x are in its
// second word.
BOOST_AUTO_TEST_CASE(grad_over_66_scalar_variables_and_an_array) {
  constexpr std::size_t N = 66;
  std::array<double, N> v{};
  for (std::size_t k = 0; k < N; ++k) v[k] = 0.01 * double(k) - 0.3;
  constexpr std::array<std::size_t, 4> used{0, 63, 64, 65};
  std::vector<double> xs{0.5, -1.0, 2.0, 0.25, 1.5};
  double S = 0;
  for (std::size_t k : used) S += double(k + 1) * v[k];
  double z = 0, xp = 0;
  for (double xi : xs) z += std::exp(xi * S);
  for (double xi : xs) xp += xi * std::exp(xi * S) / z;

  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto x = tad::var<"x">(xs);
    auto var = [&](auto k) { return tad::var<numbered_name<k.value>()>(v[k.value]); };
    auto term = [&](auto k) { return x * var(k) * double(k.value + 1); };
    using std::integral_constant;
    const integral_constant<std::size_t, 0> k0;
    const integral_constant<std::size_t, 63> k63;
    const integral_constant<std::size_t, 64> k64;
    const integral_constant<std::size_t, 65> k65;
    auto e = tad::log(tad::sum(tad::exp(term(k0) + term(k63) + term(k64) + term(k65)))) + var(k65) * var(k65);
    using W = tad::detail::wrt_list<decltype(tad::var<numbered_name<K>()>(v[K]))..., decltype(x)>;
    static_assert(tad::detail::plan<decltype(e), W>::scaled, "the test is meant for the scaled pass");
    auto r = tad::grad(e, tad::var<numbered_name<K>()>(v[K])..., x);
    static_assert(std::tuple_size_v<decltype(r)> == N + 2);
    BOOST_TEST(std::get<0>(r) == std::log(z) + v[65] * v[65], boost::test_tools::tolerance(1e-12));
    const std::array<double, N> gv{std::get<K + 1>(r)...};
    for (std::size_t k = 0; k < N; ++k) {
      const bool in_e = std::find(used.begin(), used.end(), k) != used.end();
      const double expected = (in_e ? double(k + 1) * xp : 0.0) + (k == 65 ? 2 * v[65] : 0.0);
      BOOST_TEST_CONTEXT("d/dv" << k) { BOOST_TEST(gv[k] == expected, boost::test_tools::tolerance(1e-12)); }
    }
    const auto& gx = std::get<N + 1>(r);
    BOOST_REQUIRE_EQUAL(gx.size(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      BOOST_TEST(gx[i] == S * std::exp(xs[i] * S) / z, boost::test_tools::tolerance(1e-12));
    }
  }(std::make_index_sequence<N>{});
}

BOOST_AUTO_TEST_SUITE_END()
