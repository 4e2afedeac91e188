// custom_gradient with several outputs (f returns a std::tuple; the rule g(dy_0, ..., dy_{K-1},
// x..., y_0, ..., y_{K-1}) returns one adjoint per input): gradients against central differences
// of the same computation written by hand (vectors around the SIMD width, unaligned, matrices,
// float and double, a scalar input broadcast, products around it, in a scan's body); a rule not
// linear in the adjoint used where outputs are read several times, against the rule applied once
// to the summed adjoints, written from its definition; an output no adjoint reaches gets a zero
// (with a NaN-filled workspace), and no output reached means no call of the rule; two calls are
// two nodes; structural zeros; printing, stripping, numbers, shape errors.
#include "scan/common.hpp"

#include <tad/check/print.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

using tad_test::scan::differences;
using tad_test::scan::doubles;
using tad_test::scan::expect_all_close;
using tad_test::scan::tol;
using tad_test::scan::unaligned;

namespace {

/// d clipped to [-lim, lim], for numbers and batches.
template <class V>
V clip(V d, double lim) {
  const V l = tad::simd::splat<V>(lim);
  return tad::simd::select(d < -l, -l, tad::simd::select(d > l, l, d));
}
double clip1(double d, double lim) { return std::min(std::max(d, -lim), lim); }

/// (a cos b, a sin b), whose rule clips each output's summed adjoint to [-lim, lim] first (the
/// true derivative for a large lim). `calls` counts the rule's calls (batches and tail elements).
auto polar(double lim, std::atomic<int>* calls = nullptr) {
  return tad::custom_gradient(
      [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; },
      [lim, calls](auto d0, auto d1, auto a, auto b, auto, auto) {
        if (calls != nullptr) ++*calls;
        const auto c0 = clip(d0, lim), c1 = clip(d1, lim);
        return tad::adjoints{c0 * tad::math::cos(b) + c1 * tad::math::sin(b),
                             a * (c1 * tad::math::cos(b) - c0 * tad::math::sin(b))};
      });
}

/// The same forward with a rule that couples the outputs: the pair of adjoints (dy_0, dy_1)
/// scaled to norm at most lim first (clip by norm).
auto polar_norm(double lim) {
  return tad::custom_gradient(
      [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; },
      [lim](auto d0, auto d1, auto a, auto b, auto, auto) {
        using V = decltype(d0);
        const V l = tad::simd::splat<V>(lim), one = tad::simd::splat<V>(1.0);
        const V norm = tad::math::sqrt(d0 * d0 + d1 * d1);
        const V s = tad::simd::select(norm > l, l / norm, one);
        const V c0 = s * d0, c1 = s * d1;
        return tad::adjoints{c0 * tad::math::cos(b) + c1 * tad::math::sin(b),
                             a * (c1 * tad::math::cos(b) - c0 * tad::math::sin(b))};
      });
}
/// polar_norm's rule by hand: (da, db) at (a, b) for the adjoints (d0, d1); `clipped` counts.
std::pair<double, double> polar_norm_rule(double d0, double d1, double a, double b, double lim, int* clipped = nullptr) {
  const double norm = std::sqrt(d0 * d0 + d1 * d1);
  if (norm > lim) {
    d0 *= lim / norm, d1 *= lim / norm;
    if (clipped != nullptr) ++*clipped;
  }
  return {d0 * std::cos(b) + d1 * std::sin(b), a * (d1 * std::cos(b) - d0 * std::sin(b))};
}

/// The problem: x = r cos(th), y = r sin(th); loss = sum(w0 x^2) + sum(w1 x) + sum(w2 y): x is
/// read twice, y once.
struct polar_problem {
  std::vector<double> r, th, w0, w1, w2;
  explicit polar_problem(std::size_t n, unsigned seed = 3) : r(n), th(n), w0(n), w1(n), w2(n) {
    tad_test::fill_uniform(r, 0.5, 2, seed);
    tad_test::fill_uniform(th, -3, 3, seed + 1);
    tad_test::fill_uniform(w0, -1, 1, seed + 2);
    tad_test::fill_uniform(w1, -1, 1, seed + 3);
    tad_test::fill_uniform(w2, -1, 1, seed + 4);
  }
  double loss() const {
    double l = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double x = r[i] * std::cos(th[i]), y = r[i] * std::sin(th[i]);
      l += w0[i] * x * x + w1[i] * x + w2[i] * y;
    }
    return l;
  }
  /// The rule's gradient: once per element, on x's summed adjoint (2 w0 x + w1) and y's (w2).
  std::pair<std::vector<double>, std::vector<double>> rule(double lim, std::size_t* clipped = nullptr) const {
    std::vector<double> gr(r.size()), gt(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double x = r[i] * std::cos(th[i]);
      const double d0 = 2 * w0[i] * x + w1[i], d1 = w2[i];
      const double c0 = clip1(d0, lim), c1 = clip1(d1, lim);
      if (clipped != nullptr && c0 != d0) ++*clipped;
      gr[i] = c0 * std::cos(th[i]) + c1 * std::sin(th[i]);
      gt[i] = r[i] * (c1 * std::cos(th[i]) - c0 * std::sin(th[i]));
    }
    return {gr, gt};
  }
};

