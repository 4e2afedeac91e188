// T1: one training update of N float parameters: clip_by_global_norm(1) then Adam, as tad's
// pipeline (chain + adam::apply_gradients) against a hand-written xsimd loop and a scalar loop
// doing the same (norm pass, then one fused pass: scale, moments, bias-corrected update).
// The gradient is given (not computed), so this measures the transform and the update.
// Ratios: benchmark/ratios.py; results: doc/log/benchmarks.md.
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, clip = 1.0;

/// Hand-written state: parameters, moments, step.
struct hand_state {
  std::vector<float> p, m, v;
  std::size_t t = 0;
};

/// One step, xsimd: the global norm (2 accumulators), then one pass that scales g in registers
/// and updates m, v, p. Bias corrections in double, as tad.
void step_xsimd(hand_state& s, const float* g, std::size_t n) {
  using B = xsimd::batch<float>;
  constexpr std::size_t W = B::size;
  B a0(0.f), a1(0.f);
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const B x = B::load_unaligned(g + i), y = B::load_unaligned(g + i + W);
    a0 = xsimd::fma(x, x, a0);
    a1 = xsimd::fma(y, y, a1);
  }
  for (; i + W <= n; i += W) {
    const B x = B::load_unaligned(g + i);
    a0 = xsimd::fma(x, x, a0);
  }
  double ss = xsimd::hadd(a0 + a1);
  for (; i < n; ++i) ss += double(g[i]) * double(g[i]);
  const double G = std::sqrt(ss);
  const float sc = !std::isfinite(G) ? NAN : G > clip ? float(clip / G) : 1.f;
  const double t = double(++s.t);
  const float c1 = float(1 / (1 - std::pow(b1, t))), c2 = float(1 / (1 - std::pow(b2, t)));
  const auto splat = [](float x) { return B(x); };  // (B{x} would be a one-lane initializer list)
  const B vb1 = splat(float(b1)), vb2 = splat(float(b2)), va1 = splat(float(1 - b1)), va2 = splat(float(1 - b2));
  const B vlr = splat(float(lr)), vc1 = splat(c1), vc2 = splat(c2), veps = splat(float(eps)), vsc = splat(sc);
  float* p = s.p.data();
  float* m = s.m.data();
  float* v = s.v.data();
  for (i = 0; i + W <= n; i += W) {
    const B gv = B::load_unaligned(g + i) * vsc;
    const B mv = vb1 * B::load_unaligned(m + i) + va1 * gv;
    const B vv = vb2 * B::load_unaligned(v + i) + va2 * (gv * gv);
    mv.store_unaligned(m + i);
    vv.store_unaligned(v + i);
    (B::load_unaligned(p + i) - vlr * (mv * vc1) / (xsimd::sqrt(vv * vc2) + veps)).store_unaligned(p + i);
  }
  for (; i < n; ++i) {
    const float gv = g[i] * sc;
    m[i] = float(b1) * m[i] + float(1 - b1) * gv;
    v[i] = float(b2) * v[i] + float(1 - b2) * (gv * gv);
    p[i] = p[i] - float(lr) * (m[i] * c1) / (std::sqrt(v[i] * c2) + float(eps));
  }
}

/// One step, plain scalar loops.
void step_scalar(hand_state& s, const float* g, std::size_t n) {
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += double(g[i]) * double(g[i]);
  const double G = std::sqrt(ss);
  const float sc = !std::isfinite(G) ? NAN : G > clip ? float(clip / G) : 1.f;
  const double t = double(++s.t);
  const float c1 = float(1 / (1 - std::pow(b1, t))), c2 = float(1 / (1 - std::pow(b2, t)));
  for (std::size_t i = 0; i < n; ++i) {
    const float gv = g[i] * sc;
    s.m[i] = float(b1) * s.m[i] + float(1 - b1) * gv;
    s.v[i] = float(b2) * s.v[i] + float(1 - b2) * (gv * gv);
    s.p[i] = s.p[i] - float(lr) * (s.m[i] * c1) / (std::sqrt(s.v[i] * c2) + float(eps));
  }
}

/// tad's pipeline on the same data: parameters p, a gradient set filled with g.
struct tad_state {
  std::vector<float> p;
  tad::array_var<"p", float> var;
  tad::parameter_set<tad::array_var<"p", float>> params;
  tad::gradient_set<float> grads;
  tad::chain<tad::clip_by_global_norm> transform{tad::clip_by_global_norm(clip)};
  tad::adam<float, double> opt;
  tad_state(const std::vector<float>& p0, const std::vector<float>& g)
      : p(p0), var(tad::var<"p">(p)), params(var), grads(params), opt(params, lr, {.beta1 = b1, .beta2 = b2, .eps = eps}) {
    std::copy(g.begin(), g.end(), grads.raw(0).begin());
  }
  void step() {
    grads.reset_scale();  // as compute_gradients would: a fresh gradient each step
    if (transform.update(grads, params) == tad::step_action::apply) opt.apply_gradients(params, grads);
  }
};

void check(std::size_t n) {
  bench::check_once("T1/" + std::to_string(n), [&] {
    const auto p0 = bench::uniform<float>(n, -1, 1, 1);
    const auto g = bench::uniform<float>(n, -1, 1, 2);
    tad_state ts(p0, g);
    hand_state hx{p0, std::vector<float>(n), std::vector<float>(n)}, hs = hx;
    for (int k = 0; k < 3; ++k) {
      ts.step();
      step_xsimd(hx, g.data(), n);
      step_scalar(hs, g.data(), n);
    }
    constexpr double tol = 1e-5;
    bench::expect_close<float>("T1 parameters: tad vs xsimd", ts.p, hx.p, tol);
    bench::expect_close<float>("T1 parameters: tad vs scalar", ts.p, hs.p, tol);
  });
}

void T1_tad(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  check(n);
  tad_state ts(bench::uniform<float>(n, -1, 1, 1), bench::uniform<float>(n, -1, 1, 2));
  for (auto _ : state) {
    ts.step();
    benchmark::DoNotOptimize(ts.p.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <void (*F)(hand_state&, const float*, std::size_t)>
void T1_hand(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  check(n);
  hand_state hs{bench::uniform<float>(n, -1, 1, 1), std::vector<float>(n), std::vector<float>(n)};
  const auto g = bench::uniform<float>(n, -1, 1, 2);
  for (auto _ : state) {
    F(hs, g.data(), n);
    benchmark::DoNotOptimize(hs.p.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void T1_xsimd(benchmark::State& s) { T1_hand<step_xsimd>(s); }
void T1_scalar(benchmark::State& s) { T1_hand<step_scalar>(s); }

void t1_sizes(benchmark::internal::Benchmark* b) { b->RangeMultiplier(10)->Range(10000, 1000000); }

}  // namespace

BENCHMARK(T1_tad)->Apply(t1_sizes);
BENCHMARK(T1_xsimd)->Apply(t1_sizes);
BENCHMARK(T1_scalar)->Apply(t1_sizes);

BENCHMARK_MAIN();
