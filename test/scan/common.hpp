#pragma once
// Test support for tad::scan: a tanh recurrent net `h_{t+1} = tanh(h_t W + x_t U + b)` written
// by hand in double (forward, and backpropagation through time with the gradient surgery the
// tests apply to the carry), independent of tad, and checked itself against central
// differences of its forward. The loss is `sum((h_T - 0.3)^2)` (the last carry) or the same
// summed over every carry after a step.

#include "support/check.hpp"

#include <tad/linalg.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tad_test::scan {

/// The problem: sizes, parameters and inputs (double), and the surgery on the carry.
struct rnn {
  std::size_t H = 3, D = 2, T = 4;
  std::size_t B = 0;  // 0: a vector carry (one sequence); else a batch of B sequences, a matrix carry
  bool every = false;      // the loss reads every carry (tad::every_step), not the last
  double clip = 0;         // > 0: the carry's adjoint into the product clipped to [-clip, clip]
  double scale = 1;        // the carry's adjoint into the product scaled
  bool stop = false;       // no gradient through the carry into the product (stop_gradient)
  std::size_t truncate = 0;  // > 0: no gradient through the carry into h_k, h_2k, ... (scan_options)
  double skip = 0;         // h_{t+1} = tanh(..) + skip h_t, the same (surgered) use of h_t as the product's
  double out_lin = 0;      // the loss adds out_lin * sum(out) ...
  double out_clip = 0;     // ... and (> 0) the output's summed adjoint is clipped to [-out_clip, out_clip]
  double target = 0.3;
  std::vector<double> w, u, b, h0, xs;  // W H x H, U D x H, b H, h0 R x H, xs (T R) x D; R = max(B, 1)

  std::size_t rows() const { return B == 0 ? 1 : B; }
  rnn(std::size_t h, std::size_t d, std::size_t t, std::size_t batch, unsigned seed = 7)
      : H(h), D(d), T(t), B(batch), w(h * h), u(d * h), b(h), h0(rows() * h), xs(t * rows() * d) {
    const double s = 1.0 / std::sqrt(double(std::max<std::size_t>(h, 1)));
    fill_uniform(w, -1.2 * s, 1.2 * s, seed);
    fill_uniform(u, -1, 1, seed + 1);
    fill_uniform(b, -0.2, 0.2, seed + 2);
    fill_uniform(h0, -0.5, 0.5, seed + 3);
    fill_uniform(xs, -1, 1, seed + 4);
  }

  /// The carries: T + 1 of R x H, h0 first.
  std::vector<std::vector<double>> states() const {
    const std::size_t R = rows();
    std::vector<std::vector<double>> s(T + 1, std::vector<double>(R * H));
    s[0] = h0;
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t j = 0; j < H; ++j) {
          double a = b[j];
          for (std::size_t i = 0; i < H; ++i) a += s[t][r * H + i] * w[i * H + j];
          for (std::size_t i = 0; i < D; ++i) a += xs[(t * R + r) * D + i] * u[i * H + j];
          s[t + 1][r * H + j] = std::tanh(a) + skip * s[t][r * H + j];
        }
      }
    }
    return s;
  }
  double loss() const {
    const auto s = states();
    double l = 0;
    for (std::size_t t = every ? 1 : T; t <= T; ++t)
      for (double v : s[t]) l += (v - target) * (v - target) + out_lin * v;
    return l;
  }

  struct grads {
    std::vector<double> w, u, b, h0, xs;
  };
  /// Backpropagation through time, with the surgery applied to the carry's adjoint from the
  /// product (once per step: its one use there).
  grads bptt() const {
    const std::size_t R = rows();
    const auto s = states();
    grads g{std::vector<double>(H * H), std::vector<double>(D * H), std::vector<double>(H),
            std::vector<double>(R * H), std::vector<double>(T * R * D)};
    std::vector<double> ds(R * H, 0.0), da(R * H), dhs(R * H);
    const auto out = [&](double v) {  // the adjoint of one output element
      const double d = 2 * (v - target) + out_lin;
      return out_clip > 0 ? std::clamp(d, -out_clip, out_clip) : d;
    };
    for (std::size_t q = 0; q < R * H; ++q) ds[q] = T == 0 && every ? 0.0 : out(s[T][q]);
    for (std::size_t t = T; t-- > 0;) {
      for (std::size_t q = 0; q < R * H; ++q) {
        const double th = s[t + 1][q] - skip * s[t][q];  // tanh(a)
        da[q] = ds[q] * (1 - th * th);
      }
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t j = 0; j < H; ++j) {
          const double d = da[r * H + j];
          for (std::size_t i = 0; i < H; ++i) g.w[i * H + j] += s[t][r * H + i] * d;
          for (std::size_t i = 0; i < D; ++i) g.u[i * H + j] += xs[(t * R + r) * D + i] * d;
          g.b[j] += d;
        }
        for (std::size_t i = 0; i < D; ++i) {
          double dx = 0;
          for (std::size_t j = 0; j < H; ++j) dx += da[r * H + j] * u[i * H + j];
          g.xs[(t * R + r) * D + i] = dx;
        }
        for (std::size_t i = 0; i < H; ++i) {
          double dh = 0;
          for (std::size_t j = 0; j < H; ++j) dh += da[r * H + j] * w[i * H + j];
          dh += skip * ds[r * H + i];  // both uses of the carry: one adjoint, one rule
          dh *= scale;
          if (clip > 0) dh = std::clamp(dh, -clip, clip);
          if (stop || (truncate != 0 && t != 0 && t % truncate == 0)) dh = 0;
          dhs[r * H + i] = dh + (every && t > 0 ? out(s[t][r * H + i]) : 0.0);
        }
      }
      ds.swap(dhs);
    }
    g.h0 = ds;
    return g;
  }
};