template <class T, class R, class TH, class W0, class W1, class W2>
auto polar_loss(double lim, const R& r, const TH& th, const W0& w0, const W1& w1, const W2& w2) {
  auto [x, y] = polar(lim)(r, th);
  return tad::sum(w0 * tad::square(x)) + tad::sum(w1 * x) + tad::sum(w2 * y);
}

constexpr double huge = 1e30;

}  // namespace

BOOST_AUTO_TEST_SUITE(outputs)

// Vectors of every length around the SIMD width, unaligned, and matrices: the true derivative
// (a rule that clips nothing) against central differences.
BOOST_AUTO_TEST_CASE_TEMPLATE(against_central_differences, T, tad_test::reals) {
  for (std::size_t n : tad_test::lengths) {
    polar_problem p(n);
    auto sr = unaligned<T>(p.r), st = unaligned<T>(p.th);
    auto s0 = unaligned<T>(p.w0), s1 = unaligned<T>(p.w1), s2 = unaligned<T>(p.w2);
    const auto R = tad::var<"r">(sr.span());
    const auto TH = tad::var<"th">(st.span());
    const auto W0 = tad::var<"w0">(s0.span());
    const tad::program prog(polar_loss<T>(huge, R, TH, W0, tad::constant(s1.cspan()), tad::constant(s2.cspan())));
    const auto [v, gr, gt, g0] = prog.grad(R, TH, W0);
    const std::string what = "n " + std::to_string(n);
    BOOST_TEST(tad_test::close(double(v), p.loss(), tol<T>()), what << ": value " << v << ", expected " << p.loss());
    const auto f = [&] { return p.loss(); };
    expect_all_close(doubles(gr), differences(p.r, f), tol<T>(), what + " dr");
    expect_all_close(doubles(gt), differences(p.th, f), tol<T>(), what + " dth");
    expect_all_close(doubles(g0), differences(p.w0, f), tol<T>(), what + " dw0");
  }
  // Matrices (3 x 5: 15 elements; 1 x 7).
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{3, 5}, {1, 7}}) {
    polar_problem p(rows * cols, 11);
    auto sr = unaligned<T>(p.r), st = unaligned<T>(p.th);
    auto s0 = unaligned<T>(p.w0), s1 = unaligned<T>(p.w1), s2 = unaligned<T>(p.w2);
    const auto R = tad::var<"r">(static_cast<const T*>(sr.data()), rows, cols);
    const auto TH = tad::var<"th">(static_cast<const T*>(st.data()), rows, cols);
    const auto W0 = tad::constant(static_cast<const T*>(s0.data()), rows, cols);
    const auto W1 = tad::constant(static_cast<const T*>(s1.data()), rows, cols);
    const auto W2 = tad::constant(static_cast<const T*>(s2.data()), rows, cols);
    const auto [v, gr, gt] = tad::grad(polar_loss<T>(huge, R, TH, W0, W1, W2), R, TH);
    const std::string what = std::to_string(rows) + " x " + std::to_string(cols);
    BOOST_TEST(tad_test::close(double(v), p.loss(), tol<T>()), what << ": value " << v);
    const auto f = [&] { return p.loss(); };
    expect_all_close(doubles(gr), differences(p.r, f), tol<T>(), what + " dr");
    expect_all_close(doubles(gt), differences(p.th, f), tol<T>(), what + " dth");
  }
}

// One node, one rule: x is read twice (two copies of x in the loss, and a let of it), y once;
// the rule clips each output's adjoint, so it must run once, on x's summed adjoint (each use's
// share alone is not clipped where the sum is). Expected: the rule written out.
BOOST_AUTO_TEST_CASE_TEMPLATE(rule_once_on_summed_adjoints, T, tad_test::reals) {
  const std::size_t n = 17;
  const double lim = 0.8;
  polar_problem p(n, 5);
  std::size_t clipped = 0;
  const auto expected = p.rule(lim, &clipped);
  const std::vector<double>&er = expected.first, &et = expected.second;
  BOOST_TEST(clipped >= 2u);  // the test can fail: per-use clipping would differ there
  std::size_t per_use_differs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = p.r[i] * std::cos(p.th[i]), a = 2 * p.w0[i] * x, b = p.w1[i];
    if (clip1(a, lim) + clip1(b, lim) != clip1(a + b, lim)) ++per_use_differs;
  }
  BOOST_TEST(per_use_differs >= 2u);
  auto sr = unaligned<T>(p.r), st = unaligned<T>(p.th);
  auto s0 = unaligned<T>(p.w0), s1 = unaligned<T>(p.w1), s2 = unaligned<T>(p.w2);
  const auto R = tad::var<"r">(sr.span());
  const auto TH = tad::var<"th">(st.span());
  const auto W0 = tad::constant(s0.cspan()), W1 = tad::constant(s1.cspan()), W2 = tad::constant(s2.cspan());
  auto [x, y] = polar(lim)(R, TH);
  const auto check = [&](const auto& loss, const std::string& what) {
    const auto [v, gr, gt] = tad::grad(loss, R, TH);
    BOOST_TEST(tad_test::close(double(v), p.loss(), tol<T>()), what << ": value " << v);
    expect_all_close(doubles(gr), er, tol<T>(), what + " dr");
    expect_all_close(doubles(gt), et, tol<T>(), what + " dth");
  };
  check(tad::sum(W0 * tad::square(x)) + tad::sum(W1 * x) + tad::sum(W2 * y), "copies");
  const auto lx = tad::let<"x">(x);
  check(tad::sum(W2 * y) + tad::sum(W0 * tad::square(lx)) + tad::sum(W1 * lx), "a let, y first");
  // y read through a product's operand (a stage around it), x in a scalar product's operand.
  check(tad::sum(W0 * tad::square(x)) + tad::dot(W1, x) + tad::dot(W2, y), "dots");
}

