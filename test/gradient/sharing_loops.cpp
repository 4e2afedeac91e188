// Shared subexpressions across loops (doc/semantics.md "Shared subexpressions", doc/design.md
// "Lets across loops"): a let whose rule is not linear in the adjoint, used in the arguments of
// several reductions, runs its rule once per element on the adjoint SUMMED over every use, even
// where those reductions push their adjoints in different passes (`c - mean(c)`). Expected
// values are derived by hand from that definition; each case also shows the unshared form (each
// copy's rule on its own share). Rules: clip_gradient, a custom_gradient whose rule is dy * dy,
// an override rule clip(dy, -0.1, 0.1); 2 and 3 uses; in one pass, across two and three passes,
// over vectors, a matrix with a row vector (a row nest) and a reduction along the rows' values
// (the clipped-logits logistic loss written as two means); a scalar let in the scalar code and
// in loop invariants (its rule at the end of the run); lengths around the SIMD widths,
// unaligned; the clip cases in float and double, the others in double (the deferral is the same
// code for both types; the TU's compile time is CI's budget).
#include <gradient/common.hpp>
#include <support/check.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace {

using grad_test::clip;
using grad_test::expect;
using grad_test::expect_all;
using tad_test::reals;

const std::vector<std::size_t> sizes{1, 3, 8, 9, 17, 1000};

using grad_test::identity_clip;
using grad_test::squared_rule;

template <class T>
std::size_t argmax(const tad_test::buffer<T>& d) {
  return static_cast<std::size_t>(std::max_element(d.data(), d.data() + d.size()) - d.data());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sharing_across_loops)

// One pass, two and three reductions: sum(0.3 c) + sum(0.4 c c) sends 0.3 + 0.8 x_i into c,
// clipped once to [-0.5, 0.5] (unshared: clip(0.3) + 2 clip(0.4 x_i), each of the three copies
// its own share); adding max(c) (a third loop region, the same pass) adds 1 at the maximum.
BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_in_two_and_three_reductions, T, reals) {
  for (std::size_t n : sizes) {
    auto d = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(d.span());
    auto c = tad::let<"c">(tad::clip_gradient(x, -0.5, 0.5));
    auto u = tad::per_use(tad::clip_gradient(x, -0.5, 0.5));
    const double tol = grad_test::tol<T>();
    const std::size_t top = argmax(d);
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * c) + tad::sum(0.4 * c * c), x)),
               grad_test::map(d, [](double xi) { return clip(0.3 + 0.8 * xi, -0.5, 0.5); }), tol, "2 loops, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u) + tad::sum(0.4 * u * u), x)),
               grad_test::map(d, [](double xi) { return 0.3 + 2 * clip(0.4 * xi, -0.5, 0.5); }), tol, "2 loops, unshared");
    std::vector<double> shared3(n), unshared3(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double xi = double(d[i]), hit = i == top ? 1.0 : 0.0;
      shared3[i] = clip(0.3 + 0.8 * xi + hit, -0.5, 0.5);
      unshared3[i] = 0.3 + 2 * clip(0.4 * xi, -0.5, 0.5) + 0.5 * hit;
    }
    const auto three = tad::sum(0.3 * c) + tad::sum(0.4 * c * c) + tad::max(c);
    expect_all(std::get<1>(tad::grad(three, x)), shared3, tol, "3 loops, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.3 * u) + tad::sum(0.4 * u * u) + tad::max(u), x)), unshared3, tol,
               "3 loops, unshared");
    // The value is the plain one: sum(0.3 x + 0.4 x^2) + max(x).
    double want = double(d[top]);
    for (std::size_t i = 0; i < n; ++i) want += 0.3 * double(d[i]) + 0.4 * double(d[i]) * double(d[i]);
    expect(double(std::get<0>(tad::grad(three, x))), want, 10 * tol * double(n + 1), "value");
  }
}

