// tad::scan with a tuple of carries (tad::carries): an LSTM cell, whose carry is the hidden
// state h and the cell state c, against central differences of an LSTM written by hand in
// double; a per-step output carried as a first array the step does not read; arrays of
// different shapes; checkpointing bitwise equal to the stored run; T = 0, 1, 2 and 1000.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using tad_test::buffer;
using tad_test::scan::differences;
using tad_test::scan::doubles;
using tad_test::scan::expect_all_close;
using tad_test::scan::unaligned;

namespace {

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

/// An LSTM over T steps, by hand: gates g = 0 (input), 1 (forget), 2 (output), 3 (candidate),
/// z_g = h W_g + x U_g + b_g, c' = s(z_1) c + s(z_0) tanh(z_3), h' = s(z_2) tanh(c'); the loss is
/// sum((h - 0.3)^2) over the last h, or over every h after a step.
struct lstm {
  std::size_t H, D, T, B;  // B = 0: vector carries (one sequence); else matrices of B rows
  bool every = false;
  std::array<std::vector<double>, 4> w, u, b;
  std::vector<double> h0, c0, xs;
  std::size_t rows() const { return B == 0 ? 1 : B; }
  lstm(std::size_t h, std::size_t d, std::size_t t, std::size_t batch) : H(h), D(d), T(t), B(batch) {
    const double s = 1.0 / std::sqrt(double(std::max<std::size_t>(h, 1)));
    for (std::size_t g = 0; g < 4; ++g) {
      w[g].resize(h * h), u[g].resize(d * h), b[g].resize(h);
      tad_test::fill_uniform(w[g], -s, s, 11 + unsigned(g));
      tad_test::fill_uniform(u[g], -0.8, 0.8, 21 + unsigned(g));
      tad_test::fill_uniform(b[g], -0.3, 0.3, 31 + unsigned(g));
    }
    h0.resize(rows() * h), c0.resize(rows() * h), xs.resize(t * rows() * d);
    tad_test::fill_uniform(h0, -0.5, 0.5, 41);
    tad_test::fill_uniform(c0, -0.5, 0.5, 42);
    tad_test::fill_uniform(xs, -1, 1, 43);
  }
  using state = std::pair<std::vector<double>, std::vector<double>>;  // (h, c)
  /// Step t from (h, c).
  state step(const state& hc, std::size_t t) const {
    const std::size_t R = rows();
    state n{std::vector<double>(R * H), std::vector<double>(R * H)};
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t j = 0; j < H; ++j) {
        std::array<double, 4> z{};
        for (std::size_t g = 0; g < 4; ++g) {
          z[g] = b[g][j];
          for (std::size_t i = 0; i < H; ++i) z[g] += hc.first[r * H + i] * w[g][i * H + j];
          for (std::size_t i = 0; i < D; ++i) z[g] += xs[(t * R + r) * D + i] * u[g][i * H + j];
        }
        const std::size_t q = r * H + j;
        n.second[q] = sigmoid(z[1]) * hc.second[q] + sigmoid(z[0]) * std::tanh(z[3]);
        n.first[q] = sigmoid(z[2]) * std::tanh(n.second[q]);
      }
    }
    return n;
  }
  static double read(const std::vector<double>& h) {
    double l = 0;
    for (double e : h) l += (e - 0.3) * (e - 0.3);
    return l;
  }
  /// The loss of steps first .. last - 1 from `from` (the last h, or every h after a step).
  double loss_from(state hc, std::size_t first, std::size_t last) const {
    double l = 0;
    for (std::size_t t = first; t < last; ++t) {
      hc = step(hc, t);
      if (every) l += read(hc.first);
    }
    return every ? l : (last == T ? read(hc.first) : 0.0);
  }
  double loss() const { return T == 0 && every ? 0.0 : T == 0 ? read(h0) : loss_from({h0, c0}, 0, T); }
  /// The carries at steps 0, k, 2k, ... with the current parameters.
  std::vector<state> starts(std::size_t k) const {
    std::vector<state> r{{h0, c0}};
    state hc{h0, c0};
    for (std::size_t t = 0; t < T; ++t) {
      hc = step(hc, t);
      if ((t + 1) % k == 0) r.push_back(hc);
    }
    return r;
  }
  /// Truncated BPTT's objective over blocks of k steps: each block's loss from its first carry,
  /// held fixed at `at` (the carries of the parameters the gradient is taken at), so that no
  /// gradient crosses a block's start: its gradient is truncated BPTT's.
  double truncated_loss(const std::vector<state>& at, std::size_t k) const {
    double l = 0;
    for (std::size_t first = 0, j = 0; first < T; first += k, ++j)  // (the first block from h0 and c0 themselves)
      l += loss_from(j == 0 ? state{h0, c0} : at[j], first, std::min(first + k, T));
    return l;
  }
  /// Central differences of f (default: loss()) with respect to each element of v (a member).
  std::vector<double> differences(std::vector<double>& v, const std::function<double()>& f = {}) {
    return tad_test::scan::differences(v, [&] { return f ? f() : loss(); });
  }
};