// Two calls of the custom gradient are two nodes, each with its rule on its own adjoints: the
// loss's x-terms split between them, each clipped on its own.
BOOST_AUTO_TEST_CASE(two_calls_two_nodes) {
  const std::size_t n = 9;
  const double lim = 0.8;
  polar_problem p(n, 5);
  const auto R = tad::var<"r">(p.r);
  const auto TH = tad::var<"th">(p.th);
  const auto W0 = tad::constant(p.w0), W1 = tad::constant(p.w1);
  const auto f = polar(lim);
  auto [x1, y1] = f(R, TH);
  auto [x2, y2] = f(R, TH);
  (void)y1;
  (void)y2;
  const auto [v, gr, gt] = tad::grad(tad::sum(W0 * tad::square(x1)) + tad::sum(W1 * x2), R, TH);
  std::size_t differs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double c = std::cos(p.th[i]), s = std::sin(p.th[i]), x = p.r[i] * c;
    const double a = clip1(2 * p.w0[i] * x, lim), b = clip1(p.w1[i], lim);
    if (a + b != clip1(2 * p.w0[i] * x + p.w1[i], lim)) ++differs;
    BOOST_TEST(tad_test::close(gr[i], (a + b) * c, 1e-12), "dr " << i);
    BOOST_TEST(tad_test::close(gt[i], -p.r[i] * (a + b) * s, 1e-12), "dth " << i);
  }
  BOOST_TEST(differs >= 1u);
}

// An output that no adjoint reaches (unused, or under stop_gradient) gets a zero, through a
// NaN-filled workspace; with no output reached the rule is not called at all.
BOOST_AUTO_TEST_CASE(zero_for_an_output_not_reached) {
  const std::size_t n = 11;
  polar_problem p(n, 7);
  const auto R = tad::var<"r">(p.r);
  const auto TH = tad::var<"th">(p.th);
  const auto W1 = tad::constant(p.w1), W2 = tad::constant(p.w2);
  std::atomic<int> calls{0};
  auto [x, y] = polar(huge, &calls)(R, TH);
  std::vector<double> gr(n), gt(n);
  {
    const tad::program prog(tad::sum(W1 * x) + tad::sum(tad::stop_gradient(y) * W2));
    std::vector<double> ws(prog.workspace_size(), std::numeric_limits<double>::quiet_NaN());
    (void)prog.grad_into(std::span<double>(ws), tad::wrt(R, gr), tad::wrt(TH, gt));
    BOOST_TEST(calls.load() > 0);
    for (std::size_t i = 0; i < n; ++i) {
      BOOST_TEST(tad_test::close(gr[i], p.w1[i] * std::cos(p.th[i]), 1e-12), "dr " << i);
      BOOST_TEST(tad_test::close(gt[i], -p.w1[i] * p.r[i] * std::sin(p.th[i]), 1e-12), "dth " << i);
    }
  }
  {
    calls = 0;
    const tad::program prog(tad::sum(W2 * y));  // x unused
    std::vector<double> ws(prog.workspace_size(), std::numeric_limits<double>::quiet_NaN());
    (void)prog.grad_into(std::span<double>(ws), tad::wrt(R, gr), tad::wrt(TH, gt));
    for (std::size_t i = 0; i < n; ++i) {
      BOOST_TEST(tad_test::close(gr[i], p.w2[i] * std::sin(p.th[i]), 1e-12), "dr " << i);
      BOOST_TEST(tad_test::close(gt[i], p.w2[i] * p.r[i] * std::cos(p.th[i]), 1e-12), "dth " << i);
    }
  }
  {
    calls = 0;
    const tad::program prog(tad::sum(tad::stop_gradient(x) * W1) + tad::sum(tad::stop_gradient(y) * W2) + tad::sum(R));
    const auto [v, g] = prog.grad(R);
    BOOST_TEST(calls.load() == 0);
    for (double gi : g) BOOST_TEST(gi == 1.0);
    double want = 0;
    for (std::size_t i = 0; i < n; ++i)
      want += p.r[i] * (p.w1[i] * std::cos(p.th[i]) + p.w2[i] * std::sin(p.th[i]) + 1);
    BOOST_TEST(tad_test::close(v, want, 1e-12));
  }
}

