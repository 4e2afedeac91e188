// A program holding a scan (a batch of sequences through a tanh recurrent net, clipped carry;
// an ODE chain whose step reads tad::shift of its carry) shared by eight threads, each calling
// grad_into with its own gradient buffers, with and without a workspace of its own: every
// thread gets the single-threaded results bit for bit. And a repeated training step through a
// scan allocates nothing (the program's workspace holds every carry and the body's buffers;
// Eigen's GEMMs take their packing space from it; a shift's buffers too). The same for a step
// through a custom gradient with several outputs.
#define EIGEN_RUNTIME_NO_MALLOC
#include <tad/linalg.hpp>

#include <support/alloc_counter.hpp>
#include <support/check.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include <support/tsan.hpp>

namespace {

constexpr std::size_t batch = 4, hidden = 9, inputs = 3, steps = 25;

struct net {
  std::vector<double> w = std::vector<double>(hidden * hidden), u = std::vector<double>(inputs * hidden),
                      b = std::vector<double>(hidden), h = std::vector<double>(batch * hidden),
                      x = std::vector<double>(steps * batch * inputs);
  net() {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.4 * std::sin(0.7 * static_cast<double>(i));
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::cos(0.3 * static_cast<double>(i));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.05 * static_cast<double>(i * i % 97));
  }
  auto W() const { return tad::var<"W">(w.data(), hidden, hidden); }
  auto U() const { return tad::var<"U">(u.data(), inputs, hidden); }
  auto B() const { return tad::var<"b">(b.data(), hidden); }
  auto loss() const {
    const auto W_ = W();
    const auto U_ = U();
    const auto b_ = B();
    const auto step = [=](auto c, auto xt) {
      return tad::tanh(tad::matmul(tad::clip_gradient(c, -0.05, 0.05), W_) + tad::matmul(xt, U_) + b_);
    };
    const auto hs = tad::scan(step, tad::constant(h.data(), batch, hidden), tad::constant(x.data(), steps * batch, inputs));
    return tad::mean(tad::square(hs - 0.25));
  }
};

struct grads {
  std::vector<double> w = std::vector<double>(hidden * hidden), u = std::vector<double>(inputs * hidden),
                      b = std::vector<double>(hidden);
  double v = 0;
};

template <class P>
grads call(const P& p, const net& n, std::span<double> ws = {}) {
  grads g;
  if (ws.empty()) g.v = p.grad_into(tad::wrt(n.W(), g.w), tad::wrt(n.U(), g.u), tad::wrt(n.B(), g.b));
  else g.v = p.grad_into(ws, tad::wrt(n.W(), g.w), tad::wrt(n.U(), g.u), tad::wrt(n.B(), g.b));
  return g;
}

/// Runs run(i, ws) three times on each of eight threads t: i = t with ws empty (the program's
/// own workspace, shared), i = 8 + t with ws a workspace of `size` elements of that thread's.
template <class F>
void on_eight_threads(std::size_t size, const F& run) {
  std::vector<std::vector<double>> own(8, std::vector<double>(size));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        run(t, std::span<double>{});
        run(8 + t, std::span<double>(own[t]));
      }
    });
  }
  for (auto& th : threads) th.join();
}

/// y_0' = x_0, y_i' = x_i y_{i-1} (GradBench's ode), RK4 over 30 steps; the loss reads every step.
struct chain {
  static constexpr std::size_t n = 21, steps = 30;
  std::vector<double> x = std::vector<double>(n), e0 = std::vector<double>(n, 0.0), y0 = std::vector<double>(n, 0.0),
                      none;
  chain() {
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.5 + 0.4 * std::sin(1.3 * static_cast<double>(i));
    e0[0] = 1;
  }
  auto X() const { return tad::var<"x">(x); }
  auto loss() const {
    const auto X_ = X();
    const double h = 0.05;
    const auto step = [=, this](auto y, auto) {
      const auto f = [&](const auto& v) { return X_ * (tad::shift(v) + tad::constant(e0)); };
      auto k1 = f(y);
      auto k2 = f(y + (h / 2) * k1);
      auto k3 = f(y + (h / 2) * k2);
      auto k4 = f(y + h * k3);
      return y + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    };
    return tad::sum(tad::square(tad::scan(step, tad::constant(y0), tad::constant(none.data(), steps, 0), tad::every_step)));
  }
};