/// tad's LSTM: a scan of carries(h, c) over the stored arrays; `opts` its options. Returns the
/// value and the gradients of (W_0..3, U_0..3, b_0..3, h0, c0, X), in double.
template <class T, bool Matrix>
std::pair<double, std::vector<std::vector<double>>> run(const lstm& p, tad::scan_options opts = {}) {
  const std::size_t R = p.rows();
  std::array<buffer<T>, 4> w{unaligned<T>(p.w[0]), unaligned<T>(p.w[1]), unaligned<T>(p.w[2]), unaligned<T>(p.w[3])};
  std::array<buffer<T>, 4> u{unaligned<T>(p.u[0]), unaligned<T>(p.u[1]), unaligned<T>(p.u[2]), unaligned<T>(p.u[3])};
  std::array<buffer<T>, 4> b{unaligned<T>(p.b[0]), unaligned<T>(p.b[1]), unaligned<T>(p.b[2]), unaligned<T>(p.b[3])};
  buffer<T> h0 = unaligned<T>(p.h0), c0 = unaligned<T>(p.c0), xs = unaligned<T>(p.xs);
  const auto W = [&](std::size_t g) { return static_cast<const T*>(w[g].data()); };
  const auto U = [&](std::size_t g) { return static_cast<const T*>(u[g].data()); };
  const auto Bv = [&](std::size_t g) { return std::span<const T>(b[g].data(), p.H); };
  auto Wi = tad::var<"Wi">(W(0), p.H, p.H);
  auto Wf = tad::var<"Wf">(W(1), p.H, p.H);
  auto Wo = tad::var<"Wo">(W(2), p.H, p.H);
  auto Wu = tad::var<"Wu">(W(3), p.H, p.H);
  auto Ui = tad::var<"Ui">(U(0), p.D, p.H);
  auto Uf = tad::var<"Uf">(U(1), p.D, p.H);
  auto Uo = tad::var<"Uo">(U(2), p.D, p.H);
  auto Uu = tad::var<"Uu">(U(3), p.D, p.H);
  auto bi = tad::var<"bi">(Bv(0));
  auto bf = tad::var<"bf">(Bv(1));
  auto bo = tad::var<"bo">(Bv(2));
  auto bu = tad::var<"bu">(Bv(3));
  auto X = tad::var<"X">(static_cast<const T*>(xs.data()), p.T * R, p.D);
  const auto initial = [&] {
    if constexpr (Matrix)
      return std::pair{tad::var<"h0">(static_cast<const T*>(h0.data()), p.B, p.H),
                       tad::var<"c0">(static_cast<const T*>(c0.data()), p.B, p.H)};
    else
      return std::pair{tad::var<"h0">(std::span<const T>(h0.data(), p.H)), tad::var<"c0">(std::span<const T>(c0.data(), p.H))};
  }();
  const auto& H0 = initial.first;  // (not a structured binding: clang 14 cannot capture one)
  const auto& C0 = initial.second;
  const auto cell = [=](auto h, auto c, auto x) {
    const auto gate = [&](const auto& Wg, const auto& Ug, const auto& bg) {
      return tad::matmul(h, Wg) + tad::matmul(x, Ug) + bg;
    };
    const auto c2 = tad::let<"c2">(tad::sigmoid(gate(Wf, Uf, bf)) * c + tad::sigmoid(gate(Wi, Ui, bi)) * tad::tanh(gate(Wu, Uu, bu)));
    return tad::carries(tad::sigmoid(gate(Wo, Uo, bo)) * tad::tanh(c2), c2);
  };
  const auto loss = [&](const auto& out) { return tad::sum(tad::square(out - T(0.3))); };
  const auto grad = [&](const auto& l) {
    const tad::program prog(l);
    auto [v, gwi, gwf, gwo, gwu, gui, guf, guo, guu, gbi, gbf, gbo, gbu, gh, gc, gx] =
        prog.grad(Wi, Wf, Wo, Wu, Ui, Uf, Uo, Uu, bi, bf, bo, bu, H0, C0, X);
    return std::pair{double(v), std::vector<std::vector<double>>{doubles(gwi), doubles(gwf), doubles(gwo), doubles(gwu),
                                                                 doubles(gui), doubles(guf), doubles(guo), doubles(guu),
                                                                 doubles(gbi), doubles(gbf), doubles(gbo), doubles(gbu),
                                                                 doubles(gh), doubles(gc), doubles(gx)}};
  };
  if (p.every) return grad(loss(tad::scan(cell, tad::carries(H0, C0), X, tad::every_step, opts)));
  return grad(loss(tad::scan(cell, tad::carries(H0, C0), X, opts)));
}

