// The evaluation schedule derived from the expression type: pass counts and fusion.

#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace schedule_test {
std::vector<double> xs(4), ys(4);
double sv = 1;
namespace {
auto x = tad::var<"x">(xs);
auto y = tad::var<"y">(ys);
[[maybe_unused]] auto s = tad::var<"s">(sv);

template <class E, class... X>
using plan = tad::detail::plan<E, tad::detail::wrt_list<X...>>;

// sum(f(x)) at the top: forward and backward fuse into one loop.
using W1 = decltype(tad::sum(tad::exp(tad::sin(x)) * x + tad::square(tad::tanh(x))));
static_assert(plan<W1, decltype(x)>::fused);
static_assert(plan<W1, decltype(x)>::passes == 1);

// a * sum(...) + c with a scalar variable: the sum's adjoint (a) is known beforehand.
using affine = decltype(s * tad::sum(x * y) + tad::square(s));
static_assert(plan<affine, decltype(x), decltype(s)>::passes == 1);

// log(sum(...)): the adjoint 1/sum needs the sum: forward, then backward.
using logsum = decltype(tad::log(tad::sum(tad::exp(x))));
static_assert(!plan<logsum, decltype(x)>::fused);
static_assert(plan<logsum, decltype(x)>::passes == 2);

// logsumexp: maximum, sum of exponentials, gradient.
using lse = decltype(tad::logsumexp(x));
static_assert(plan<lse, decltype(x)>::passes == 3);

// softmax cross-entropy w.r.t. the logits, sum(t) * logsumexp(z) - dot(t, z): four. The sum
// of the targets is its own loop: it never meets z elementwise, so it may have its own length
// (the two constant leaves are not known to be one array); the dot product's backward shares
// the first backward loop.
using sce = decltype(tad::softmax_cross_entropy(x, tad::constant(ys)));
static_assert(plan<sce, decltype(x)>::nests == 2);
static_assert(plan<sce, decltype(x)>::passes == 4);

// x - mean(x): the mean, a fused outer loop, the mean's backward.
using centered = decltype(tad::sum(tad::square(x - tad::mean(x))));
static_assert(plan<centered, decltype(x)>::fused);
static_assert(plan<centered, decltype(x)>::passes == 3);

// The W2 log-likelihood: loop-free terms leave the sum, the rest fuses into one loop.
using w2 = decltype(tad::sum(-0.5 * tad::square((x - s) / s) - tad::log(s) - 0.9));
static_assert(plan<w2, decltype(x), decltype(s)>::passes == 1);

// Value only: one loop per level, no backward loop.
static_assert(plan<lse>::passes == 2);
static_assert(plan<W1>::passes == 1);

// A gradient w.r.t. a variable the reductions do not reach needs no backward loop.
static_assert(plan<decltype(s * tad::sum(tad::exp(x))), decltype(s)>::passes == 1);

// Product of two sums at the top: each adjoint needs the other's value.
using prod = decltype(tad::sum(x) * tad::sum(y));
static_assert(!plan<prod, decltype(x), decltype(y)>::fused);
// x and y never meet elementwise, so they may differ in length and each runs its own loop per
// pass (extent classes, doc/design.md): a forward and a backward loop each, four in all, and
// still each array read twice.
static_assert(plan<prod, decltype(x), decltype(y)>::nests == 2);
static_assert(plan<prod, decltype(x), decltype(y)>::passes == 4);
// Where they meet (sum(x * y)), one class, one loop per pass.
using dotp = decltype(tad::sum(x) * tad::sum(x * y));
static_assert(plan<dotp, decltype(x), decltype(y)>::nests == 1);
static_assert(plan<dotp, decltype(x), decltype(y)>::passes == 2);
}  // namespace

BOOST_AUTO_TEST_CASE(schedule_pass_counts_hold_at_run_time) {
  // The same expressions evaluate (a run-time smoke check next to the static_asserts above).
  xs = {1, 2, 3, 4};
  ys = {1, 1, 1, 1};
  auto [v, gx] = tad::grad(tad::sum(x) * tad::sum(y), x);
  BOOST_TEST(v == 40.0);
  BOOST_TEST(gx == std::vector<double>({4, 4, 4, 4}), boost::test_tools::per_element());
}

// logsumexp(x) runs a scaled pass: the gradient is computed with a unit adjoint in the loop that
// sums exp(x - max(x)), then multiplied by the true adjoint a = 1 / sum. For x empty, all -inf
// or with a NaN, a is inf or NaN; a variable that pass does not touch must keep its exact
// gradient (found by the fuzzer: inf * 0 gave NaN). d/ds by hand: 0, 1 and 2 s.
BOOST_AUTO_TEST_CASE_TEMPLATE(scaled_pass_leaves_untouched_gradients_exact, T, tad_test::reals) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  constexpr T nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<std::vector<T>> inputs{{}, {-inf}, std::vector<T>(9, -inf), {T(1), nan, T(2)}};
  for (std::vector<T> xv : inputs) {
    BOOST_TEST_CONTEXT("x of length " << xv.size()) {
      T sval = T(0.75);
      const auto xx = tad::var<"x">(xv);
      const auto ss = tad::var<"s">(sval);
      using X = decltype(xx);
      using S = decltype(ss);
      static_assert(plan<decltype(tad::logsumexp(xx)), X, S>::scaled);
      static_assert(plan<decltype(tad::logsumexp(xx) + ss), X, S>::scaled);
      static_assert(plan<decltype(tad::logsumexp(xx) + tad::square(ss)), X, S>::scaled);

      const auto [v0, gx0, gs0] = tad::grad(tad::logsumexp(xx), xx, ss);
      BOOST_TEST(gs0 == T(0));
      const auto [v1, gx1, gs1] = tad::grad(tad::logsumexp(xx) + ss, xx, ss);
      BOOST_TEST(gs1 == T(1));
      const auto [v2, gx2, gs2] = tad::grad(tad::logsumexp(xx) + tad::square(ss), xx, ss);
      BOOST_TEST(gs2 == T(2) * sval);
      // The value: -inf for an empty or all -inf x, NaN with a NaN.
      if (xv.size() == 3) {
        BOOST_TEST(std::isnan(v0));
      } else {
        BOOST_TEST(v0 == -inf);
      }
    }
  }
}
}  // namespace schedule_test
