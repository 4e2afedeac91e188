#pragma once
/// Hand-written baselines for the benchmarks: value and analytic gradient of each workload,
/// as a plain scalar loop and as an xsimd loop. Reused by every benchmark/*.cpp.
///
/// The xsimd loops use what a careful programmer writes by hand: `xsimd::batch<T>` for the
/// compiled architecture, unaligned loads and stores, an unroll of 2 with 2 accumulators, loop
/// invariants (1/sigma, log sigma) computed once, and a scalar tail that uses the same `std::`
/// functions as tad's own scalar tail. Elementary functions are xsimd's (tad calls the same).
/// See doc/benchmarks.md for the workloads and doc/log/benchmarks.md for the measured ratios.

// tad's batch header first: it includes xsimd with g++ 12.2's false AVX-512 warnings silenced
// (doc/decisions.md item 17), which must happen before anything else includes xsimd.
#include <tad/simd/batch.hpp>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>

namespace bench {

template <class T>
using batch = xsimd::batch<T>;

namespace detail {
template <class T>
T hmax(const batch<T>& v) {
  alignas(batch<T>::arch_type::alignment()) T lanes[batch<T>::size];
  v.store_aligned(lanes);
  T r = lanes[0];
  for (std::size_t k = 1; k < batch<T>::size; ++k) r = std::max(r, lanes[k]);
  return r;
}
/// The shift of a stable logsumexp, as tad defines it: the maximum, or 0 if it is not finite.
template <class T>
T finite_or_zero(T m) {
  return std::isfinite(m) ? m : T(0);
}
}  // namespace detail

// ---- W1: sum(exp(sin x) * x + tanh(x)^2), gradient w.r.t. x ---------------------------------
// d/dx = exp(sin x) (x cos x + 1) + 2 tanh(x) (1 - tanh(x)^2)

/// W1, plain scalar loop. Writes the gradient to g[0, n) and returns the value. The sum is
/// accumulated in double: a single float accumulator over 10^6 terms is already off by 1e-4.
template <class T>
T w1_scalar(const T* x, T* g, std::size_t n) {
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T xi = x[i];
    const T e = std::exp(std::sin(xi));
    const T t = std::tanh(xi);
    acc += e * xi + t * t;
    g[i] = e * (std::cos(xi) * xi + T(1)) + T(2) * t * (T(1) - t * t);
  }
  return static_cast<T>(acc);
}

/// W1, xsimd: one fused loop, unroll 2 with 2 accumulators, scalar tail.
template <class T>
T w1_xsimd(const T* x, T* g, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  const B one(T(1)), two(T(2));
  auto elem = [&](const B& xv, T* gp, B& acc) {
    const B e = xsimd::exp(xsimd::sin(xv));
    const B t = xsimd::tanh(xv);
    acc = acc + xsimd::fma(e, xv, t * t);
    const B gv = xsimd::fma(e, xsimd::fma(xsimd::cos(xv), xv, one), two * t * (one - t * t));
    gv.store_unaligned(gp);
  };
  B acc0(T(0)), acc1(T(0));
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem(B::load_unaligned(x + i), g + i, acc0);
    elem(B::load_unaligned(x + i + W), g + i + W, acc1);
  }
  for (; i + W <= n; i += W) elem(B::load_unaligned(x + i), g + i, acc0);
  T acc = xsimd::hadd(acc0 + acc1);
  for (; i < n; ++i) {
    const T xi = x[i];
    const T e = std::exp(std::sin(xi));
    const T t = std::tanh(xi);
    acc += e * xi + t * t;
    g[i] = e * (std::cos(xi) * xi + T(1)) + T(2) * t * (T(1) - t * t);
  }
  return acc;
}

// ---- W2: Gaussian log-likelihood, gradient w.r.t. mu, sigma (scalars) and y (array) --------
// f = sum(-0.5 ((y - mu)/sigma)^2 - log sigma - 0.5 log 2 pi)
// d/dy_i = -(y_i - mu)/sigma^2, d/dmu = sum (y_i - mu)/sigma^2,
// d/dsigma = sum (y_i - mu)^2/sigma^3 - n/sigma.