const char* const names[] = {"dWi", "dWf", "dWo", "dWu", "dUi", "dUf", "dUo", "dUu", "dbi", "dbf", "dbo", "dbu", "dh0", "dc0", "dX"};

/// tad's value and gradients (with options `opts`) against central differences of `ref`
/// (default: the loss; truncation: its truncated objective) in double.
template <class T, bool Matrix>
void check(lstm p, tad::scan_options opts = {}, const std::function<double(lstm&)>& ref = {}) {
  const std::string what = "H " + std::to_string(p.H) + " D " + std::to_string(p.D) + " T " + std::to_string(p.T) +
                           " B " + std::to_string(p.B) + (p.every ? " every" : " last") + " truncate " +
                           std::to_string(opts.truncate) + " checkpoint " + std::to_string(opts.checkpoint);
  const double tol = std::is_same_v<T, float> ? 3e-4 : 1e-7;
  const auto [value, g] = run<T, Matrix>(p, opts);
  BOOST_TEST(tad_test::close(value, p.loss(), std::is_same_v<T, float> ? 1e-5 : 1e-12), what << ": value " << value << ", expected " << p.loss());
  std::array<std::vector<double>*, 15> arrays{&p.w[0], &p.w[1], &p.w[2], &p.w[3], &p.u[0], &p.u[1], &p.u[2], &p.u[3],
                                              &p.b[0], &p.b[1], &p.b[2], &p.b[3], &p.h0, &p.c0, &p.xs};
  const std::function<double()> f = ref ? std::function<double()>([&] { return ref(p); }) : std::function<double()>{};
  for (std::size_t a = 0; a < arrays.size(); ++a)
    expect_all_close(g[a], p.differences(*arrays[a], f), tol, what + " " + names[a]);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_lstm)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_batch_of_lstm_sequences_last_and_every_step, T, tad_test::reals) {
  for (const std::size_t h : {1u, 3u, 4u, 5u, 8u, 9u, 17u}) {
    for (const bool all : {false, true}) {
      lstm p(h, 2, 3, 2);
      p.every = all;
      check<T, true>(p);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(no_step_one_step_two_steps_and_a_batch_of_seven, T, tad_test::reals) {
  for (const std::size_t steps : {0u, 1u, 2u}) {
    for (const bool all : {false, true}) {
      lstm p(5, 3, steps, 7);
      p.every = all;
      check<T, true>(p);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(one_sequence_as_vector_carries, T, tad_test::reals) {
  for (const std::size_t h : {3u, 7u, 8u, 15u, 16u, 17u}) {
    for (const bool all : {false, true}) {
      lstm p(h, 2, 4, 0);
      p.every = all;
      check<T, false>(p);
    }
  }
}

// Truncated BPTT over blocks of k steps cuts both arrays at h_k, h_2k, ...: against central
// differences of each block's loss from its first carries held fixed (the last h, or every h).
BOOST_AUTO_TEST_CASE_TEMPLATE(truncation_cuts_every_array_of_the_carry, T, tad_test::reals) {
  for (const std::size_t k : {2u, 3u}) {
    for (const bool all : {false, true}) {
      lstm p(5, 2, 7, 2);
      p.every = all;
      const auto at = p.starts(k);
      check<T, true>(p, tad::scan_options{.truncate = k}, [&](lstm& q) { return q.truncated_loss(at, k); });
    }
  }
}

// Checkpointing a tuple with blocks that divide T and that do not (a short last block), and
// sqrt_steps: against central differences.
BOOST_AUTO_TEST_CASE_TEMPLATE(checkpointed_against_central_differences, T, tad_test::reals) {
  for (const std::size_t k : {std::size_t(2), std::size_t(3), std::size_t(7), tad::scan_options::sqrt_steps}) {
    lstm p(5, 2, 7, 2);
    check<T, true>(p, tad::scan_options{.checkpoint = k});
  }
}

// A thousand steps; checkpointing keeps every k-th carry (both arrays) and recomputes each
// block: bit for bit the stored run's gradients. In double (tad_test::one_real: in the
// float-only sanitizer stage, float, without the central differences below).
BOOST_AUTO_TEST_CASE(a_thousand_steps_checkpointed_equals_stored_bit_for_bit) {
  using R = tad_test::one_real;
  lstm p(4, 2, 1000, 3);
  for (double& e : p.b[1]) e += 7;  // forget gates near 1: the cell carries the gradient back 1000 steps
  const auto stored = run<R, true>(p);
  for (const std::size_t k : {std::size_t(1), std::size_t(7), std::size_t(1000), tad::scan_options::sqrt_steps}) {
    const auto ckpt = run<R, true>(p, tad::scan_options{.checkpoint = k});
    BOOST_TEST(ckpt.first == stored.first);
    for (std::size_t a = 0; a < stored.second.size(); ++a)
      BOOST_TEST(ckpt.second[a] == stored.second[a], names[a] << " with checkpoint " << k);
  }
  // And the gradients of h0 and c0 against central differences, over the thousand steps: not
  // vanished (the comparison could not fail if they were 0).
  double norm = 0;
  for (double e : stored.second[13]) norm += e * e;
  BOOST_TEST_REQUIRE(std::sqrt(norm) > 1e-3, "dc0's norm " << std::sqrt(norm));
  if constexpr (std::is_same_v<R, double>) {
    expect_all_close(stored.second[12], p.differences(p.h0), 1e-6, "T 1000 dh0");
    expect_all_close(stored.second[13], p.differences(p.c0), 1e-6, "T 1000 dc0");
  }
}

// A per-step output other than the state: a first carry y that the step does not read,
// y_{t+1} = tanh(h_t) V (2 per step, while the state h has 3: carries of different shapes),
// stacked by every_step. Against central differences of the same loop by hand.
BOOST_AUTO_TEST_CASE(a_per_step_output_as_a_first_carry_the_step_does_not_read) {
  constexpr std::size_t H = 3, D = 2, K = 2, T = 6;
  std::vector<double> w(H * H), u(D * H), v(H * K), h0(H), xs(T * D), targets(T * K), y0(K);
  tad_test::fill_uniform(w, -0.6, 0.6, 51);
  tad_test::fill_uniform(u, -1, 1, 52);
  tad_test::fill_uniform(v, -1, 1, 53);
  tad_test::fill_uniform(h0, -0.5, 0.5, 54);
  tad_test::fill_uniform(xs, -1, 1, 55);
  tad_test::fill_uniform(targets, -0.5, 0.5, 56);
  const auto by_hand = [&] {
    std::vector<double> h = h0, hn(H);
    double l = 0;
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t k = 0; k < K; ++k) {
        double y = 0;
        for (std::size_t j = 0; j < H; ++j) y += std::tanh(h[j]) * v[j * K + k];
        l += (y - targets[t * K + k]) * (y - targets[t * K + k]);
      }
      for (std::size_t j = 0; j < H; ++j) {
        double a = 0;
        for (std::size_t i = 0; i < H; ++i) a += h[i] * w[i * H + j];
        for (std::size_t i = 0; i < D; ++i) a += xs[t * D + i] * u[i * H + j];
        hn[j] = std::tanh(a);
      }
      h.swap(hn);
    }
    return l;
  };
  auto W = tad::var<"W">(w.data(), H, H);
  auto U = tad::var<"U">(u.data(), D, H);
  auto V = tad::var<"V">(v.data(), H, K);
  auto H0 = tad::var<"h0">(h0);
  const auto X = tad::constant(xs.data(), T, D);
  const auto step = [=](auto, auto h, auto x) {
    return tad::carries(tad::matmul(tad::tanh(h), V), tad::tanh(tad::matmul(h, W) + tad::matmul(x, U)));
  };
  const auto ys = tad::scan(step, tad::carries(tad::constant(y0), H0), X, tad::every_step);  // T x K
  const tad::program prog(tad::sum(tad::square(ys - tad::constant(targets.data(), T, K))));
  const auto [value, gw, gu, gv, gh] = prog.grad(W, U, V, H0);
  BOOST_TEST(tad_test::close(value, by_hand(), 1e-12), "value " << value << ", expected " << by_hand());
  const auto diff = [&](std::vector<double>& a) { return differences(a, by_hand); };
  expect_all_close(doubles(gw), diff(w), 1e-7, "dW");
  expect_all_close(doubles(gu), diff(u), 1e-7, "dU");
  expect_all_close(doubles(gv), diff(v), 1e-7, "dV");
  expect_all_close(doubles(gh), diff(h0), 1e-7, "dh0");
}

// Four arrays of three shapes (every placeholder slot): a per-step output Y (B x K, the old h
// times V), the state H (B x n), and two vectors s and a that every row shares:
// H' = tanh(H W + X_t U + s + a), s' = 0.9 s + 0.1 mean(H', down the rows), a' = (a + s) / 2.
// The loss reads every Y. Against central differences of the same loop by hand.
template <class T>
void four_arrays(std::size_t steps) {
  constexpr std::size_t B = 3, n = 5, K = 2, D = 2;
  std::vector<double> w(n * n), u(D * n), v(n * K), h0(B * n), s0(n), a0(n), xs(steps * B * D), target(steps * B * K);
  tad_test::fill_uniform(w, -0.5, 0.5, 71);
  tad_test::fill_uniform(u, -1, 1, 72);
  tad_test::fill_uniform(v, -1, 1, 73);
  tad_test::fill_uniform(h0, -0.5, 0.5, 74);
  tad_test::fill_uniform(s0, -0.5, 0.5, 75);
  tad_test::fill_uniform(a0, -0.5, 0.5, 76);
  tad_test::fill_uniform(xs, -1, 1, 77);
  tad_test::fill_uniform(target, -0.5, 0.5, 78);
  const auto by_hand = [&] {
    std::vector<double> h = h0, sv = s0, av = a0, hn(B * n), sn(n), an(n);
    double l = 0;
    for (std::size_t t = 0; t < steps; ++t) {
      for (std::size_t r = 0; r < B; ++r)
        for (std::size_t k = 0; k < K; ++k) {
          double y = 0;
          for (std::size_t j = 0; j < n; ++j) y += h[r * n + j] * v[j * K + k];
          const double e = y - target[(t * B + r) * K + k];
          l += e * e;
        }
      for (std::size_t r = 0; r < B; ++r)
        for (std::size_t j = 0; j < n; ++j) {
          double z = sv[j] + av[j];
          for (std::size_t i = 0; i < n; ++i) z += h[r * n + i] * w[i * n + j];
          for (std::size_t i = 0; i < D; ++i) z += xs[(t * B + r) * D + i] * u[i * n + j];
          hn[r * n + j] = std::tanh(z);
        }
      for (std::size_t j = 0; j < n; ++j) {
        double m = 0;
        for (std::size_t r = 0; r < B; ++r) m += hn[r * n + j];
        sn[j] = 0.9 * sv[j] + 0.1 * m / double(B);
        an[j] = 0.5 * (av[j] + sv[j]);
      }
      h.swap(hn), sv.swap(sn), av.swap(an);
    }
    return l;
  };
  auto wb = unaligned<T>(w), ub = unaligned<T>(u), vb = unaligned<T>(v), hb = unaligned<T>(h0);
  auto sb = unaligned<T>(s0), ab = unaligned<T>(a0), xb = unaligned<T>(xs), tb = unaligned<T>(target);
  std::vector<T> zeros(B * K, T(0));
  auto W = tad::var<"W">(static_cast<const T*>(wb.data()), n, n);
  auto U = tad::var<"U">(static_cast<const T*>(ub.data()), D, n);
  auto V = tad::var<"V">(static_cast<const T*>(vb.data()), n, K);
  auto H0 = tad::var<"h0">(static_cast<const T*>(hb.data()), B, n);
  auto S0 = tad::var<"s0">(sb.cspan());
  auto A0 = tad::var<"a0">(ab.cspan());
  const auto X = tad::constant(static_cast<const T*>(xb.data()), steps * B, D);
  const auto Y0 = tad::constant(static_cast<const T*>(zeros.data()), B, K);
  const auto step = [=](auto, auto h, auto sv, auto av, auto x) {
    const auto h2 = tad::let<"h2">(tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + sv + av));
    return tad::carries(tad::matmul(h, V), h2, T(0.9) * sv + T(0.1 / double(B)) * tad::sum(h2, tad::axis<0>),
                        T(0.5) * (av + sv));
  };
  const auto ys = tad::scan(step, tad::carries(Y0, H0, S0, A0), X, tad::every_step);  // (steps B) x K
  const tad::program prog(tad::sum(tad::square(ys - tad::constant(static_cast<const T*>(tb.data()), steps * B, K))));
  const auto [value, gw, gu, gv, gh, gs, ga] = prog.grad(W, U, V, H0, S0, A0);
  const double tol = std::is_same_v<T, float> ? 3e-4 : 1e-7;
  const std::string at = " (T = " + std::to_string(steps) + ")";
  BOOST_TEST(tad_test::close(double(value), by_hand(), std::is_same_v<T, float> ? 1e-5 : 1e-12), "value" << at);
  const auto diff = [&](std::vector<double>& a) { return differences(a, by_hand); };
  expect_all_close(doubles(gw), diff(w), tol, "dW" + at);
  expect_all_close(doubles(gu), diff(u), tol, "dU" + at);
  expect_all_close(doubles(gv), diff(v), tol, "dV" + at);
  expect_all_close(doubles(gh), diff(h0), tol, "dh0" + at);
  expect_all_close(doubles(gs), diff(s0), tol, "ds0" + at);
  expect_all_close(doubles(ga), diff(a0), tol, "da0" + at);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(four_arrays_of_three_shapes, T, tad_test::reals) {
  for (const std::size_t steps : {0u, 1u, 4u}) four_arrays<T>(steps);
}

// One node, one rule across the arrays: a clipped value both new arrays read is a let, and its
// rule runs once per step on the sum of both arrays' adjoints. The cell: a = clip_gradient(
// tanh(h W + x U)) (a let), h' = a * s, s' = a; against backpropagation through time by hand,
// which clips the summed adjoint (where clipping each array's share would differ).
BOOST_AUTO_TEST_CASE(a_clipped_let_both_arrays_read_runs_its_rule_once_on_the_summed_adjoint) {
  constexpr std::size_t H = 4, D = 2, T = 5;
  constexpr double k = 0.05;
  std::vector<double> w(H * H), u(D * H), h0(H), s0(H), xs(T * D);
  tad_test::fill_uniform(w, -0.8, 0.8, 61);
  tad_test::fill_uniform(u, -1, 1, 62);
  tad_test::fill_uniform(h0, -0.5, 0.5, 63);
  tad_test::fill_uniform(s0, 0.5, 1.5, 64);
  tad_test::fill_uniform(xs, -1, 1, 65);
  // Forward by hand: every carry and every a.
  std::vector<std::vector<double>> hs(T + 1, std::vector<double>(H)), ss = hs, as(T, std::vector<double>(H));
  hs[0] = h0, ss[0] = s0;
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t j = 0; j < H; ++j) {
      double z = 0;
      for (std::size_t i = 0; i < H; ++i) z += hs[t][i] * w[i * H + j];
      for (std::size_t i = 0; i < D; ++i) z += xs[t * D + i] * u[i * H + j];
      as[t][j] = std::tanh(z);
      hs[t + 1][j] = as[t][j] * ss[t][j];
      ss[t + 1][j] = as[t][j];
    }
  }
  double want_value = 0;
  std::vector<double> dh(H), ds(H, 0.0), gw(H * H, 0.0), gu(D * H, 0.0);
  for (std::size_t j = 0; j < H; ++j) {
    want_value += (hs[T][j] - 0.3) * (hs[T][j] - 0.3);
    dh[j] = 2 * (hs[T][j] - 0.3);
  }
  std::size_t clipped = 0;
  for (std::size_t t = T; t-- > 0;) {
    std::vector<double> dpre(H), dh2(H, 0.0), ds2(H);
    for (std::size_t j = 0; j < H; ++j) {
      const double sum = dh[j] * ss[t][j] + ds[j];  // a's two uses: one adjoint
      const double g = std::clamp(sum, -k, k);       // the rule, once
      clipped += g != sum;
      dpre[j] = g * (1 - as[t][j] * as[t][j]);
      ds2[j] = dh[j] * as[t][j];
    }
    for (std::size_t i = 0; i < H; ++i)
      for (std::size_t j = 0; j < H; ++j) gw[i * H + j] += hs[t][i] * dpre[j], dh2[i] += dpre[j] * w[i * H + j];
    for (std::size_t i = 0; i < D; ++i)
      for (std::size_t j = 0; j < H; ++j) gu[i * H + j] += xs[t * D + i] * dpre[j];
    dh = dh2, ds = ds2;
  }
  BOOST_TEST_REQUIRE(clipped > 0u);  // the rule is exercised
  auto W = tad::var<"W">(w.data(), H, H);
  auto U = tad::var<"U">(u.data(), D, H);
  auto Hv = tad::var<"h0">(h0);
  auto Sv = tad::var<"s0">(s0);
  const auto X = tad::constant(xs.data(), T, D);
  const auto step = [=](auto h, auto s, auto x) {
    auto a = tad::let<"a">(tad::clip_gradient(tad::tanh(tad::matmul(h, W) + tad::matmul(x, U)), -k, k));
    return tad::carries(a * s, a);
  };
  const tad::program prog(tad::sum(tad::square(tad::scan(step, tad::carries(Hv, Sv), X) - 0.3)));
  const auto [value, tw, tu, th, ts] = prog.grad(W, U, Hv, Sv);
  BOOST_TEST(tad_test::close(value, want_value, 1e-12));
  expect_all_close(doubles(tw), gw, 1e-12, "dW");
  expect_all_close(doubles(tu), gu, 1e-12, "dU");
  expect_all_close(doubles(th), dh, 1e-12, "dh0");
  expect_all_close(doubles(ts), ds, 1e-12, "ds0");
}

BOOST_AUTO_TEST_SUITE_END()