// Groups inside a group's inputs: (a0, a1) = f(r, th), (b0, b1) = f(a0, th2), f's rule clipping
// the pair of its adjoints by norm. The first use of b0 (its group's first output) is under
// stop_gradient, so whether an adjoint reaches a0 is known only once b1's is: through b1, a0's
// group gets b's rule's adjoint, and its rule runs once on (that, a1's) together; with both of
// b's outputs stopped, on (0, a1's) (and a0's adjoint buffer is never written: a NaN
// workspace). Expected: the rules written out.
BOOST_AUTO_TEST_CASE(groups_inside_groups) {
  const std::size_t n = 17;
  const double lim = 0.5;
  polar_problem p(n, 13);
  std::vector<double> th2(n);
  tad_test::fill_uniform(th2, -2, 2, 21);
  tad_test::fill_uniform(p.w1, -2, 2, 22);
  const auto R = tad::var<"r">(p.r);
  const auto TH = tad::var<"th">(p.th);
  const auto TH2 = tad::var<"th2">(th2);
  const auto W0 = tad::constant(p.w0), W1 = tad::constant(p.w1), W2 = tad::constant(p.w2);
  const auto f = polar_norm(lim);
  const auto as = f(R, TH);
  const auto& a0 = tad::get<0>(as);  // (clang 14 captures no structured binding)
  const auto& a1 = tad::get<1>(as);
  std::vector<double> gr(n), gt(n), g2(n);
  const auto run = [&](const auto& loss) {
    const tad::program prog(loss);
    std::vector<double> ws(prog.workspace_size(), std::numeric_limits<double>::quiet_NaN());
    return prog.grad_into(std::span<double>(ws), tad::wrt(R, gr), tad::wrt(TH, gt), tad::wrt(TH2, g2));
  };
  // b's input u: a0, or shift(a0 + r) (a stage inside b's inputs, which must not run its
  // backward when no adjoint reaches b: its adjoint buffer holds NaN).
  const auto check = [&](const auto& b_terms, bool through_b1, bool shifted) {
    std::vector<double> u(n), a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = p.r[i] * std::cos(p.th[i]);
    for (std::size_t i = 0; i < n; ++i) u[i] = !shifted ? a[i] : i == 0 ? 0.0 : a[i - 1] + p.r[i - 1];
    std::vector<double> du(n, 0.0), want_g2(n, 0.0), dv(n, 0.0);
    int clipped = 0;
    for (std::size_t i = 0; i < n && through_b1; ++i) {
      const auto db = polar_norm_rule(0, p.w1[i], u[i], th2[i], lim, &clipped);
      du[i] = db.first, want_g2[i] = db.second;
    }
    for (std::size_t j = 0; j < n; ++j) dv[j] = !shifted ? du[j] : j + 1 < n ? du[j + 1] : 0.0;
    // a1 read first, then a0 inside b's inputs; and the other way round.
    for (const bool a1_first : {true, false}) {
      const double v = a1_first ? run(tad::sum(W2 * a1) + b_terms) : run(b_terms + tad::sum(W2 * a1));
      double want = 0;
      int clipped_a = 0;
      for (std::size_t i = 0; i < n; ++i) {
        want += p.w0[i] * u[i] * std::cos(th2[i]) + p.w1[i] * u[i] * std::sin(th2[i]) + p.w2[i] * p.r[i] * std::sin(p.th[i]);
        const auto da = polar_norm_rule(dv[i], p.w2[i], p.r[i], p.th[i], lim, &clipped_a);
        const double dr = da.first + (shifted ? dv[i] : 0.0);
        const std::string what = std::string(through_b1 ? "through b1" : "b stopped") + (shifted ? ", shifted" : "") +
                                 (a1_first ? ", a1 first" : ", a1 last") + ", element " + std::to_string(i);
        BOOST_TEST(tad_test::close(gr[i], dr, 1e-12), what << ": " << gr[i] << " vs " << dr);
        BOOST_TEST(tad_test::close(gt[i], da.second, 1e-12), what << ": " << gt[i] << " vs " << da.second);
        BOOST_TEST(tad_test::close(g2[i], want_g2[i], 1e-12), what << ": " << g2[i] << " vs " << want_g2[i]);
      }
      BOOST_TEST(clipped + clipped_a >= 4);  // the test can fail: the rules clip, and a's couples its outputs
      BOOST_TEST(tad_test::close(v, want, 1e-12));
    }
  };
  {
    auto [b0, b1] = f(a0, TH2);
    check(tad::sum(W0 * tad::stop_gradient(b0)) + tad::sum(W1 * b1), true, false);
    check(tad::sum(W0 * tad::stop_gradient(b0)) + tad::sum(W1 * tad::stop_gradient(b1)), false, false);
  }
  {
    auto [b0, b1] = f(tad::shift(a0 + R), TH2);
    check(tad::sum(W0 * tad::stop_gradient(b0)) + tad::sum(W1 * b1), true, true);
    check(tad::sum(W0 * tad::stop_gradient(b0)) + tad::sum(W1 * tad::stop_gradient(b1)), false, true);
  }
}