template <class T>
struct w2_grads {
  T mu;
  T sigma;
};

/// W2, plain scalar loop: one pass accumulating sum(d) and sum(d^2), d = y - mu.
template <class T>
T w2_scalar(const T* y, T mu, T sigma, T* gy, w2_grads<T>& gs, std::size_t n) {
  const T inv = T(1) / sigma, inv2 = inv * inv;
  T sd = 0, sdd = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T d = y[i] - mu;
    gy[i] = -d * inv2;
    sd += d;
    sdd += d * d;
  }
  const T nn = static_cast<T>(n);
  gs.mu = sd * inv2;
  gs.sigma = sdd * inv2 * inv - nn * inv;
  const T c = std::log(sigma) + T(0.5) * std::log(T(2) * std::numbers::pi_v<T>);
  return T(-0.5) * sdd * inv2 - nn * c;
}

/// W2, xsimd: one loop, unroll 2 with 2 accumulators per sum, loop invariants hoisted.
template <class T>
T w2_xsimd(const T* y, T mu, T sigma, T* gy, w2_grads<T>& gs, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  const T inv = T(1) / sigma, inv2 = inv * inv;
  const B vmu(mu), vneg_inv2(-inv2);
  B sd0(T(0)), sd1(T(0)), sdd0(T(0)), sdd1(T(0));
  auto elem = [&](std::size_t k, B& sd, B& sdd) {
    const B d = B::load_unaligned(y + k) - vmu;
    (d * vneg_inv2).store_unaligned(gy + k);
    sd = sd + d;
    sdd = xsimd::fma(d, d, sdd);
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem(i, sd0, sdd0);
    elem(i + W, sd1, sdd1);
  }
  for (; i + W <= n; i += W) elem(i, sd0, sdd0);
  T sd = xsimd::hadd(sd0 + sd1), sdd = xsimd::hadd(sdd0 + sdd1);
  for (; i < n; ++i) {
    const T d = y[i] - mu;
    gy[i] = -d * inv2;
    sd += d;
    sdd += d * d;
  }
  const T nn = static_cast<T>(n);
  gs.mu = sd * inv2;
  gs.sigma = sdd * inv2 * inv - nn * inv;
  const T c = std::log(sigma) + T(0.5) * std::log(T(2) * std::numbers::pi_v<T>);
  return T(-0.5) * sdd * inv2 - nn * c;
}

/// W2, xsimd written literally from the formulas: a division by sigma per element, as the
/// expression reads. Not a target; it measures what the per-element divisions cost.
template <class T>
T w2_xsimd_div(const T* y, T mu, T sigma, T* gy, w2_grads<T>& gs, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  const T c = std::log(sigma) + T(0.5) * std::log(T(2) * std::numbers::pi_v<T>);
  const B vmu(mu), vsig(sigma), vhalf(T(0.5));
  B v0(T(0)), v1(T(0)), gm0(T(0)), gm1(T(0)), gs0(T(0)), gs1(T(0));
  auto elem = [&](std::size_t k, B& v, B& gm, B& gsg) {
    const B z = (B::load_unaligned(y + k) - vmu) / vsig;
    const B q = z / vsig;
    v = xsimd::fnma(vhalf, z * z, v);
    (-q).store_unaligned(gy + k);
    gm = gm + q;
    gsg = xsimd::fma(q, z, gsg);
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem(i, v0, gm0, gs0);
    elem(i + W, v1, gm1, gs1);
  }
  for (; i + W <= n; i += W) elem(i, v0, gm0, gs0);
  T v = xsimd::hadd(v0 + v1), gm = xsimd::hadd(gm0 + gm1), gsg = xsimd::hadd(gs0 + gs1);
  for (; i < n; ++i) {
    const T z = (y[i] - mu) / sigma;
    const T q = z / sigma;
    v -= T(0.5) * z * z;
    gy[i] = -q;
    gm += q;
    gsg += q * z;
  }
  const T nn = static_cast<T>(n);
  gs.mu = gm;
  gs.sigma = gsg - nn / sigma;
  return v - nn * c;
}

