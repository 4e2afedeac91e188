// PEN: a data term plus penalties on two differently sized parameters (issue 15: "a data term
// plus penalties on two differently sized parameters", target <= 1.10 against the xsimd loop):
//
//   L(p, q) = 0.5 * sum(square(p * x - y)) + 0.01 * squared_norm(p) + 0.1 * squared_norm(q - t)
//
// p, x, y of length N (the benchmark's size argument), q, t of length M = max(N / 100, 1); the
// gradient w.r.t. the arrays p and q; x, y, t are constants. In double (PEN_*) and float (PENf_*).
// Analytically, with r_i = p_i x_i - y_i and d_j = q_j - t_j:
//   L       = 0.5 sum r_i^2 + 0.01 sum p_i^2 + 0.1 sum d_j^2
//   dL/dp_i = r_i x_i + 0.02 p_i
//   dL/dq_j = 0.2 d_j
// Baselines (the conventions of benchmark/baselines.hpp): a scalar loop and an xsimd loop, each
// one fused pass over p's arrays (both sums and dL/dp) and one over q's (its sum and dL/dq).
// Ratios: benchmark/processes.py (PEN, PENf); results: doc/log/benchmarks.md ("PEN").
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr double c_data = 0.5, c_p = 0.01, c_q = 0.1;

/// M, the length of q and t, for p's length N.
std::size_t q_length(std::size_t n) { return std::max<std::size_t>(n / 100, 1); }

template <class T>
struct pen_problem {
  std::vector<T> ps, xs, ys, qs, ts;
  /// x, p uniform in [-1, 1], y = 0.7 x + 0.1 + N(0, 0.1), q uniform in [-2, 2], t in [-1, 1]:
  /// every term and gradient is O(1), none cancels to 0.
  explicit pen_problem(std::size_t n)
      : ps(bench::uniform<T>(n, -1.0, 1.0, 11)), xs(bench::uniform<T>(n, -1.0, 1.0, 12)),
        ys(bench::normal<T>(n, 0.0, 0.1, 13)), qs(bench::uniform<T>(q_length(n), -2.0, 2.0, 14)),
        ts(bench::uniform<T>(q_length(n), -1.0, 1.0, 15)) {
    for (std::size_t i = 0; i < n; ++i) ys[i] += static_cast<T>(0.7 * static_cast<double>(xs[i]) + 0.1);
  }
};

// ---- baselines ------------------------------------------------------------------------------

/// Plain scalar loops; float accumulates in double (as W1's scalar float baseline).
template <class T>
T pen_scalar(const pen_problem<T>& pr, T* gp, T* gq) {
  using A = std::conditional_t<sizeof(T) == 4, double, T>;
  const std::size_t n = pr.ps.size(), m = pr.qs.size();
  const T* p = pr.ps.data();
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* q = pr.qs.data();
  const T* t = pr.ts.data();
  const T two_cp = static_cast<T>(2 * c_p), two_cq = static_cast<T>(2 * c_q);
  A sr = 0, sp = 0, sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T r = p[i] * x[i] - y[i];
    sr += r * r;
    sp += p[i] * p[i];
    gp[i] = r * x[i] + two_cp * p[i];
  }
  for (std::size_t j = 0; j < m; ++j) {
    const T d = q[j] - t[j];
    sq += d * d;
    gq[j] = two_cq * d;
  }
  return static_cast<T>(c_data * static_cast<double>(sr) + c_p * static_cast<double>(sp) +
                        c_q * static_cast<double>(sq));
}

/// xsimd: per array one fused loop, unroll 2 with 2 accumulators per sum, a batch tail, a
/// scalar tail; the coefficients are splatted once.
template <class T>
T pen_xsimd(const pen_problem<T>& pr, T* gp, T* gq) {
  using B = xsimd::batch<T>;
  constexpr std::size_t W = B::size;
  const std::size_t n = pr.ps.size(), m = pr.qs.size();
  const T* p = pr.ps.data();
  const T* x = pr.xs.data();
  const T* y = pr.ys.data();
  const T* q = pr.qs.data();
  const T* t = pr.ts.data();
  const T two_cp = static_cast<T>(2 * c_p), two_cq = static_cast<T>(2 * c_q);
  const B vcp(two_cp), vcq(two_cq);

  // Pass over p, x, y: sum r^2, sum p^2, dL/dp.
  B sr0(T(0)), sr1(T(0)), sp0(T(0)), sp1(T(0));
  auto elem_p = [&](std::size_t k, B& sr, B& sp) {
    const B pv = B::load_unaligned(p + k), xv = B::load_unaligned(x + k);
    const B r = xsimd::fms(pv, xv, B::load_unaligned(y + k));
    sr = xsimd::fma(r, r, sr);
    sp = xsimd::fma(pv, pv, sp);
    xsimd::fma(r, xv, vcp * pv).store_unaligned(gp + k);
  };
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    elem_p(i, sr0, sp0);
    elem_p(i + W, sr1, sp1);
  }
  for (; i + W <= n; i += W) elem_p(i, sr0, sp0);
  T sr = xsimd::hadd(sr0 + sr1), sp = xsimd::hadd(sp0 + sp1);
  for (; i < n; ++i) {
    const T r = p[i] * x[i] - y[i];
    sr += r * r;
    sp += p[i] * p[i];
    gp[i] = r * x[i] + two_cp * p[i];
  }

  // Pass over q, t: sum d^2, dL/dq.
  B sq0(T(0)), sq1(T(0));
  auto elem_q = [&](std::size_t k, B& sq) {
    const B d = B::load_unaligned(q + k) - B::load_unaligned(t + k);
    sq = xsimd::fma(d, d, sq);
    (vcq * d).store_unaligned(gq + k);
  };
  std::size_t j = 0;
  for (; j + 2 * W <= m; j += 2 * W) {
    elem_q(j, sq0);
    elem_q(j + W, sq1);
  }
  for (; j + W <= m; j += W) elem_q(j, sq0);
  T sq = xsimd::hadd(sq0 + sq1);
  for (; j < m; ++j) {
    const T d = q[j] - t[j];
    sq += d * d;
    gq[j] = two_cq * d;
  }
  return static_cast<T>(c_data) * sr + static_cast<T>(c_p) * sp + static_cast<T>(c_q) * sq;
}