/// A step through a custom gradient with two outputs (one rule for both, clipping their
/// adjoints by norm): h_{t+1} = tanh(u) + 0.5 v, (u, v) = (h cos x_t, h sin x_t).
struct polar_cell {
  static constexpr std::size_t n = 13, steps = 20;
  std::vector<double> h0 = std::vector<double>(n), x = std::vector<double>(steps * n);
  polar_cell() {
    for (std::size_t i = 0; i < n; ++i) h0[i] = std::sin(0.9 * static_cast<double>(i) + 0.3);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 2 * std::cos(0.37 * static_cast<double>(i));
  }
  auto H() const { return tad::var<"h">(h0); }
  auto X() const { return tad::var<"x">(x.data(), steps, n); }
  auto loss() const {
    const auto polar = tad::custom_gradient(
        [](auto a, auto b) { return std::tuple{a * tad::cos(b), a * tad::sin(b)}; },
        [](auto d0, auto d1, auto a, auto b, auto, auto) {
          using V = decltype(d0);
          const V norm = tad::math::sqrt(d0 * d0 + d1 * d1), l = tad::simd::splat<V>(0.3);
          const V s = tad::simd::select(norm > l, l / norm, tad::simd::splat<V>(1.0));
          return tad::adjoints{s * (d0 * tad::math::cos(b) + d1 * tad::math::sin(b)),
                               s * a * (d1 * tad::math::cos(b) - d0 * tad::math::sin(b))};
        });
    const auto step = [polar](auto h, auto xt) {
      auto [u, v] = polar(h, xt);
      return tad::tanh(u) + 0.5 * v;
    };
    return tad::sum(tad::square(tad::scan(step, H(), X(), tad::every_step)));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_threads)

BOOST_AUTO_TEST_CASE(eight_threads_share_one_program_with_several_outputs) {
  const polar_cell c;
  const tad::program p(c.loss());
  std::vector<double> want_h(polar_cell::n), want_x(c.x.size());
  const double v = p.grad_into(tad::wrt(c.H(), want_h), tad::wrt(c.X(), want_x));
  BOOST_TEST(std::isfinite(v));
  BOOST_TEST(want_h[0] != 0.0);  // (h0 has no zero element: its gradient has none either)
  std::vector<std::vector<double>> got_h(16, want_h), got_x(16, want_x);
  std::vector<double> values(16);
  on_eight_threads(p.workspace_size(), [&](std::size_t i, std::span<double> ws) {
    const auto h = tad::wrt(c.H(), got_h[i]);
    const auto x = tad::wrt(c.X(), got_x[i]);
    values[i] = ws.empty() ? p.grad_into(h, x) : p.grad_into(ws, h, x);
  });
  for (std::size_t t = 0; t < 16; ++t) {
    BOOST_TEST(values[t] == v);
    BOOST_TEST(got_h[t] == want_h);
    BOOST_TEST(got_x[t] == want_x);
  }
}

BOOST_AUTO_TEST_CASE(eight_threads_share_one_program_with_a_shift) {
  const chain c;
  const tad::program p(c.loss());
  std::vector<double> want(chain::n);
  const double v = p.grad_into(tad::wrt(c.X(), want));
  BOOST_TEST(std::isfinite(v));
  BOOST_TEST(want[chain::n - 1] != 0.0);  // the gradient reaches the chain's end
  std::vector<std::vector<double>> got(16, std::vector<double>(chain::n));
  std::vector<double> values(16);
  on_eight_threads(p.workspace_size(), [&](std::size_t i, std::span<double> ws) {
    const auto x = tad::wrt(c.X(), got[i]);
    values[i] = ws.empty() ? p.grad_into(x) : p.grad_into(ws, x);
  });
  for (std::size_t t = 0; t < 16; ++t) {
    BOOST_TEST(values[t] == v);
    BOOST_TEST(got[t] == want);
  }
}

BOOST_AUTO_TEST_CASE(eight_threads_share_one_program_with_a_scan) {
  const net n;
  const tad::program p(n.loss());
  const grads want = call(p, n);
  BOOST_TEST(std::isfinite(want.v));
  std::vector<grads> got(16);
  on_eight_threads(p.workspace_size(), [&](std::size_t i, std::span<double> ws) { got[i] = call(p, n, ws); });
  for (const grads& g : got) {
    BOOST_TEST(g.v == want.v);
    BOOST_TEST(g.w == want.w);
    BOOST_TEST(g.u == want.u);
    BOOST_TEST(g.b == want.b);
  }
}

#ifndef TAD_TEST_TSAN
BOOST_AUTO_TEST_CASE(a_repeated_step_through_a_scan_allocates_nothing) {
  const net n;
  const tad::program p(n.loss());
  grads g = call(p, n);
  tad_test::alloc_counter::start();
  Eigen::internal::set_is_malloc_allowed(false);
  double sum = 0;
  for (int rep = 0; rep < 5; ++rep) sum += p.grad_into(tad::wrt(n.W(), g.w), tad::wrt(n.U(), g.u), tad::wrt(n.B(), g.b));
  Eigen::internal::set_is_malloc_allowed(true);
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  BOOST_TEST(std::isfinite(sum));
}

BOOST_AUTO_TEST_CASE(a_repeated_step_through_several_outputs_allocates_nothing) {
  const polar_cell c;
  const tad::program p(c.loss());
  std::vector<double> gh(polar_cell::n), gx(c.x.size());
  double sum = p.grad_into(tad::wrt(c.H(), gh), tad::wrt(c.X(), gx));
  tad_test::alloc_counter::start();
  for (int rep = 0; rep < 5; ++rep) sum += p.grad_into(tad::wrt(c.H(), gh), tad::wrt(c.X(), gx)) + p.value();
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  BOOST_TEST(std::isfinite(sum));
}

BOOST_AUTO_TEST_CASE(a_repeated_step_through_a_shift_allocates_nothing) {
  const chain c;
  const tad::program p(c.loss());
  std::vector<double> g(chain::n);
  double sum = p.grad_into(tad::wrt(c.X(), g));
  tad_test::alloc_counter::start();
  for (int rep = 0; rep < 5; ++rep) sum += p.grad_into(tad::wrt(c.X(), g)) + p.value();
  BOOST_TEST(tad_test::alloc_counter::stop() == 0);
  BOOST_TEST(std::isfinite(sum));
}
#endif

BOOST_AUTO_TEST_SUITE_END()