// ---- W3: logsumexp(x), gradient w.r.t. x (softmax) -----------------------------------------
// Shift m = max(x) (0 if not finite); value m + log s with s = sum exp(x - m);
// gradient exp(x - m) / s.

/// W3, plain scalar: max; exp(x - m) stored in g while summing; g *= 1/s.
template <class T>
T w3_scalar(const T* x, T* g, std::size_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  m = detail::finite_or_zero(m);
  T s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = std::exp(x[i] - m);
    s += g[i];
  }
  const T inv = T(1) / s;
  for (std::size_t i = 0; i < n; ++i) g[i] *= inv;
  return m + std::log(s);
}

namespace detail {
/// Pass 1 of W3: the maximum (xsimd::max is vmaxpd: a NaN in x still ends as NaN in the sum).
template <class T>
T w3_max(const T* x, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  B m0(ninf), m1(ninf);
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    m0 = xsimd::max(m0, B::load_unaligned(x + i));
    m1 = xsimd::max(m1, B::load_unaligned(x + i + W));
  }
  for (; i + W <= n; i += W) m0 = xsimd::max(m0, B::load_unaligned(x + i));
  T m = hmax(xsimd::max(m0, m1));
  for (; i < n; ++i) m = std::max(m, x[i]);
  return finite_or_zero(m);
}
}  // namespace detail

/// W3, xsimd, three passes, one exp per element: (1) max; (2) g = exp(x - m), s += g;
/// (3) g *= 1/s. Three reads and two writes of n elements.
template <class T>
T w3_xsimd_store(const T* x, T* g, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  const T m = detail::w3_max(x, n);
  const B vm(m);
  B s0(T(0)), s1(T(0));
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const B e0 = xsimd::exp(B::load_unaligned(x + i) - vm);
    const B e1 = xsimd::exp(B::load_unaligned(x + i + W) - vm);
    e0.store_unaligned(g + i);
    e1.store_unaligned(g + i + W);
    s0 = s0 + e0;
    s1 = s1 + e1;
  }
  for (; i + W <= n; i += W) {
    const B e0 = xsimd::exp(B::load_unaligned(x + i) - vm);
    e0.store_unaligned(g + i);
    s0 = s0 + e0;
  }
  T s = xsimd::hadd(s0 + s1);
  for (; i < n; ++i) {
    g[i] = std::exp(x[i] - m);
    s += g[i];
  }
  const T inv = T(1) / s;
  const B vinv(inv);
  i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    (B::load_unaligned(g + i) * vinv).store_unaligned(g + i);
    (B::load_unaligned(g + i + W) * vinv).store_unaligned(g + i + W);
  }
  for (; i < n; ++i) g[i] *= inv;
  return m + std::log(s);
}

/// W3, xsimd, three passes, two exps per element (what a tape-free engine does):
/// (1) max; (2) s = sum exp(x - m); (3) g = exp(x - lse). Two reads and one write.
template <class T>
T w3_xsimd_recompute(const T* x, T* g, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  const T m = detail::w3_max(x, n);
  const B vm(m);
  B s0(T(0)), s1(T(0));
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    s0 = s0 + xsimd::exp(B::load_unaligned(x + i) - vm);
    s1 = s1 + xsimd::exp(B::load_unaligned(x + i + W) - vm);
  }
  for (; i + W <= n; i += W) s0 = s0 + xsimd::exp(B::load_unaligned(x + i) - vm);
  T s = xsimd::hadd(s0 + s1);
  for (; i < n; ++i) s += std::exp(x[i] - m);
  const T inv = T(1) / s;
  const B vinv(inv);
  i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    (xsimd::exp(B::load_unaligned(x + i) - vm) * vinv).store_unaligned(g + i);
    (xsimd::exp(B::load_unaligned(x + i + W) - vm) * vinv).store_unaligned(g + i + W);
  }
  for (; i + W <= n; i += W) (xsimd::exp(B::load_unaligned(x + i) - vm) * vinv).store_unaligned(g + i);
  for (; i < n; ++i) g[i] = std::exp(x[i] - m) * inv;
  return m + std::log(s);
}

