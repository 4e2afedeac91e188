// tad::shift: (0, v_0, ..., v_{n-2}), a stage the program evaluates. Its value, and gradients
// through it against central differences of the same computation written by hand: around the
// SIMD width, unaligned, float and double; of a product, into a product, of a shift; used twice
// with a rule not linear in the adjoint inside (the rule once, on the summed adjoint, written
// from its definition); and in a scan's body: GradBench's ode (y_0' = x_0, y_i' = x_i y_{i-1},
// RK4 over s steps from 0, the gradient of the last element of y).
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using tad_test::scan::differences;
using tad_test::scan::doubles;
using tad_test::scan::expect_all_close;
using tad_test::scan::tol;
using tad_test::scan::unaligned;

namespace {

/// shift of v, by hand.
std::vector<double> shifted(const std::vector<double>& v) {
  std::vector<double> s(v.size(), 0.0);
  for (std::size_t i = 1; i < v.size(); ++i) s[i] = v[i - 1];
  return s;
}

/// sum_i w_i (shift(tanh(x))_i - 0.3)^2 + sum_i u_i shift(x)_i, by hand.
double chain_loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& u) {
  std::vector<double> t(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) t[i] = std::tanh(x[i]);
  const auto s = shifted(t), sx = shifted(x);
  double l = 0;
  for (std::size_t i = 0; i < x.size(); ++i) l += w[i] * (s[i] - 0.3) * (s[i] - 0.3) + u[i] * sx[i];
  return l;
}

template <class T>
void check_lengths() {
  for (std::size_t n : tad_test::lengths) {
    std::vector<double> x(n), w(n), u(n);
    tad_test::fill_uniform(x, -1.5, 1.5, 3);
    tad_test::fill_uniform(w, 0.2, 1, 4);
    tad_test::fill_uniform(u, -1, 1, 5);
    auto sx = unaligned<T>(x), sw = unaligned<T>(w), su = unaligned<T>(u);
    const auto X = tad::var<"x">(sx.span());
    const auto W = tad::var<"w">(sw.span());
    const auto U = tad::var<"u">(su.span());
    const std::string what = "n " + std::to_string(n);
    // The value of a shift of a variable: exact.
    BOOST_TEST(doubles(tad::value(tad::shift(X))) == shifted(doubles(sx.cspan())), what);
    const tad::program prog(tad::sum(W * tad::square(tad::shift(tad::tanh(X)) - T(0.3))) + tad::sum(U * tad::shift(X)));
    const auto [v, gx, gw, gu] = prog.grad(X, W, U);
    BOOST_TEST(tad_test::close(double(v), chain_loss(x, w, u), tol<T>()), what << ": value " << v);
    const auto f = [&] { return chain_loss(x, w, u); };
    expect_all_close(doubles(gx), differences(x, f), tol<T>(), what + " dx");
    expect_all_close(doubles(gw), differences(w, f), tol<T>(), what + " dw");
    expect_all_close(doubles(gu), differences(u, f), tol<T>(), what + " du");
  }
}