// Three loops: sum(0.5 c) + logsumexp(c) (the shift, then the sum of exponentials, then one
// backward loop) with the rule dy * dy: c's adjoint is 0.5 + softmax_i, squared once (unshared:
// 0.25 + softmax_i^2). With the override clip(dy, -0.1, 0.1): clip(0.5 + softmax_i) = 0.1
// (unshared: 0.1 + clip(softmax_i)). Two backward passes: sum(c * mean(c)) sends m to c_i from
// the outer sum (first pass) and sum(c) / n = m through the mean (second): (2 m)^2 shared,
// 2 m^2 unshared.
BOOST_AUTO_TEST_CASE(custom_and_override_rules_across_passes) {
  using T = double;  // float: the clip cases above and below (CI budget, doc/testing.md)
  for (std::size_t n : sizes) {
    auto d = grad_test::data<T>(n, -2, 2);
    auto x = tad::var<"x">(d.span());
    const double tol = grad_test::tol<T>() * 10;
    double top = double(d[argmax(d)]), s = 0;
    for (std::size_t i = 0; i < n; ++i) s += std::exp(double(d[i]) - top);
    auto softmax = [&](double xi) { return std::exp(xi - top) / s; };
    auto c = tad::let<"c">(squared_rule(x));
    auto u = tad::per_use(squared_rule(x));
    const auto shared = tad::sum(0.5 * c) + tad::logsumexp(c);
    static_assert(tad::passes_v<decltype(shared), decltype(x)> == 3);
    expect_all(std::get<1>(tad::grad(shared, x)), grad_test::map(d, [&](double xi) { return std::pow(0.5 + softmax(xi), 2); }),
               tol, "custom, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.5 * u) + tad::logsumexp(u), x)),
               grad_test::map(d, [&](double xi) { return 0.25 + std::pow(softmax(xi), 2); }), tol, "custom, unshared");
    const double m = grad_test::total(d) / double(n);
    const auto product = tad::sum(c * tad::mean(c));
    static_assert(tad::passes_v<decltype(product), decltype(x)> == 3);
    expect_all(std::get<1>(tad::grad(product, x)), std::vector<double>(n, 4 * m * m), tol, "custom, two passes, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(u * tad::mean(u)), x)), std::vector<double>(n, 2 * m * m), tol,
               "custom, two passes, unshared");
    auto o = tad::let<"o">(tad::override_gradients(tad::identity(x), identity_clip));
    auto w = tad::per_use(tad::override_gradients(tad::identity(x), identity_clip));
    expect_all(std::get<1>(tad::grad(tad::sum(0.5 * o) + tad::logsumexp(o), x)), std::vector<double>(n, 0.1), tol,
               "override, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(0.5 * w) + tad::logsumexp(w), x)),
               grad_test::map(d, [&](double xi) { return 0.1 + clip(softmax(xi), -0.1, 0.1); }), tol, "override, unshared");
  }
}

// A let under a reduction inside another one's argument: L = sum(v * square(c - mean(c))) with
// c = clip_gradient(x, -t, t). The outer sum sends 2 v_i (x_i - m) into c in the fused pass;
// the mean sends A / n to every element in the next pass, A = -sum_j 2 v_j (x_j - m). Shared:
// clip(2 v_i (x_i - m) + A / n) per element, once; unshared: clip(2 v_i (x_i - m)) + clip(A / n).
// With a third use outside, + sum(0.2 c), the first pass sends 0.2 more.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_let_inside_and_outside_an_inner_reduction, T, reals) {
  for (std::size_t n : sizes) {
    auto d = grad_test::data<T>(n, -2, 2);
    auto vd = grad_test::data<T>(n, 0.5, 1.5, 11);
    auto x = tad::var<"x">(d.span());
    auto v = tad::constant(vd.span());
    const double t = 0.3, tol = grad_test::tol<T>() * 10;
    auto c = tad::let<"c">(tad::clip_gradient(x, -t, t));
    auto u = tad::per_use(tad::clip_gradient(x, -t, t));
    const double m = grad_test::total(d) / double(n);
    double A = 0;
    for (std::size_t i = 0; i < n; ++i) A -= 2 * double(vd[i]) * (double(d[i]) - m);
    std::vector<double> shared(n), unshared(n), shared3(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double outer = 2 * double(vd[i]) * (double(d[i]) - m);
      shared[i] = clip(outer + A / double(n), -t, t);
      unshared[i] = clip(outer, -t, t) + clip(A / double(n), -t, t);
      shared3[i] = clip(outer + A / double(n) + 0.2, -t, t);
    }
    const auto L = tad::sum(v * tad::square(c - tad::mean(c)));
    static_assert(tad::passes_v<decltype(L), decltype(x)> == 3);
    expect_all(std::get<1>(tad::grad(L, x)), shared, tol, "two passes, shared");
    expect_all(std::get<1>(tad::grad(tad::sum(v * tad::square(u - tad::mean(u))), x)), unshared, tol, "unshared");
    expect_all(std::get<1>(tad::grad(L + tad::sum(0.2 * c), x)), shared3, tol, "three uses, shared");
  }
}

