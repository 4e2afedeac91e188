// The evaluation schedule derived from the expression type: pass counts and fusion.

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

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

// softmax cross-entropy w.r.t. the logits: also three (the dot product's backward shares the
// first backward loop).
using sce = decltype(tad::softmax_cross_entropy(x, tad::constant(ys)));
static_assert(plan<sce, decltype(x)>::passes == 3);

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
static_assert(plan<prod, decltype(x), decltype(y)>::passes == 2);
}  // namespace

BOOST_AUTO_TEST_CASE(schedule_pass_counts_hold_at_run_time) {
  // The same expressions evaluate (a run-time smoke check next to the static_asserts above).
  xs = {1, 2, 3, 4};
  ys = {1, 1, 1, 1};
  auto [v, gx] = tad::grad(tad::sum(x) * tad::sum(y), x);
  BOOST_TEST(v == 40.0);
  BOOST_TEST(gx == std::vector<double>({4, 4, 4, 4}), boost::test_tools::per_element());
}
}  // namespace schedule_test