/// Central differences of f with respect to each element of v (f reads v).
template <class F>
std::vector<double> differences(std::vector<double>& v, F f) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x0 = v[i];
    d[i] = central(
        [&](double x) {
          v[i] = x;
          return f();
        },
        x0, 1e-6);
    v[i] = x0;
  }
  return d;
}
/// Central differences of p.loss() with respect to each element of v (a member of p).
inline std::vector<double> differences(rnn& p, std::vector<double>& v) {
  return differences(v, [&] { return p.loss(); });
}

/// The tolerance of a result computed in T against central differences in double.
template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 2e-3 : 1e-7;
}

inline void expect_all_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                             const std::string& what) {
  BOOST_TEST(got.size() == want.size(), what << ": length " << got.size() << ", expected " << want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (!close(got[i], want[i], tol) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << got.size() << " elements differ; first [" << first
                             << "]: tad " << (bad ? got[first] : 0.0) << ", expected "
                             << (bad ? want[first] : 0.0));
}

/// tad's results for the problem, in double.
struct result {
  double value = 0;
  rnn::grads g;
};

/// Unaligned copies of the problem's arrays in T.
template <class T>
struct stored {
  buffer<T> w, u, b, h0, xs;
  explicit stored(const rnn& p)
      : w(p.w.size()), u(p.u.size()), b(p.b.size()), h0(p.h0.size()), xs(p.xs.size()) {
    std::copy(p.w.begin(), p.w.end(), w.begin());
    std::copy(p.u.begin(), p.u.end(), u.begin());
    std::copy(p.b.begin(), p.b.end(), b.begin());
    std::copy(p.h0.begin(), p.h0.end(), h0.begin());
    std::copy(p.xs.begin(), p.xs.end(), xs.begin());
  }
};

/// An unaligned copy of v in T.
template <class T>
buffer<T> unaligned(const std::vector<double>& v) {
  buffer<T> b(v.size());
  std::copy(v.begin(), v.end(), b.begin());
  return b;
}

template <class V>
std::vector<double> doubles(const V& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// The carry's kind: a vector (p.B == 0) or a matrix (a batch). A test that fixes it
/// instantiates one program instead of two (run_on).
enum class carry { vector, matrix };

/// Runs the loss `loss_of(out)` (default: `sum(square(out - target))`) of `out`, a scan of the
/// stored arrays built by make(W, U, b, h0, X), in a program: its value and gradients with
/// respect to every array. run_on<T, K> for a carry of kind K (p.B must agree); run<T> either.
template <class T, carry K, class Make, class Loss>
result run_on(const rnn& p, Make make, Loss loss_of) {
  BOOST_TEST_REQUIRE((p.B == 0) == (K == carry::vector));
  stored<T> s(p);
  const std::size_t R = p.rows();
  auto W = tad::var<"W">(static_cast<const T*>(s.w.data()), p.H, p.H);
  auto U = tad::var<"U">(static_cast<const T*>(s.u.data()), p.D, p.H);
  auto b = tad::var<"b">(static_cast<const T*>(s.b.data()), p.H);
  auto X = tad::var<"X">(static_cast<const T*>(s.xs.data()), p.T * R, p.D);
  const auto h0 = [&] {
    if constexpr (K == carry::vector) return tad::var<"h0">(static_cast<const T*>(s.h0.data()), p.H);
    else return tad::var<"h0">(static_cast<const T*>(s.h0.data()), p.B, p.H);
  }();
  const auto loss = loss_of(make(W, U, b, h0, X));
  tad::program prog(loss);
  auto [v, gw, gu, gb, gh, gx] = prog.grad(W, U, b, h0, X);
  return result{double(v), {doubles(gw), doubles(gu), doubles(gb), doubles(gh), doubles(gx)}};
}
template <class T, carry K, class Make>
result run_on(const rnn& p, Make make) {
  return run_on<T, K>(p, make, [&](const auto& out) { return tad::sum(tad::square(out - T(p.target))); });
}
template <class T, class Make, class Loss>
result run(const rnn& p, Make make, Loss loss_of) {
  if (p.B == 0) return run_on<T, carry::vector>(p, make, loss_of);
  else return run_on<T, carry::matrix>(p, make, loss_of);
}

template <class T, class Make>
result run(const rnn& p, Make make) {
  return run<T>(p, make, [&](const auto& out) { return tad::sum(tad::square(out - T(p.target))); });
}

/// tad's value and gradients against the hand-written ones.
template <class T>
void expect_matches(const result& got, const rnn& p, const std::string& what) {
  const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-11;
  const auto want = p.bptt();
  BOOST_TEST(close(got.value, p.loss(), tol), what << ": value " << got.value << ", expected " << p.loss());
  expect_all_close(got.g.w, want.w, tol, what + " dW");
  expect_all_close(got.g.u, want.u, tol, what + " dU");
  expect_all_close(got.g.b, want.b, tol, what + " db");
  expect_all_close(got.g.h0, want.h0, tol, what + " dh0");
  expect_all_close(got.g.xs, want.xs, tol, what + " dX");
}

}  // namespace tad_test::scan
