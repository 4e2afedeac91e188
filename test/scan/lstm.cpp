// tad::scan with a tuple of carries (tad::carries): an LSTM cell, whose carry is the hidden
// state h and the cell state c, against central differences of an LSTM written by hand in
// double; a per-step output carried as a first array the step does not read; arrays of
// different shapes; checkpointing bitwise equal to the stored run; T = 0, 1, 2 and 1000.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::scan::expect_all_close;

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
  double loss() const {
    const std::size_t R = rows();
    std::vector<double> h = h0, c = c0, hn(R * H), cn(R * H);
    double l = 0;
    const auto read = [&](const std::vector<double>& v) {
      for (double e : v) l += (e - 0.3) * (e - 0.3);
    };
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t j = 0; j < H; ++j) {
          std::array<double, 4> z{};
          for (std::size_t g = 0; g < 4; ++g) {
            z[g] = b[g][j];
            for (std::size_t i = 0; i < H; ++i) z[g] += h[r * H + i] * w[g][i * H + j];
            for (std::size_t i = 0; i < D; ++i) z[g] += xs[(t * R + r) * D + i] * u[g][i * H + j];
          }
          const std::size_t q = r * H + j;
          cn[q] = sigmoid(z[1]) * c[q] + sigmoid(z[0]) * std::tanh(z[3]);
          hn[q] = sigmoid(z[2]) * std::tanh(cn[q]);
        }
      }
      h.swap(hn), c.swap(cn);
      if (every) read(h);
    }
    if (!every) read(h);
    return l;
  }
  /// Central differences of loss() with respect to each element of v (a member).
  std::vector<double> differences(std::vector<double>& v) {
    std::vector<double> d(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double x0 = v[i];
      d[i] = tad_test::central(
          [&](double x) {
            v[i] = x;
            return loss();
          },
          x0, 1e-6);
      v[i] = x0;
    }
    return d;
  }
};

/// An unaligned copy of v in T.
template <class T>
buffer<T> copy_of(const std::vector<double>& v) {
  buffer<T> b(v.size());
  std::copy(v.begin(), v.end(), b.begin());
  return b;
}

template <class V>
std::vector<double> doubles(const V& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// tad's LSTM: a scan of carries(h, c) over the stored arrays; `opts` its options. Returns the
/// value and the gradients of (W_0..3, U_0..3, b_0..3, h0, c0, X), in double.
template <class T, bool Matrix>
std::pair<double, std::vector<std::vector<double>>> run(const lstm& p, tad::scan_options opts = {}) {
  const std::size_t R = p.rows();
  std::array<buffer<T>, 4> w{copy_of<T>(p.w[0]), copy_of<T>(p.w[1]), copy_of<T>(p.w[2]), copy_of<T>(p.w[3])};
  std::array<buffer<T>, 4> u{copy_of<T>(p.u[0]), copy_of<T>(p.u[1]), copy_of<T>(p.u[2]), copy_of<T>(p.u[3])};
  std::array<buffer<T>, 4> b{copy_of<T>(p.b[0]), copy_of<T>(p.b[1]), copy_of<T>(p.b[2]), copy_of<T>(p.b[3])};
  buffer<T> h0 = copy_of<T>(p.h0), c0 = copy_of<T>(p.c0), xs = copy_of<T>(p.xs);
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
  if (p.every) return grad(loss(tad::scan(cell, tad::carries(H0, C0), X, tad::every_step)));
  return grad(loss(tad::scan(cell, tad::carries(H0, C0), X, opts)));
}

const char* const names[] = {"dWi", "dWf", "dWo", "dWu", "dUi", "dUf", "dUo", "dUu", "dbi", "dbf", "dbo", "dbu", "dh0", "dc0", "dX"};

template <class T, bool Matrix>
void check(lstm p) {
  const std::string what = "H " + std::to_string(p.H) + " D " + std::to_string(p.D) + " T " + std::to_string(p.T) +
                           " B " + std::to_string(p.B) + (p.every ? " every" : " last");
  const double tol = std::is_same_v<T, float> ? 3e-4 : 1e-7;
  const auto [value, g] = run<T, Matrix>(p);
  BOOST_TEST(tad_test::close(value, p.loss(), std::is_same_v<T, float> ? 1e-5 : 1e-12), what << ": value " << value << ", expected " << p.loss());
  std::array<std::vector<double>*, 15> arrays{&p.w[0], &p.w[1], &p.w[2], &p.w[3], &p.u[0], &p.u[1], &p.u[2], &p.u[3],
                                              &p.b[0], &p.b[1], &p.b[2], &p.b[3], &p.h0, &p.c0, &p.xs};
  for (std::size_t a = 0; a < arrays.size(); ++a) expect_all_close(g[a], p.differences(*arrays[a]), tol, what + " " + names[a]);
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

BOOST_AUTO_TEST_CASE(one_sequence_as_vector_carries) {
  for (const std::size_t h : {3u, 8u, 16u, 17u}) {
    for (const bool all : {false, true}) {
      lstm p(h, 2, 4, 0);
      p.every = all;
      check<double, false>(p);
    }
  }
}

// A thousand steps; checkpointing keeps every k-th carry (both arrays) and recomputes each
// block: bit for bit the stored run's gradients.
BOOST_AUTO_TEST_CASE(a_thousand_steps_checkpointed_equals_stored_bit_for_bit) {
  lstm p(4, 2, 1000, 3);
  const auto stored = run<double, true>(p);
  for (const std::size_t k : {std::size_t(1), std::size_t(7), std::size_t(1000), tad::scan_options::sqrt_steps}) {
    const auto ckpt = run<double, true>(p, tad::scan_options{.checkpoint = k});
    BOOST_TEST(ckpt.first == stored.first);
    for (std::size_t a = 0; a < stored.second.size(); ++a)
      BOOST_TEST(ckpt.second[a] == stored.second[a], names[a] << " with checkpoint " << k);
  }
  // And the gradient of h0 against central differences, over the thousand steps.
  expect_all_close(stored.second[12], p.differences(p.h0), 1e-6, "T 1000 dh0");
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
  const auto diff = [&](std::vector<double>& a) {
    std::vector<double> d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x0 = a[i];
      d[i] = tad_test::central(
          [&](double x) {
            a[i] = x;
            return by_hand();
          },
          x0, 1e-6);
      a[i] = x0;
    }
    return d;
  };
  expect_all_close(doubles(gw), diff(w), 1e-7, "dW");
  expect_all_close(doubles(gu), diff(u), 1e-7, "dU");
  expect_all_close(doubles(gv), diff(v), 1e-7, "dV");
  expect_all_close(doubles(gh), diff(h0), 1e-7, "dh0");
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