/// GradBench's ode: y' = f(y), f(y)_0 = x_0, f(y)_i = x_i y_{i-1}, y(0) = 0, RK4 with s steps
/// of 2 / s; the last element of y (and every step's y's element sum, with every_step).
struct ode {
  std::vector<double> x;
  std::size_t s;
  std::vector<std::vector<double>> states() const {
    const std::size_t n = x.size();
    const double h = 2.0 / double(s);
    std::vector<std::vector<double>> out(s + 1, std::vector<double>(n, 0.0));
    const auto f = [&](const std::vector<double>& y) {
      std::vector<double> z(n);
      for (std::size_t i = 0; i < n; ++i) z[i] = x[i] * (i == 0 ? 1.0 : y[i - 1]);
      return z;
    };
    const auto plus = [&](const std::vector<double>& y, double a, const std::vector<double>& k) {
      std::vector<double> z(n);
      for (std::size_t i = 0; i < n; ++i) z[i] = y[i] + a * k[i];
      return z;
    };
    for (std::size_t t = 0; t < s; ++t) {
      const auto& y = out[t];
      const auto k1 = f(y), k2 = f(plus(y, h / 2, k1)), k3 = f(plus(y, h / 2, k2)), k4 = f(plus(y, h, k3));
      for (std::size_t i = 0; i < n; ++i) out[t + 1][i] = y[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    }
    return out;
  }
  double last() const { return x.empty() ? 0.0 : states()[s].back(); }
  double every() const {
    const auto st = states();
    double l = 0;
    for (std::size_t t = 1; t <= s; ++t)
      for (double v : st[t]) l += v * v;
    return l;
  }
};

/// The ode's RK4 step in tad: k = x * (shift(y) + e0).
template <class T, class X>
auto rk4(const X& x, const std::vector<T>& e0, T h) {
  return [&x, &e0, h](auto y, auto) {
    const auto f = [&](const auto& v) { return x * (tad::shift(v) + tad::constant(e0)); };
    auto k1 = f(y);
    auto k2 = f(y + (h / 2) * k1);
    auto k3 = f(y + (h / 2) * k2);
    auto k4 = f(y + h * k3);
    return y + (h / 6) * (k1 + T(2) * k2 + T(2) * k3 + k4);
  };
}

template <class T>
void check_ode(std::size_t n, std::size_t s) {
  ode p{std::vector<double>(n), s};
  tad_test::fill_uniform(p.x, 0, 1, 9);
  auto sx = unaligned<T>(p.x);
  const auto X = tad::var<"x">(sx.span());
  std::vector<T> e0(n, T(0)), last(n, T(0)), y0(n, T(0)), none;
  if (n != 0) e0[0] = T(1), last[n - 1] = T(1);
  const T h = T(2) / T(s == 0 ? 1 : s);
  const auto steps = tad::constant(none.data(), s, 0);
  const std::string what = "n " + std::to_string(n) + " s " + std::to_string(s);
  {
    const auto yf = tad::scan(rk4<T>(X, e0, h), tad::constant(y0), steps);
    const tad::program prog(tad::sum(yf * tad::constant(last)));
    const auto [v, gx] = prog.grad(X);
    BOOST_TEST(tad_test::close(double(v), p.last(), tol<T>()), what << ": value " << v << ", expected " << p.last());
    expect_all_close(doubles(gx), differences(p.x, [&] { return p.last(); }), tol<T>(), what + " dx");
  }
  {
    const auto ys = tad::scan(rk4<T>(X, e0, h), tad::constant(y0), steps, tad::every_step);
    const tad::program prog(tad::sum(tad::square(ys)));
    const auto [v, gx] = prog.grad(X);
    BOOST_TEST(tad_test::close(double(v), p.every(), tol<T>()), what << ": every step, value " << v);
    expect_all_close(doubles(gx), differences(p.x, [&] { return p.every(); }), tol<T>(), what + " every step dx");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shift)

BOOST_AUTO_TEST_CASE_TEMPLATE(lengths_against_central_differences, T, tad_test::reals) { check_lengths<T>(); }

// Of a product (its argument a stage: the product's adjoint is the shift's one element on),
// into a product (the product's operand a stage), and of a shift.
BOOST_AUTO_TEST_CASE_TEMPLATE(products_and_shifts, T, tad_test::reals) {
  for (std::size_t n : {1u, 4u, 9u, 17u}) {
    const std::size_t m = 3;
    std::vector<double> a(m * n), x(n), v(n), c(m);
    tad_test::fill_uniform(a, -1, 1, 3);
    tad_test::fill_uniform(x, -1, 1, 4);
    tad_test::fill_uniform(v, -1, 1, 5);
    tad_test::fill_uniform(c, -1, 1, 6);
    const auto loss = [&] {  // sum(v * shift(A^T c)) + sum((A shift(tanh x))^2) + sum(v * shift(shift(x))^2)
      std::vector<double> atc(n, 0.0), tx(n);
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < m; ++i) atc[j] += a[i * n + j] * c[i];
      for (std::size_t j = 0; j < n; ++j) tx[j] = std::tanh(x[j]);
      const auto s1 = shifted(atc), s2 = shifted(tx), s3 = shifted(shifted(x));
      double l = 0;
      for (std::size_t j = 0; j < n; ++j) l += v[j] * s1[j] + v[j] * s3[j] * s3[j];
      for (std::size_t i = 0; i < m; ++i) {
        double r = 0;
        for (std::size_t j = 0; j < n; ++j) r += a[i * n + j] * s2[j];
        l += r * r;
      }
      return l;
    };
    auto sa = unaligned<T>(a), sx = unaligned<T>(x), sv = unaligned<T>(v), sc = unaligned<T>(c);
    const auto A = tad::var<"A">(static_cast<const T*>(sa.data()), m, n);
    const auto X = tad::var<"x">(sx.span());
    const auto V = tad::var<"v">(sv.span());
    const auto C = tad::var<"c">(sc.span());
    const tad::program prog(tad::sum(V * tad::shift(tad::matmul(C, A))) +
                            tad::sum(tad::square(tad::matmul(A, tad::shift(tad::tanh(X))))) +
                            tad::sum(V * tad::square(tad::shift(tad::shift(X)))));
    const auto [val, ga, gx, gv, gc] = prog.grad(A, X, V, C);
    const std::string what = "n " + std::to_string(n);
    BOOST_TEST(tad_test::close(double(val), loss(), tol<T>()), what << ": value " << val << ", expected " << loss());
    expect_all_close(doubles(ga), differences(a, loss), tol<T>(), what + " dA");
    expect_all_close(doubles(gx), differences(x, loss), tol<T>(), what + " dx");
    expect_all_close(doubles(gv), differences(v, loss), tol<T>(), what + " dv");
    expect_all_close(doubles(gc), differences(c, loss), tol<T>(), what + " dc");
  }
}

// One shift, with a clip_gradient inside, read twice (two copies of one expression, and a let
// of it): one node, so the clip runs once, on the sum of both uses' adjoints moved one element
// back. The expected gradient is that rule written out; the bounds are chosen so that each use's
// share alone would not be clipped where the sum is.
BOOST_AUTO_TEST_CASE_TEMPLATE(used_twice_one_rule, T, tad_test::reals) {
  const std::size_t n = 9;
  std::vector<double> x(n), u(n);
  tad_test::fill_uniform(x, -1, 1, 3);
  tad_test::fill_uniform(u, 0.5, 1, 4);
  const double bound = 1.2;  // each use's adjoint u_i or 2 s_i - 0.4 < 1.2; their sum often above
  // loss = sum(u * s) + sum((s - 0.2)^2), s = shift(clip_gradient(tanh(x), -bound, bound)).
  std::vector<double> want(n, 0.0);
  std::size_t clipped = 0;
  for (std::size_t j = 0; j + 1 < n; ++j) {
    const double t = std::tanh(x[j]), ds = u[j + 1] + 2 * (t - 0.2);
    if (std::abs(ds) > bound) ++clipped;
    want[j] = std::clamp(ds, -bound, bound) * (1 - t * t);
  }
  BOOST_TEST_REQUIRE(clipped >= 2u);  // the case shows the rule once on the sum
  auto sx = unaligned<T>(x), su = unaligned<T>(u);
  const auto X = tad::var<"x">(sx.span());
  const auto U = tad::var<"u">(su.span());
  const auto s = tad::shift(tad::clip_gradient(tad::tanh(X), T(-bound), T(bound)));
  {
    const tad::program prog(tad::sum(U * s) + tad::sum(tad::square(s - T(0.2))));
    const auto [v, gx] = prog.grad(X);
    expect_all_close(doubles(gx), want, tol<T>(), "two copies dx");
  }
  {
    const auto ls = tad::let<"s">(s);
    const tad::program prog(tad::sum(U * ls) + tad::sum(tad::square(ls - T(0.2))));
    const auto [v, gx] = prog.grad(X);
    expect_all_close(doubles(gx), want, tol<T>(), "a let dx");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(ode_in_a_scan, T, tad_test::reals) {
  for (std::size_t n : {1u, 3u, 8u, 17u})
    for (std::size_t s : {0u, 1u, 3u}) check_ode<T>(n, s);
}

// Checkpointed (every k-th carry kept, each block's steps recomputed in the backward), the
// ode's gradient is the stored run's bit for bit; through grad_into with a workspace full of
// NaN and a gradient buffer full of garbage, which every call must overwrite.
BOOST_AUTO_TEST_CASE(ode_checkpointed_equals_stored_with_stale_buffers) {
  const std::size_t n = 13, s = 11;
  std::vector<double> x(n), e0(n, 0.0), last(n, 0.0), y0(n, 0.0), none;
  tad_test::fill_uniform(x, 0, 1, 5);
  e0[0] = 1, last[n - 1] = 1;
  const auto X = tad::var<"x">(x);
  const auto run = [&](tad::scan_options o) {
    const tad::program prog(
        tad::sum(tad::scan(rk4<double>(X, e0, 0.2), tad::constant(y0), tad::constant(none.data(), s, 0), o) *
                 tad::constant(last)));
    std::vector<double> ws(prog.workspace_size(), std::nan("")), g(n, 7.0);
    const double v = prog.grad_into(ws, tad::wrt(X, g));
    std::vector<double> g2(n, -3.0);
    BOOST_TEST(prog.grad_into(ws, tad::wrt(X, g2)) == v);  // the same workspace again
    BOOST_TEST(g2 == g);
    g.push_back(v);
    return g;
  };
  const auto stored = run({});
  ode p{x, s};
  const auto cd = differences(p.x, [&] { return p.last(); });
  expect_all_close(std::vector<double>(stored.begin(), stored.end() - 1), cd, 1e-7, "stored dx");
  for (std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{11}, tad::scan_options::sqrt_steps})
    BOOST_TEST(run(tad::scan_options{.checkpoint = k}) == stored, "checkpoint " << k);
}

// A let and a shift that are both in a loop's body and after the loop: the uses inside are a
// value per step, so the one after the loop is a node of its own (it once shared the body's
// planned buffer, which a gradient call no longer writes, and the program built with a shift
// there crashed). Against central differences, T = 0, 1, 3, with stale buffers; and in a map.
BOOST_AUTO_TEST_CASE(stages_in_a_body_and_after_the_loop) {
  const std::size_t n = 3;
  std::vector<double> w{0.3, -0.2, 0.5, 0.1, 0.4, -0.3, 0.2, 0.2, -0.1}, c{0.7, -0.4, 0.25}, h0{0.1, -0.2, 0.3},
      none;
  const auto W = tad::var<"W">(w.data(), n, n);
  const auto C = tad::var<"c">(c);
  for (std::size_t steps : {0u, 1u, 3u}) {
    // sum(h_T) + sum(W c) + sum(shift(c) * h_T), h_{t+1} = tanh(h_t) + W c + shift(c).
    const auto loss = [&] {
      std::vector<double> a(n, 0.0), h = h0;
      const auto sc = shifted(c);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) a[i] += w[i * n + j] * c[j];
      for (std::size_t t = 0; t < steps; ++t)
        for (std::size_t i = 0; i < n; ++i) h[i] = std::tanh(h[i]) + a[i] + sc[i];
      double l = 0;
      for (std::size_t i = 0; i < n; ++i) l += h[i] + a[i] + sc[i] * h[i];
      return l;
    };
    const auto wc = tad::let<"wc">(tad::matmul(W, C));
    const auto hs = tad::scan([&](auto h, auto) { return tad::tanh(h) + wc + tad::shift(C); }, tad::constant(h0),
                              tad::constant(none.data(), steps, 0));
    const tad::program prog(tad::sum(hs) + tad::sum(wc) + tad::sum(tad::shift(C) * hs));
    std::vector<double> ws(prog.workspace_size(), std::nan("")), gw(n * n, 7.0), gc(n, 7.0);
    const double v = prog.grad_into(ws, tad::wrt(W, gw), tad::wrt(C, gc));
    const std::string what = "T " + std::to_string(steps);
    BOOST_TEST(tad_test::close(v, loss(), 1e-12), what << ": value " << v << ", expected " << loss());
    BOOST_TEST(tad_test::close(prog.value(), loss(), 1e-12), what << ": value()");
    expect_all_close(gw, differences(w, loss), 1e-7, what + " dW");
    expect_all_close(gc, differences(c, loss), 1e-7, what + " dc");
  }
  // A map's body and after the map: sum_k (shift(c) . m_k) + sum(shift(c)), m_k row k of M.
  std::vector<double> m{0.5, -0.25, 1.5, 2.0, 0.75, -1.0};
  const auto M = tad::var<"M">(m.data(), 2, n);
  const auto loss = [&] {
    const auto sc = shifted(c);
    double l = 0;
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < n; ++i) l += sc[i] * m[k * n + i] * m[k * n + i];
    for (double e : sc) l += e;
    return l;
  };
  const auto rows = tad::map(2, [&](auto mk) { return tad::shift(C) * tad::square(mk); }, tad::each_row(M));
  const tad::program prog(tad::sum(rows) + tad::sum(tad::shift(C)));
  std::vector<double> ws(prog.workspace_size(), std::nan("")), gm(2 * n, 7.0), gc(n, 7.0);
  const double v = prog.grad_into(ws, tad::wrt(M, gm), tad::wrt(C, gc));
  BOOST_TEST(tad_test::close(v, loss(), 1e-12), "map: value " << v << ", expected " << loss());
  expect_all_close(gm, differences(m, loss), 1e-7, "map dM");
  expect_all_close(gc, differences(c, loss), 1e-7, "map dc");
}

BOOST_AUTO_TEST_SUITE_END()
