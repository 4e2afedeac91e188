// Products contracted into sums (include/tad/eval/contract.hpp, doc/decisions.md item 18):
// on a target with FMA instructions (`__FMA__`) tad computes `a * b + c`, `c + a * b`,
// `a * b - c`, `c - a * b` (and the same with `square(a)`), a sum of products, and a scalar
// variable's gradient contribution `dy * x` as fused multiply-adds, rounded once, in the SIMD
// loops, their scalar tails and scalar expressions alike; without them, and in constant
// evaluation, as a multiply and an add. The data make the two roundings differ by a known amount:
// with u = 2^-(p/2 + 2) (p the significand's bits, p/2 rounded down), (1 + u)(1 - u) = 1 - u^2
// is representable in neither type and rounds to 1, so `(1 + u)(1 - u) - 1` is -u^2 fused and
// 0 unfused.
#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace {

BOOST_AUTO_TEST_SUITE(contract)

template <class T>
constexpr T tiny() {  // u
  T u = 1;
  for (int k = 0; k < std::numeric_limits<T>::digits / 2 + 2; ++k) u /= 2;
  return u;
}

constexpr bool fused =
#if defined(__FMA__)
    true;
#else
    false;
#endif

// Lengths: empty, a scalar tail only, whole batches with and without a tail, and many
// unrolled iterations; each starting one element into its vector (unaligned).
constexpr std::size_t lengths[] = {0, 1, 3, 8, 17, 33, 1000};

template <class T>
void elementwise_forms() {
  const T u = tiny<T>();
  const T expected = fused ? -u * u : T(0);  // (1 + u)(1 - u) - 1
  for (std::size_t n : lengths) {
    std::vector<T> xs(n + 1, 1 + u), ys(n + 1, 1 - u), ones(n + 1, T(1));
    const auto x = tad::constant(std::span<const T>(xs).subspan(1));
    const auto y = tad::constant(std::span<const T>(ys).subspan(1));
    const auto one = tad::constant(std::span<const T>(ones).subspan(1));
    const auto check = [&](const char* form, const std::vector<T>& got, T want) {
      BOOST_TEST_CONTEXT(form << ", n = " << n) {
        BOOST_TEST(got.size() == n);
        std::size_t wrong = 0, first = 0;
        for (std::size_t i = got.size(); i-- > 0;) {
          if (got[i] != want) ++wrong, first = i;
        }
        BOOST_TEST(wrong == 0u, wrong << " elements differ from " << want << ", the first: element " << first
                                       << " = " << (wrong ? got[first] : want));
      }
    };
    check("x * y + (-1)", tad::value(x * y + (-one)), expected);
    check("(-1) + x * y", tad::value(-one + x * y), expected);
    check("x * y - 1", tad::value(x * y - one), expected);
    check("1 - x * y", tad::value(one - x * y), -expected);
    // square(1 + u) - 1 = 2u + u^2 fused; the product rounds to 1 + 2u unfused.
    check("square(x) - 1", tad::value(tad::square(x) - one), fused ? 2 * u + u * u : 2 * u);
  }
}

BOOST_AUTO_TEST_CASE(elementwise_products_are_fused_into_sums_and_differences) {
  elementwise_forms<double>();
  elementwise_forms<float>();
}

// A sum of products: the first U * W elements (one per accumulator of the SIMD loop, U its
// unroll, W the lanes) are -1 * 1, the next U * W are (1 + u)(1 - u); each accumulator then
// holds -1 + (1 + u)(1 - u): -u^2 fused, 0 unfused. The gradient of sum(w * x * c) with
// respect to the scalar w (at w = 1), c = 1 - u: each accumulator adds c * x_i, -c and then
// c (1 + u) = 1 - u^2 (which rounds to 1 unfused): u - u^2 fused, u unfused.
template <class T>
void sums_of_products() {
  const T u = tiny<T>();
  const std::size_t lanes = TAD_UNROLL * tad::simd::width<T>, n = 2 * lanes;
  std::vector<T> xs(n + 1), ys(n + 1), cs(n + 1, 1 - u);
  for (std::size_t i = 1; i <= n; ++i) {
    xs[i] = i <= lanes ? T(-1) : 1 + u;
    ys[i] = i <= lanes ? T(1) : 1 - u;
  }
  const auto x = tad::constant(std::span<const T>(xs).subspan(1));
  const auto y = tad::constant(std::span<const T>(ys).subspan(1));
  const auto c = tad::constant(std::span<const T>(cs).subspan(1));
  const T l = static_cast<T>(lanes);
  BOOST_TEST(tad::value(tad::sum(x * y)) == (fused ? -l * u * u : T(0)));

  T w_value = 1;
  const auto w = tad::var<"w">(w_value);
  const auto [v, dw] = tad::grad(tad::sum(w * x * c), w);
  BOOST_TEST(dw == (fused ? l * (u - u * u) : l * u));
  (void)v;

  // The gradient flows through an array variable the same way: d/dx of sum(x * y) is y,
  // exactly, fused or not (nothing is added to it).
  std::vector<T> xv(xs.begin() + 1, xs.end());
  const auto xa = tad::var<"x">(xv);
  const auto [v2, dx] = tad::grad(tad::sum(xa * y), xa);
  for (std::size_t i = 0; i < n; ++i) BOOST_TEST(dx[i] == ys[i + 1]);
  (void)v2;
}

BOOST_AUTO_TEST_CASE(sums_of_products_and_scalar_gradients_are_fused) {
  sums_of_products<double>();
  sums_of_products<float>();
}

// A scalar expression: fused at run time, as multiply and add in a constant expression
// (std::fma is not constexpr), where (1 + u)(1 - u) - 1 = 0.
template <class T>
constexpr T scalar_form(T a, T b) {
  auto x = tad::var<"x">(a);
  auto y = tad::var<"y">(b);
  const auto [v, dx] = tad::grad(x * y - T(1), x);
  return dx == b ? v : T(1);  // d/dx = y, exactly
}

BOOST_AUTO_TEST_CASE(scalar_expressions_are_fused_at_run_time_only) {
  constexpr double u = tiny<double>();
  static_assert(scalar_form(1 + u, 1 - u) == 0.0);
  volatile double a = 1 + u, b = 1 - u;  // run time
  BOOST_TEST(scalar_form<double>(a, b) == (fused ? -u * u : 0.0));
  constexpr float uf = tiny<float>();
  static_assert(scalar_form(1 + uf, 1 - uf) == 0.0f);
  volatile float af = 1 + uf, bf = 1 - uf;
  BOOST_TEST(scalar_form<float>(af, bf) == (fused ? -uf * uf : 0.0f));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