// Found by review (each crashed, read an unwritten adjoint or ran a rule per use before its
// fix): a gradient with respect to one variable input only; a group's outputs as a scan's h0
// and xs, and as a map's two slices (the loop's inputs walked last to first, the reverse
// post-order; a staged let as h0 and xs had the same fault); a nested group whose first output
// is an input the outer rule gives a structural zero, or inside a stopped scan, map or product,
// reached through its other output; a let with a rule not linear in the adjoint read inside a
// group's inputs and outside (one node: the clip once, on the sum). NaN-filled workspaces.
BOOST_AUTO_TEST_CASE(review_cases) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto run = [&](const auto& loss, const auto&... targets) {
    const tad::program prog(loss);
    std::vector<double> ws(prog.workspace_size(), nan);
    return prog.grad_into(std::span<double>(ws), targets...);
  };
  {  // one variable input requested at a time
    const std::size_t n = 11;
    polar_problem p(n, 31);
    const auto R = tad::var<"r">(p.r);
    const auto TH = tad::var<"th">(p.th);
    auto [x, y] = polar(huge)(R, TH);
    const auto loss = tad::sum(tad::constant(p.w1) * x) + tad::sum(y);
    std::vector<double> gr(n), gt(n);
    (void)run(loss, tad::wrt(TH, gt));
    (void)run(loss, tad::wrt(R, gr));
    for (std::size_t i = 0; i < n; ++i) {
      const double c = std::cos(p.th[i]), s = std::sin(p.th[i]);
      BOOST_TEST(tad_test::close(gr[i], p.w1[i] * c + s, 1e-12));
      BOOST_TEST(tad_test::close(gt[i], p.r[i] * (c - p.w1[i] * s), 1e-12));
    }
  }
  {  // a scan's h0 and xs, a map's slices: loss = sum(w (tanh(x) y + x)), one step / row each
    const std::size_t rows = 2, n = 5, N = rows * n;
    polar_problem p(N, 37);
    const auto R = tad::var<"r">(p.r.data(), rows, n);
    const auto TH = tad::var<"th">(p.th.data(), rows, n);
    const auto W = tad::constant(p.w0.data(), rows, n);
    auto [x, y] = polar(huge)(R, TH);
    const auto f = [&] {
      double l = 0;
      for (std::size_t i = 0; i < N; ++i) {
        const double xi = p.r[i] * std::cos(p.th[i]), yi = p.r[i] * std::sin(p.th[i]);
        l += p.w0[i] * (std::tanh(xi) * yi + xi);
      }
      return l;
    };
    const auto body = [](auto a, auto b) { return tad::tanh(a) * b + a; };
    std::vector<double> gr(N), gt(N);
    const double v1 = run(tad::sum(W * tad::scan(body, x, y)), tad::wrt(R, gr), tad::wrt(TH, gt));
    BOOST_TEST(tad_test::close(v1, f(), 1e-12));
    expect_all_close(gr, differences(p.r, f), 1e-6, "scan(h0 = x, xs = y) dr");
    expect_all_close(gt, differences(p.th, f), 1e-6, "scan(h0 = x, xs = y) dth");
    const double v2 = run(tad::sum(W * tad::map(rows, body, tad::each_row(x), tad::each_row(y))), tad::wrt(R, gr),
                          tad::wrt(TH, gt));
    BOOST_TEST(tad_test::close(v2, f(), 1e-12));
    expect_all_close(gr, differences(p.r, f), 1e-6, "map(x, y) dr");
    expect_all_close(gt, differences(p.th, f), 1e-6, "map(x, y) dth");
    // A staged let (of a product) as h0 and xs: sum(w (tanh(z) z + z)), z = A C.
    const std::size_t k = 3;
    std::vector<double> a(rows * k), cm(k * n);
    tad_test::fill_uniform(a, -1, 1, 41);
    tad_test::fill_uniform(cm, -1, 1, 42);
    const auto A = tad::var<"A">(a.data(), rows, k);
    const auto L = tad::let<"L">(tad::matmul(A, tad::constant(cm.data(), k, n)));
    const auto g = [&] {
      double l = 0;
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double z = 0;
          for (std::size_t q = 0; q < k; ++q) z += a[i * k + q] * cm[q * n + j];
          l += p.w0[i * n + j] * (std::tanh(z) * z + z);
        }
      return l;
    };
    std::vector<double> ga(rows * k);
    (void)run(tad::sum(W * tad::scan(body, L, L)), tad::wrt(A, ga));
    expect_all_close(ga, differences(a, g), 1e-6, "scan(h0 = let, xs = let) dA");
  }
  {  // a nested group reached through its other output only: h1 read, h0 an input of g's that
     // g's rule cuts, or inside a stopped scan, map or product
    const std::size_t n = 9, T = 3;
    polar_problem p(n, 43);
    std::vector<double> r2(n), xs(T * n), two{1.0, 2.0};
    tad_test::fill_uniform(r2, 0.5, 2, 44);
    tad_test::fill_uniform(xs, -1, 1, 45);
    const auto R = tad::var<"r">(p.r);
    const auto TH = tad::var<"th">(p.th);
    const auto R2 = tad::var<"r2">(r2);
    const auto W = tad::constant(p.w1);
    const auto cut = tad::custom_gradient(
        [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; },
        [](auto d0, auto d1, auto, auto b, auto, auto) {
          return tad::adjoints{d0 * tad::math::cos(b) + d1 * tad::math::sin(b), tad::zero{}};
        });
    auto [h0, h1] = polar(huge)(R, TH);
    auto [g0, g1] = cut(R2, h0);
    const auto expect = [&](const std::string& what, const std::vector<double>& gr, const std::vector<double>& gt) {
      for (std::size_t i = 0; i < n; ++i) {  // through h1 only: w sin(th), w r cos(th)
        BOOST_TEST(tad_test::close(gr[i], p.w1[i] * std::sin(p.th[i]), 1e-12), what << " dr " << i);
        BOOST_TEST(tad_test::close(gt[i], p.w1[i] * p.r[i] * std::cos(p.th[i]), 1e-12), what << " dth " << i);
      }
    };
    std::vector<double> gr(n), gt(n), g2(n);
    (void)run(tad::sum(g0 + g1) + tad::sum(W * h1), tad::wrt(R, gr), tad::wrt(TH, gt), tad::wrt(R2, g2));
    expect("cut input, h1 last", gr, gt);
    (void)run(tad::sum(W * h1) + tad::sum(g0 + g1), tad::wrt(R, gr), tad::wrt(TH, gt), tad::wrt(R2, g2));
    expect("cut input, h1 first", gr, gt);
    const auto step = [](auto h, auto xt) { return tad::tanh(h) + xt; };
    (void)run(tad::sum(tad::stop_gradient(tad::scan(step, h0, tad::constant(xs.data(), T, n)))) + tad::sum(W * h1),
              tad::wrt(R, gr), tad::wrt(TH, gt));
    expect("stopped scan", gr, gt);
    (void)run(tad::sum(tad::stop_gradient(tad::outer(h0, W))) + tad::sum(W * h1), tad::wrt(R, gr), tad::wrt(TH, gt));
    expect("stopped product", gr, gt);
    (void)run(tad::sum(tad::stop_gradient(tad::map(2, [](auto e) { return tad::exp(e); },
                                                   tad::each_block(tad::outer(tad::constant(two), h0))))) +
                  tad::sum(W * h1),
              tad::wrt(R, gr), tad::wrt(TH, gt));
    expect("stopped map", gr, gt);
  }
  {  // a let with a clip, read inside a group's inputs and outside: the clip once, on the sum
    const std::size_t n = 9;
    const double c = 0.3;
    polar_problem p(n, 47);
    const auto V = tad::var<"v">(p.r);
    const auto TH = tad::var<"th">(p.th);
    const auto L = tad::let<"L">(tad::clip_gradient(V + 1.0, -c, c));
    auto [x, y] = polar(huge)(L, TH);
    std::vector<double> gv(n), gt(n);
    (void)run(tad::sum(tad::constant(p.w0) * x) + tad::sum(tad::constant(p.w1) * y) + tad::sum(tad::constant(p.w2) * L),
              tad::wrt(V, gv), tad::wrt(TH, gt));
    std::size_t differs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = p.w0[i] * std::cos(p.th[i]) + p.w1[i] * std::sin(p.th[i]);
      BOOST_TEST(tad_test::close(gv[i], clip1(d + p.w2[i], c), 1e-12), "dv " << i);
      if (clip1(d, c) + clip1(p.w2[i], c) != clip1(d + p.w2[i], c)) ++differs;
    }
    BOOST_TEST(differs >= 2u);
  }
}