// A row nest: Z = let(clip_gradient(X * b, -t, t)) over a 7 x k matrix with a row vector b,
// used in sum(0.5 Z) and sum(0.4 Z Z): Z's adjoint 0.5 + 0.8 Z_rj, clipped once;
// dX_rj = b_j clip(...), db_j = sum_r X_rj clip(...).
BOOST_AUTO_TEST_CASE(a_matrix_let_in_two_reductions_of_a_row_nest) {
  using T = double;
  for (const std::size_t k : std::vector<std::size_t>{1, 3, 8, 17}) {
    const std::size_t rows = 7;
    auto Xd = grad_test::data<T>(rows * k, -2, 2);
    auto bd = grad_test::data<T>(k, 0.5, 1.5, 3);
    auto X = tad::var<"X">(Xd.data(), rows, k);
    auto b = tad::var<"b">(bd.span());
    const double t = 0.6, tol = grad_test::tol<T>() * 10;
    auto Z = tad::let<"Z">(tad::clip_gradient(X * b, -t, t));
    const auto [v, gX, gb] = tad::grad(tad::sum(0.5 * Z) + tad::sum(0.4 * Z * Z), X, b);
    std::vector<double> wX(rows * k), wb(k, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < k; ++j) {
        const double x = double(Xd[r * k + j]), bj = double(bd[j]);
        const double g = clip(0.5 + 0.8 * x * bj, -t, t);
        wX[r * k + j] = bj * g;
        wb[j] += x * g;
      }
    expect_all(std::span<const T>(gX.data(), gX.size()), wX, tol, "dX");
    expect_all(gb, wb, tol * double(rows), "db");
  }
}

// The clipped-logits logistic loss written as two means, mean(softplus(zc)) + mean(-y zc), with
// zc = let(clip_gradient(sum(X * w, axis<1>), lo, hi)): each row's clip runs once, on
// (sigmoid(z_r) - y_r) / N, the sum of both means' adjoints (unshared: on each part alone).
BOOST_AUTO_TEST_CASE(clipped_logits_as_two_means) {
  const std::size_t N = 37, D = 5;
  auto Xd = grad_test::data<double>(N * D, -1, 1, 5);
  std::vector<double> ws{0.5, -1.0, 2.0, 0.25, -0.75}, ys(N);
  for (std::size_t r = 0; r < N; ++r) ys[r] = (r * 7) % 3 == 0 ? 1.0 : 0.0;
  auto X = tad::constant(Xd.data(), N, D);
  auto w = tad::var<"w">(ws);
  auto y = tad::constant(ys);
  const double bound = 0.004;
  auto zc = tad::let<"zc">(tad::clip_gradient(tad::sum(X * w, tad::axis<1>), -bound, bound));
  const auto [v, g] = tad::grad(tad::mean(tad::softplus(zc)) + tad::mean(-y * zc), w);
  auto zu = tad::per_use(tad::clip_gradient(tad::sum(X * w, tad::axis<1>), -bound, bound));
  const auto [vu, gu] = tad::grad(tad::mean(tad::softplus(zu)) + tad::mean(-y * zu), w);
  std::vector<double> want(D, 0.0), want_u(D, 0.0);
  for (std::size_t r = 0; r < N; ++r) {
    double z = 0;
    for (std::size_t j = 0; j < D; ++j) z += Xd[r * D + j] * ws[j];
    const double s = 1 / (1 + std::exp(-z)), n = double(N);
    const double dz = clip((s - ys[r]) / n, -bound, bound), du = clip(s / n, -bound, bound) + clip(-ys[r] / n, -bound, bound);
    for (std::size_t j = 0; j < D; ++j) want[j] += dz * Xd[r * D + j], want_u[j] += du * Xd[r * D + j];
  }
  expect_all(g, want, 1e-12, "shared");
  expect_all(gu, want_u, 1e-12, "unshared");
  expect(v, vu, 1e-14, "the value does not depend on sharing");
}

