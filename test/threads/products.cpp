// Eight threads share one const tad::program and call each of its entry points at once: with a
// workspace of their own (value(ws), evaluate(ws, out), grad_into(ws, ...), vjp_into(ws, ...))
// and without one (value(), evaluate(out), grad_into(...), grad(x...), vjp_into(...), vjp(...):
// each call leases one of the program's workspaces, decisions.md 52), and tad's free functions
// on the same expressions (a program per call). Every thread gets the single-threaded results
// bit for bit, and those match plain loops.
#include <tad/linalg.hpp>

#include <support/alloc_counter.hpp>
#include <support/check.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <span>
#include <thread>
#include <utility>
#include <vector>

// TSan's runtime defines operator new, so the counting one is left out there (alloc_counter.cpp).
#include <support/tsan.hpp>

namespace {

#ifdef TAD_TEST_TSAN
constexpr bool counting = false;
void count_start() {}
long count_stop() { return 0; }
#else
constexpr bool counting = true;
void count_start() { tad_test::alloc_counter::start(); }
long count_stop() { return tad_test::alloc_counter::stop(); }
#endif

constexpr int n_threads = 8;
constexpr std::size_t m = 33, k = 17, n = 9;

template <class F>
void run_threads(F body) {
  std::vector<std::thread> threads;
  threads.reserve(n_threads);
  for (int t = 0; t < n_threads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
}

// When armed, each thread's first backward waits inside the program until n_threads calls are
// there, so that that many calls surely overlap (and lease that many workspaces).
std::atomic<bool> armed{false};
std::atomic<int> arrived{0};
thread_local bool arrived_here = false;

void rendezvous() {
  if (!armed.load() || arrived_here) return;
  arrived_here = true;
  arrived.fetch_add(1);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (arrived.load() < n_threads && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
}

// The identity, whose backward passes dy through (after the rendezvous, when armed).
const auto gate = tad::custom_gradient([](auto v) { return v; }, [](auto dy, auto, auto) {
  rendezvous();
  return dy;
});

struct data {
  std::vector<double> xs = std::vector<double>(m * k), ws = std::vector<double>(k * n),
                      ys = std::vector<double>(m * n);
  data() {
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.1 * static_cast<double>(i));
    for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(0.3 * static_cast<double>(i)) / 4;
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = std::sin(0.7 * static_cast<double>(i));
  }
};

/// L = sum((gate(tanh(X W)) reversed by 0.5 - Y)^2); its value is that of h = tanh(X W).
template <class X, class W, class Y>
auto loss_of(const X& x, const W& w, const Y& y) {
  return tad::sum(tad::square(tad::reverse_gradient(gate(tad::tanh(tad::matmul(x, w))), 0.5) - y));
}

/// By plain loops: h = tanh(X W), L = sum((h - Y)^2), dW = -0.5 X^T (2 (h - Y) (1 - h^2)).
struct by_hand {
  double loss = 0;
  std::vector<double> h = std::vector<double>(m * n), dw = std::vector<double>(k * n, 0.0);
};
by_hand by_loops(const data& d) {
  by_hand r;
  std::vector<double> dz(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double z = 0;
      for (std::size_t q = 0; q < k; ++q) z += d.xs[i * k + q] * d.ws[q * n + j];
      const double h = std::tanh(z), e = h - d.ys[i * n + j];
      r.h[i * n + j] = h;
      r.loss += e * e;
      dz[i * n + j] = -0.5 * 2 * e * (1 - h * h);
    }
  for (std::size_t q = 0; q < k; ++q)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < m; ++i) r.dw[q * n + j] += d.xs[i * k + q] * dz[i * n + j];
  return r;
}

double max_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return got.size() == want.size() ? worst : INFINITY;
}

// Every entry point is a const member: callable on a const program (decisions.md 52).
template <class P, class W>
concept const_gradient_calls = requires(const P& p, const W& w, std::vector<double>& g, std::span<double> ws) {
  { p.value() } -> std::same_as<double>;
  { p.value(ws) } -> std::same_as<double>;
  { p.grad_into(tad::wrt(w, g)) } -> std::same_as<double>;
  { p.grad_into(ws, tad::wrt(w, g)) } -> std::same_as<double>;
  p.grad(w);
};
template <class P, class W>
concept const_evaluate_calls = requires(const P& p, const W& w, std::vector<double>& out, std::span<double> ws) {
  p.evaluate(out);
  p.evaluate(ws, out);
  { p.vjp_into(std::as_const(out), tad::wrt(w, out)) } -> std::same_as<double>;
  { p.vjp_into(ws, std::as_const(out), tad::wrt(w, out)) } -> std::same_as<double>;
  p.vjp(std::as_const(out), w);
};

}  // namespace