// A scalar input, broadcast (its adjoint the sum of the rule's), and a structural zero.
BOOST_AUTO_TEST_CASE_TEMPLATE(scalar_input_and_structural_zero, T, tad_test::reals) {
  // (s x, x / s) with the true rule; loss = sum(w0 * (s x)^2) + sum(w1 * x / s).
  const auto scaled = tad::custom_gradient([](auto x, auto s) { return std::tuple{s * x, x / s}; },
                                           [](auto d0, auto d1, auto x, auto s, auto, auto) {
                                             return tad::adjoints{d0 * s + d1 / s, d0 * x - d1 * x / (s * s)};
                                           });
  for (std::size_t n : {1u, 7u, 8u, 17u, 100u}) {
    std::vector<double> x(n), w0(n), w1(n), s{1.3};
    tad_test::fill_uniform(x, -1, 1, 3);
    tad_test::fill_uniform(w0, -1, 1, 4);
    tad_test::fill_uniform(w1, -1, 1, 5);
    const auto loss = [&] {
      double l = 0;
      for (std::size_t i = 0; i < n; ++i) l += w0[i] * (s[0] * x[i]) * (s[0] * x[i]) + w1[i] * x[i] / s[0];
      return l;
    };
    auto sx = unaligned<T>(x), s0 = unaligned<T>(w0), s1 = unaligned<T>(w1);
    T sv = T(s[0]);
    const auto X = tad::var<"x">(sx.span());
    const auto S = tad::var<"s">(sv);
    auto [a, b] = scaled(X, S);
    const auto [v, gx, gs] = tad::grad(tad::sum(tad::constant(s0.cspan()) * tad::square(a)) +
                                           tad::sum(tad::constant(s1.cspan()) * b),
                                       X, S);
    const std::string what = "n " + std::to_string(n);
    BOOST_TEST(tad_test::close(double(v), loss(), tol<T>()), what << ": value " << v);
    expect_all_close(doubles(gx), differences(x, loss), tol<T>(), what + " dx");
    expect_all_close({double(gs)}, differences(s, loss), tol<T>(), what + " ds");
  }
  // A structural zero: th gets no gradient, r its rule's.
  const auto no_th = tad::custom_gradient(
      [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; },
      [](auto d0, auto d1, auto, auto b, auto, auto) {
        return tad::adjoints{d0 * tad::math::cos(b) + d1 * tad::math::sin(b), tad::zero{}};
      });
  std::vector<double> r{1, 2, 3}, th{0.3, -0.2, 1.1};
  const auto R = tad::var<"r">(r);
  const auto TH = tad::var<"th">(th);
  auto [x, y] = no_th(R, TH);
  static_assert(tad::gradient_is_zero_v<decltype(tad::sum(x + y)), decltype(TH)>);
  static_assert(!tad::gradient_is_zero_v<decltype(tad::sum(x + y)), decltype(R)>);
  const auto [v, gr, gt] = tad::grad(tad::sum(x + y), R, TH);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(tad_test::close(gr[i], std::cos(th[i]) + std::sin(th[i]), 1e-12));
    BOOST_TEST(gt[i] == 0.0);
  }
}