// ---- tad ------------------------------------------------------------------------------------

/// The expression over pr's data. Returns (p, q, e).
template <class T>
auto pen_expression(const pen_problem<T>& pr) {
  auto p = tad::var<"p">(pr.ps);
  auto q = tad::var<"q">(pr.qs);
  auto x = tad::constant(pr.xs);
  auto y = tad::constant(pr.ys);
  auto t = tad::constant(pr.ts);
  auto e = c_data * tad::sum(tad::square(p * x - y)) + c_p * tad::squared_norm(p) + c_q * tad::squared_norm(q - t);
  return std::tuple{p, q, e};
}

template <class T>
using pen_fn = T (*)(const pen_problem<T>&, T*, T*);

/// tad's value and both gradients must equal both baselines' before anything is timed.
template <class T>
void pen_check(const char* workload, std::size_t n) {
  bench::check_once(std::string(workload) + "/" + std::to_string(n), [&] {
    const pen_problem<T> pr(n);
    const std::size_t m = pr.qs.size();
    auto [p, q, e] = pen_expression(pr);
    std::vector<T> gp(n), gq(m);
    const T v = tad::grad_into(e, tad::wrt(p, std::span<T>(gp)), tad::wrt(q, std::span<T>(gq)));
    constexpr double tv = bench::tolerance<T>::value, tg = bench::tolerance<T>::elementwise;
    for (auto [name, f] : {std::pair<const char*, pen_fn<T>>{"scalar", pen_scalar<T>}, {"xsimd", pen_xsimd<T>}}) {
      std::vector<T> bp(n), bq(m);
      const T bv = f(pr, bp.data(), bq.data());
      const std::string s = std::string(workload) + " (tad vs " + name + ") ";
      bench::expect_close(s + "value", v, bv, tv);
      bench::expect_close<T>(s + "d/dp", gp, bp, tg);
      bench::expect_close<T>(s + "d/dq", gq, bq, tg);
    }
  });
}

template <class T>
void pen_tad(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  pen_check<T>(workload, n);
  const pen_problem<T> pr(n);
  std::vector<T> gp(n), gq(pr.qs.size());
  auto [p, q, e] = pen_expression(pr);  // built once; the leaves view pr
  for (auto _ : state) {
    T v = tad::grad_into(e, tad::wrt(p, std::span<T>(gp)), tad::wrt(q, std::span<T>(gq)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gp.data());
    benchmark::DoNotOptimize(gq.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n + pr.qs.size()));
}

template <class T, pen_fn<T> F>
void pen_baseline(benchmark::State& state, const char* workload) {
  const auto n = static_cast<std::size_t>(state.range(0));
  pen_check<T>(workload, n);
  const pen_problem<T> pr(n);
  std::vector<T> gp(n), gq(pr.qs.size());
  for (auto _ : state) {
    T v = F(pr, gp.data(), gq.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gp.data());
    benchmark::DoNotOptimize(gq.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n + pr.qs.size()));
}

void PEN_tad(benchmark::State& s) { pen_tad<double>(s, "PEN"); }
void PEN_xsimd(benchmark::State& s) { pen_baseline<double, pen_xsimd<double>>(s, "PEN"); }
void PEN_scalar(benchmark::State& s) { pen_baseline<double, pen_scalar<double>>(s, "PEN"); }
void PENf_tad(benchmark::State& s) { pen_tad<float>(s, "PENf"); }
void PENf_xsimd(benchmark::State& s) { pen_baseline<float, pen_xsimd<float>>(s, "PENf"); }
void PENf_scalar(benchmark::State& s) { pen_baseline<float, pen_scalar<float>>(s, "PENf"); }

}  // namespace

BENCHMARK(PEN_tad)->Apply(bench::sizes);
BENCHMARK(PEN_xsimd)->Apply(bench::sizes);
BENCHMARK(PEN_scalar)->Apply(bench::sizes);
BENCHMARK(PENf_tad)->Apply(bench::sizes);
BENCHMARK(PENf_xsimd)->Apply(bench::sizes);
BENCHMARK(PENf_scalar)->Apply(bench::sizes);

BENCHMARK_MAIN();