// A scalar let used in the scalar code above the loops and in loop invariants (the scalar parts
// of reductions' arguments; doc/design.md "Lets across loops"): its rule runs once, at the end
// of the run, on the adjoint summed over every use. c = let(rule(s * s)), L = c * c +
// sum(c * x) [scalar code + an invariant of x's loop] + sum(c * y) [y of another length: another
// loop] + sum(sum(X * c, axis<1>)) [an invariant of a reduction along the rows] + max(c * x) [a
// second pass]. With c > 0, c's adjoint is a = 2 c + sum x + sum y + sum X + x_top (x_top the
// largest x); ds = 2 s rule(a). Unshared (the clip on every copy), for c * c + sum(c * x):
// 2 s (2 clip(c) + clip(sum x)). In double only: the deferral is the same code for float, and
// this TU's compile time is CI's budget (doc/testing.md).
BOOST_AUTO_TEST_CASE(a_scalar_let_in_the_scalar_code_and_loop_invariants) {
  using T = double;
  for (std::size_t n : std::vector<std::size_t>{1, 8, 17}) {
    auto xd = grad_test::data<T>(n, 0.1, 1, 3);
    auto yd = grad_test::data<T>(n + 2, -1, 1, 4);
    auto Xd = grad_test::data<T>(3 * (n + 1), -0.5, 1, 5);
    T sv = 0.9;
    auto s = tad::var<"s">(sv);
    auto x = tad::var<"x">(xd.span());
    auto y = tad::var<"y">(yd.span());
    auto X = tad::var<"X">(Xd.data(), 3, n + 1);
    const double t = 0.7, tol = grad_test::tol<T>() * 10 * double(n + 3);
    const double c = 0.81, sx = grad_test::total(xd), sy = grad_test::total(yd), sX = grad_test::total(Xd);
    const double top = double(xd[argmax(xd)]);
    auto cl = tad::let<"c">(tad::clip_gradient(s * s, -t, t));
    const auto loss = cl * cl + tad::sum(cl * x) + tad::sum(cl * y) + tad::sum(tad::sum(X * cl, tad::axis<1>)) +
                      tad::max(cl * x);
    const auto [v, gs, gx, gy, gX] = tad::grad(loss, s, x, y, X);
    expect(v, c * c + c * (sx + sy + sX) + c * top, tol, "value");
    expect(gs, 2 * 0.9 * clip(2 * c + sx + sy + sX + top, -t, t), tol, "clip, shared");
    // The array variables' gradients are the plain ones: c per element, twice at x's maximum.
    std::vector<double> wx(n, c);
    wx[argmax(xd)] += c;
    expect_all(gx, wx, tol, "dx");
    expect_all(gy, std::vector<double>(n + 2, c), tol, "dy");
    expect_all(std::span<const T>(gX.data(), gX.size()), std::vector<double>(3 * (n + 1), c), tol, "dX");
    auto cu = tad::per_use(tad::clip_gradient(s * s, -t, t));
    expect(std::get<1>(tad::grad(cu * cu + tad::sum(cu * x), s)), 2 * 0.9 * (2 * clip(c, -t, t) + clip(sx, -t, t)), tol,
           "clip, unshared");
    // The rule dy * dy (custom_gradient) with 3 uses, the override clip(dy, -0.1, 0.1) with 2.
    auto cc = tad::let<"c">(squared_rule(s * s));
    const double a3 = 2 * c + sx + sy;
    expect(std::get<1>(tad::grad(cc * cc + tad::sum(cc * x) + tad::sum(cc * y), s)), 2 * 0.9 * a3 * a3, tol,
           "custom, 3 uses");
    auto o = tad::let<"o">(tad::override_gradients(tad::identity(s * s), identity_clip));
    expect(std::get<1>(tad::grad(tad::sum(o * x) + tad::sum(o * y), s)), 2 * 0.9 * clip(sx + sy, -0.1, 0.1), tol,
           "override, 2 loops");
  }
}

BOOST_AUTO_TEST_SUITE_END()