// Products around it: an input computed by a product, an output multiplied by one.
BOOST_AUTO_TEST_CASE_TEMPLATE(products_around, T, tad_test::reals) {
  const std::size_t m = 3, k = 4, n = 5;
  std::vector<double> a(m * k), w(k * n), th(m * n), c(n * 2);
  tad_test::fill_uniform(a, -1, 1, 3);
  tad_test::fill_uniform(w, -1, 1, 4);
  tad_test::fill_uniform(th, -2, 2, 5);
  tad_test::fill_uniform(c, -1, 1, 6);
  // Z = A W (m x n); (X, Y) = polar(Z, TH); loss = sum((X C)^2) + sum(Y).
  const auto loss = [&] {
    double l = 0;
    std::vector<double> z(m * n, 0.0), xs(m * n);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t q = 0; q < k; ++q) z[i * n + j] += a[i * k + q] * w[q * n + j];
        xs[i * n + j] = z[i * n + j] * std::cos(th[i * n + j]);
        l += z[i * n + j] * std::sin(th[i * n + j]);
      }
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < 2; ++j) {
        double s = 0;
        for (std::size_t q = 0; q < n; ++q) s += xs[i * n + q] * c[q * 2 + j];
        l += s * s;
      }
    return l;
  };
  auto sa = unaligned<T>(a), sw = unaligned<T>(w), st = unaligned<T>(th), sc = unaligned<T>(c);
  const auto A = tad::var<"A">(static_cast<const T*>(sa.data()), m, k);
  const auto W = tad::var<"W">(static_cast<const T*>(sw.data()), k, n);
  const auto TH = tad::var<"th">(static_cast<const T*>(st.data()), m, n);
  const auto C = tad::var<"C">(static_cast<const T*>(sc.data()), n, 2);
  auto [x, y] = polar(huge)(tad::matmul(A, W), TH);
  const tad::program prog(tad::sum(tad::square(tad::matmul(x, C))) + tad::sum(y));
  const auto [v, ga, gw, gt, gc] = prog.grad(A, W, TH, C);
  BOOST_TEST(tad_test::close(double(v), loss(), tol<T>()), "value " << v << ", expected " << loss());
  expect_all_close(doubles(ga), differences(a, loss), tol<T>(), "dA");
  expect_all_close(doubles(gw), differences(w, loss), tol<T>(), "dW");
  expect_all_close(doubles(gt), differences(th, loss), tol<T>(), "dth");
  expect_all_close(doubles(gc), differences(c, loss), tol<T>(), "dC");
}

