// A custom gradient with two outputs against hand-written loops (doc/benchmarks.md, "Several
// outputs").
//
// CO: points in polar coordinates fitted to targets, examples/polar_fit.cpp's loss:
//     (x, y) = polar(r, th) = (r cos th, r sin th), one rule for both outputs that clips each
//     point's (dx, dy) to norm 0.5 (reading cos th and sin th from x / r and y / r); loss = sum((x - X)^2) + sum((y - Y)^2); gradient w.r.t. the
//     arrays r and th, through a tad::program built once (CO_tad). Baselines in the same run: a
//     scalar loop (std::) and an xsimd loop, each one pass computing x, y, the loss terms, the
//     clipped adjoints and dr, dth. Diagnostic: CO_tadplain, the same loss written with plain
//     tad ops (r * cos(th), ...: the true derivative, no clip; one fused loop), what the stage
//     path costs against the fused one.
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace {

using B = xsimd::batch<double>;
constexpr std::size_t W = B::size;
constexpr double clip = 0.5;

struct data {
  std::vector<double> r, th, tx, ty;
  explicit data(std::size_t n)
      : r(bench::uniform<double>(n, 0.5, 2.0, 11)), th(bench::uniform<double>(n, -3.0, 3.0, 12)),
        tx(bench::uniform<double>(n, -2.0, 2.0, 13)), ty(bench::uniform<double>(n, -2.0, 2.0, 14)) {}
};

/// One element: its loss term, dr and dth.
inline double co_scalar_elem(double r, double th, double tx, double ty, double& dr, double& dt) {
  const double c = std::cos(th), s = std::sin(th), ex = r * c - tx, ey = r * s - ty;
  double dx = 2 * ex, dy = 2 * ey;
  const double norm = std::sqrt(dx * dx + dy * dy);
  if (norm > clip) dx *= clip / norm, dy *= clip / norm;
  dr = dx * c + dy * s;
  dt = r * (dy * c - dx * s);
  return ex * ex + ey * ey;
}

double co_scalar(const data& d, double* gr, double* gt) {
  double acc = 0;
  for (std::size_t i = 0; i < d.r.size(); ++i) acc += co_scalar_elem(d.r[i], d.th[i], d.tx[i], d.ty[i], gr[i], gt[i]);
  return acc;
}

double co_xsimd(const data& d, double* gr, double* gt) {
  const std::size_t n = d.r.size();
  const B cl(clip), one(1.0), two(2.0);
  B acc(0.0);
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const B r = B::load_unaligned(d.r.data() + i), th = B::load_unaligned(d.th.data() + i);
    const B c = xsimd::cos(th), s = xsimd::sin(th);
    const B ex = r * c - B::load_unaligned(d.tx.data() + i), ey = r * s - B::load_unaligned(d.ty.data() + i);
    acc += ex * ex + ey * ey;
    const B dx = two * ex, dy = two * ey;
    const B norm = xsimd::sqrt(dx * dx + dy * dy);
    const B k = xsimd::select(norm > cl, cl / norm, one);
    const B cx = k * dx, cy = k * dy;
    (cx * c + cy * s).store_unaligned(gr + i);
    (r * (cy * c - cx * s)).store_unaligned(gt + i);
  }
  double total = xsimd::hadd(acc);
  for (; i < n; ++i) total += co_scalar_elem(d.r[i], d.th[i], d.tx[i], d.ty[i], gr[i], gt[i]);
  return total;
}

const auto polar = tad::custom_gradient(
    [](auto radius, auto angle) { return std::tuple{radius * tad::cos(angle), radius * tad::sin(angle)}; },
    // The rule reads cos and sin from the outputs (x / r, y / r) rather than computing them
    // again (r is never 0 here).
    [](auto dx, auto dy, auto radius, auto, auto x, auto y) {
      using V = decltype(dx);
      const V norm = tad::math::sqrt(dx * dx + dy * dy), c = tad::simd::splat<V>(clip);
      const V k = tad::simd::select(norm > c, c / norm, tad::simd::splat<V>(1.0));
      const V cx = k * dx, cy = k * dy;
      return tad::adjoints{(cx * x + cy * y) / radius, cy * x - cx * y};
    });

auto co_loss(const data& d) {
  auto [x, y] = polar(tad::var<"r">(d.r), tad::var<"th">(d.th));
  return tad::sum(tad::square(x - tad::constant(d.tx))) + tad::sum(tad::square(y - tad::constant(d.ty)));
}
auto co_plain(const data& d) {
  const auto r = tad::var<"r">(d.r);
  const auto th = tad::var<"th">(d.th);
  return tad::sum(tad::square(r * tad::cos(th) - tad::constant(d.tx))) +
         tad::sum(tad::square(r * tad::sin(th) - tad::constant(d.ty)));
}

/// tad against both loops, once per size (relative 1e-9).
void co_check(std::size_t n) {
  bench::check_once("CO/" + std::to_string(n), [&] {
    const data d(n);
    const tad::program p(co_loss(d));
    std::vector<double> gr(n), gt(n), br(n), bt(n);
    const double v = p.grad_into(tad::wrt(tad::var<"r">(d.r), gr), tad::wrt(tad::var<"th">(d.th), gt));
    constexpr double tol = bench::tolerance<double>::value;
    using fn = double (*)(const data&, double*, double*);
    for (const auto& [name, f] : {std::pair<const char*, fn>{"scalar", co_scalar}, std::pair<const char*, fn>{"xsimd", co_xsimd}}) {
      const double vb = f(d, br.data(), bt.data());
      bench::expect_close(std::string("CO (tad vs ") + name + ") value", v, vb, tol);
      bench::expect_close<double>(std::string("CO (tad vs ") + name + ") dr", gr, br, tol);
      bench::expect_close<double>(std::string("CO (tad vs ") + name + ") dth", gt, bt, tol);
    }
  });
}

void CO_tad(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  co_check(n);
  const data d(n);
  const tad::program p(co_loss(d));
  std::vector<double> gr(n), gt(n);
  const auto R = tad::var<"r">(d.r);
  const auto TH = tad::var<"th">(d.th);
  for (auto _ : state) {
    double v = p.grad_into(tad::wrt(R, gr), tad::wrt(TH, gt));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gr.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void CO_tadplain(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const data d(n);
  const auto e = co_plain(d);
  std::vector<double> gr(n), gt(n);
  const auto R = tad::var<"r">(d.r);
  const auto TH = tad::var<"th">(d.th);
  for (auto _ : state) {
    double v = tad::grad_into(e, tad::wrt(R, gr), tad::wrt(TH, gt));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gr.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <double (*F)(const data&, double*, double*)>
void co_baseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  co_check(n);
  const data d(n);
  std::vector<double> gr(n), gt(n);
  for (auto _ : state) {
    double v = F(d, gr.data(), gt.data());
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(gr.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
void CO_xsimd(benchmark::State& s) { co_baseline<co_xsimd>(s); }
void CO_scalar(benchmark::State& s) { co_baseline<co_scalar>(s); }

}  // namespace

BENCHMARK(CO_tad)->Apply(bench::sizes);
BENCHMARK(CO_xsimd)->Apply(bench::sizes);
BENCHMARK(CO_scalar)->Apply(bench::sizes);
BENCHMARK(CO_tadplain)->Apply(bench::sizes);

BENCHMARK_MAIN();
