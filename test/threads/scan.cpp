// A program holding a scan (a batch of sequences through a tanh recurrent net, clipped carry)
// shared by eight threads, each calling grad_into with its own gradient buffers, with and
// without a workspace of its own: every thread gets the single-threaded results bit for bit.
// And a repeated training step through a scan allocates nothing (the program's workspace holds
// every carry and the body's buffers; Eigen's GEMMs take their packing space from it).
#define EIGEN_RUNTIME_NO_MALLOC
#include <tad/linalg.hpp>

#include <support/alloc_counter.hpp>
#include <support/check.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <thread>
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

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_threads)

BOOST_AUTO_TEST_CASE(eight_threads_share_one_program_with_a_scan) {
  const net n;
  const tad::program p(n.loss());
  const grads want = call(p, n);
  BOOST_TEST(std::isfinite(want.v));
  std::vector<grads> got(16);
  std::vector<std::vector<double>> own(8, std::vector<double>(p.workspace_size()));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        got[t] = call(p, n);
        got[8 + t] = call(p, n, own[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
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
#endif

BOOST_AUTO_TEST_SUITE_END()