/// W3, xsimd, two passes: (1) online per-lane max and sum, rescaling the sum only when a block
/// of 4 batches raises a lane's maximum; (2) g = exp(x - m) / s. Two exps per element, one
/// read pass fewer than w3_xsimd_recompute.
template <class T>
T w3_xsimd_online(const T* x, T* g, std::size_t n) {
  using B = batch<T>;
  constexpr std::size_t W = B::size;
  constexpr std::size_t K = 4;  // batches per block
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  B m(ninf), s(T(0));
  std::size_t i = 0;
  for (; i + K * W <= n; i += K * W) {
    const B x0 = B::load_unaligned(x + i), x1 = B::load_unaligned(x + i + W);
    const B x2 = B::load_unaligned(x + i + 2 * W), x3 = B::load_unaligned(x + i + 3 * W);
    const B bm = xsimd::max(xsimd::max(x0, x1), xsimd::max(x2, x3));
    if (xsimd::any(bm > m)) {  // rare once the maximum has been seen
      const B mn = xsimd::max(m, bm);
      // exp(m - mn) with m = mn = -inf would be NaN; the sum is 0 there anyway.
      s = xsimd::select(m == mn, s, s * xsimd::exp(m - mn));
      m = mn;
    }
    s = s + ((xsimd::exp(x0 - m) + xsimd::exp(x1 - m)) + (xsimd::exp(x2 - m) + xsimd::exp(x3 - m)));
  }
  // Merge the lanes, then the tail, each against the running maximum.
  alignas(B::arch_type::alignment()) T ml[W];
  alignas(B::arch_type::alignment()) T sl[W];
  m.store_aligned(ml);
  s.store_aligned(sl);
  T mm = ninf;
  for (std::size_t k = 0; k < W; ++k) mm = std::max(mm, ml[k]);
  for (std::size_t k = i; k < n; ++k) mm = std::max(mm, x[k]);
  const T shift = detail::finite_or_zero(mm);
  T ss = 0;
  for (std::size_t k = 0; k < W; ++k) ss += sl[k] == T(0) ? T(0) : sl[k] * std::exp(ml[k] - shift);
  for (std::size_t k = i; k < n; ++k) ss += std::exp(x[k] - shift);
  const T inv = T(1) / ss;
  const B vm(shift), vinv(inv);
  i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    (xsimd::exp(B::load_unaligned(x + i) - vm) * vinv).store_unaligned(g + i);
    (xsimd::exp(B::load_unaligned(x + i + W) - vm) * vinv).store_unaligned(g + i + W);
  }
  for (; i + W <= n; i += W) (xsimd::exp(B::load_unaligned(x + i) - vm) * vinv).store_unaligned(g + i);
  for (; i < n; ++i) g[i] = std::exp(x[i] - shift) * inv;
  return shift + std::log(ss);
}

// ---- W5: Rosenbrock in N scalars ----------------------------------------------------------
// f = sum_{i=0}^{N-2} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2

/// W5, hand-written value and gradient (fully unrolled for a compile-time N).
template <std::size_t N>
inline double rosenbrock(const std::array<double, N>& x, std::array<double, N>& g) {
  double f = 0;
  g.fill(0);
  for (std::size_t i = 0; i + 1 < N; ++i) {
    const double t = x[i + 1] - x[i] * x[i];
    const double u = 1 - x[i];
    f += 100 * t * t + u * u;
    g[i] += -400 * x[i] * t - 2 * u;
    g[i + 1] += 200 * t;
  }
  return f;
}

}  // namespace bench