// In a scan's body: h_{t+1} = tanh(u) + 0.5 v, (u, v) = polar(h_t, x_t); the loss reads every
// carry. T = 0, 1, 2, 5; checkpointed bit for bit the stored run.
BOOST_AUTO_TEST_CASE_TEMPLATE(in_a_scan_body, T, tad_test::reals) {
  const std::size_t n = 5;
  for (std::size_t steps : {0u, 1u, 2u, 5u}) {
    std::vector<double> h0(n), xs(steps * n);
    tad_test::fill_uniform(h0, -1, 1, 3);
    tad_test::fill_uniform(xs, -2, 2, 4);
    const auto loss = [&] {
      std::vector<double> h = h0;
      double l = 0;
      for (std::size_t t = 0; t < steps; ++t) {
        for (std::size_t i = 0; i < n; ++i) {
          const double th = xs[t * n + i];
          h[i] = std::tanh(h[i] * std::cos(th)) + 0.5 * h[i] * std::sin(th);
        }
        for (double v : h) l += v * v;
      }
      return l;
    };
    auto sh = unaligned<T>(h0), sx = unaligned<T>(xs);
    const auto H0 = tad::var<"h0">(sh.span());
    const auto XS = tad::var<"xs">(static_cast<const T*>(sx.data()), steps, n);
    const auto body = [](auto h, auto x) {
      auto [u, v] = polar(huge)(h, x);
      return tad::tanh(u) + T(0.5) * v;
    };
    const tad::program prog(tad::sum(tad::square(tad::scan(body, H0, XS, tad::every_step))));
    const auto [v, gh, gx] = prog.grad(H0, XS);
    const std::string what = "T " + std::to_string(steps);
    BOOST_TEST(tad_test::close(double(v), loss(), tol<T>()), what << ": value " << v << ", expected " << loss());
    expect_all_close(doubles(gh), differences(h0, loss), tol<T>(), what + " dh0");
    expect_all_close(doubles(gx), differences(xs, loss), tol<T>(), what + " dxs");
    // The last carry, stored and checkpointed (every 2 steps): the same numbers.
    const tad::program stored(tad::sum(tad::square(tad::scan(body, H0, XS))));
    const tad::program checkpointed(tad::sum(tad::square(tad::scan(body, H0, XS, tad::scan_options{.checkpoint = 2}))));
    const auto [v1, gh1, gx1] = stored.grad(H0, XS);
    const auto [v2, gh2, gx2] = checkpointed.grad(H0, XS);
    BOOST_TEST(v2 == v1);
    BOOST_TEST(doubles(gh2) == doubles(gh1), what);
    BOOST_TEST(doubles(gx2) == doubles(gx1), what);
  }
}

// Printing, stripping (the true derivative, whatever the rule), numbers, a shape error.
BOOST_AUTO_TEST_CASE(print_strip_numbers_errors) {
  std::vector<double> r{1, 2, 3}, th{0.3, -0.2, 1.1}, bad{1, 2};
  const auto R = tad::var<"r">(r);
  const auto TH = tad::var<"th">(th);
  auto [x, y] = polar(1e-3)(R, TH);
  BOOST_TEST(tad::to_string(x) == "custom_gradient[$0 * cos($1); output 0 of 2](r, th)");
  BOOST_TEST(tad::to_string(y) == "custom_gradient[$0 * sin($1); output 1 of 2](r, th)");
  BOOST_TEST(tad::modifier_count_v<decltype(x + y)> == 2u);
  const auto [v, gr, gt] = tad::grad(tad::strip_gradient_modifiers(tad::sum(x * y)), R, TH);
  for (std::size_t i = 0; i < 3; ++i) {
    // x y = r^2 sin(th) cos(th) = r^2 sin(2 th) / 2.
    BOOST_TEST(tad_test::close(gr[i], r[i] * std::sin(2 * th[i]), 1e-12));
    BOOST_TEST(tad_test::close(gt[i], r[i] * r[i] * std::cos(2 * th[i]), 1e-12));
  }
  (void)v;
  const auto [a, b] = polar(1)(2.0, 0.5);
  BOOST_TEST(a == 2.0 * std::cos(0.5));
  BOOST_TEST(b == 2.0 * std::sin(0.5));
  const auto wrong = polar(1)(R, tad::var<"b">(bad));
  tad_test::expect_message<tad::shape_error>([&] { (void)tad::value(tad::sum(tad::get<0>(wrong) + tad::get<1>(wrong))); },
                           "tad::custom_gradient(f, g)(x...): input 0 is 3, input 1 is 2: the array inputs of a "
                           "custom_gradient with several outputs must have one shape");
}

BOOST_AUTO_TEST_SUITE_END()