BOOST_AUTO_TEST_CASE(eight_threads_call_every_entry_point_of_one_const_program) {
  data d;
  const auto X = tad::constant(d.xs.data(), m, k);
  const auto W = tad::var<"W">(d.ws.data(), k, n);
  const auto Y = tad::constant(d.ys.data(), m, n);
  const auto e = loss_of(X, W, Y);
  const auto h = tad::tanh(tad::matmul(X, W));
  const tad::program p(e);  // a scalar loss: value, grad_into, grad
  const tad::program q(h);  // a matrix: evaluate, vjp_into, vjp (seed: Y)
  static_assert(const_gradient_calls<decltype(p), decltype(W)>);
  static_assert(const_evaluate_calls<decltype(q), decltype(W)>);

  // One thread, each program with a workspace of the caller's; then against the loops.
  std::vector<double> ws0(p.workspace_size()), g0(k * n), wq0(q.workspace_size()), h0(m * n), gq0(k * n);
  const double v0 = p.grad_into(ws0, tad::wrt(W, g0));
  q.evaluate(wq0, h0);
  const double vq0 = q.vjp_into(wq0, d.ys, tad::wrt(W, gq0));
  const by_hand want = by_loops(d);
  BOOST_TEST(std::abs(v0 - want.loss) <= 1e-12 * want.loss);
  BOOST_TEST(max_error(g0, want.dw) <= 1e-13);
  BOOST_TEST(max_error(h0, want.h) <= 1e-14);
  // vjp of h with seed Y: sum(Y h), dW = X^T (Y (1 - h^2)).
  std::vector<double> want_q(k * n, 0.0);
  double want_vq = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double hij = want.h[i * n + j], y = d.ys[i * n + j];
      want_vq += y * hij;
      for (std::size_t q2 = 0; q2 < k; ++q2) want_q[q2 * n + j] += d.xs[i * k + q2] * y * (1 - hij * hij);
    }
  BOOST_TEST(std::abs(vq0 - want_vq) <= 1e-12 * std::abs(want_vq));
  BOOST_TEST(max_error(gq0, want_q) <= 1e-13);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::atomic<int> mismatches{0};
  run_threads([&](int) {
    std::vector<double> ws(p.workspace_size()), wq(q.workspace_size()), g(k * n), out(m * n);
    const auto same = [&](const std::vector<double>& got, const std::vector<double>& ref) {
      const bool ok = got == ref;
      std::fill(g.begin(), g.end(), nan);  // the next call must write every element
      std::fill(out.begin(), out.end(), nan);
      return ok;
    };
    for (int rep = 0; rep < 20; ++rep) {
      if (p.value() != v0 || p.value(ws) != v0) ++mismatches;
      if (p.grad_into(tad::wrt(W, g)) != v0 || !same(g, g0)) ++mismatches;
      if (p.grad_into(ws, tad::wrt(W, g)) != v0 || !same(g, g0)) ++mismatches;
      const auto r = p.grad(W);  // value and a tad::matrix
      if (std::get<0>(r) != v0 || !std::equal(g0.begin(), g0.end(), std::get<1>(r).data())) ++mismatches;
      q.evaluate(out);
      if (!same(out, h0)) ++mismatches;
      q.evaluate(std::span<double>(wq), out);
      if (!same(out, h0)) ++mismatches;
      if (q.vjp_into(d.ys, tad::wrt(W, g)) != vq0 || !same(g, gq0)) ++mismatches;
      if (q.vjp_into(wq, d.ys, tad::wrt(W, g)) != vq0 || !same(g, gq0)) ++mismatches;
      const auto qv = q.vjp(d.ys, W);
      if (std::get<0>(qv) != vq0 || !std::equal(gq0.begin(), gq0.end(), std::get<1>(qv).data())) ++mismatches;
      // The free functions build a program for the call.
      if (tad::value(e) != v0) ++mismatches;
      if (tad::grad_into(e, tad::wrt(W, g)) != v0 || !same(g, g0)) ++mismatches;
      const auto f = tad::grad(e, W);
      if (std::get<0>(f) != v0 || !std::equal(g0.begin(), g0.end(), std::get<1>(f).data())) ++mismatches;
      tad::evaluate(h, out);
      if (!same(out, h0)) ++mismatches;
      if (tad::vjp_into(h, d.ys, tad::wrt(W, g)) != vq0 || !same(g, gq0)) ++mismatches;
      const auto fv = tad::vjp(h, d.ys, W);
      if (std::get<0>(fv) != vq0 || !std::equal(gq0.begin(), gq0.end(), std::get<1>(fv).data())) ++mismatches;
    }
  });
  BOOST_TEST(mismatches.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_shared_program_allocates_nothing_once_it_has_a_workspace_per_overlapping_call) {
  // Round 0: 8 calls without a workspace overlap (held together in the backward), none on the
  // thread that owns the program's first workspace (this one, which called first): the program
  // allocates a spare workspace for each. Round 1: 8 calls overlap again and reuse them: no
  // allocation. Both rounds give the single-threaded results bit for bit.
  data d;
  const auto X = tad::constant(d.xs.data(), m, k);
  const auto W = tad::var<"W">(d.ws.data(), k, n);
  const auto Y = tad::constant(d.ys.data(), m, n);
  const tad::program p(loss_of(X, W, Y));
  std::vector<double> g0(k * n);
  const double v0 = p.grad_into(tad::wrt(W, g0));  // the program's first workspace
  const by_hand want = by_loops(d);
  BOOST_TEST(std::abs(v0 - want.loss) <= 1e-12 * want.loss);
  BOOST_TEST(max_error(g0, want.dw) <= 1e-13);

  std::vector<std::vector<double>> gs(n_threads, std::vector<double>(k * n));
  std::vector<double> values(n_threads);
  long allocations[2] = {-1, -1};
  for (int round = 0; round < 2; ++round) {
    arrived = 0;
    armed = true;
    std::atomic<bool> go{false};
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    threads.reserve(n_threads);
    for (std::size_t t = 0; t < n_threads; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        values[t] = p.grad_into(tad::wrt(W, gs[t]));
        done.fetch_add(1);
      });
    }
    count_start();  // the threads exist: only the calls are counted
    go = true;
    while (done.load() < n_threads) std::this_thread::yield();
    allocations[round] = count_stop();
    for (auto& th : threads) th.join();
    armed = false;
    BOOST_TEST(arrived.load() == n_threads);  // every call was inside at once
    for (std::size_t t = 0; t < n_threads; ++t) {
      BOOST_TEST(values[t] == v0);
      BOOST_TEST((gs[t] == g0));
    }
  }
  if (counting) {  // not under TSan
    BOOST_TEST(allocations[0] > 0);
    BOOST_TEST(allocations[1] == 0);
  }
}
