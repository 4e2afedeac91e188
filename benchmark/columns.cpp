// Reductions down the columns (axis 0, issue 15), value and gradient, X a 1,024 x N matrix
// variable (double, values uniform in [-1, 1]; N the size argument):
//
//   CS (column sums, a vector parent):   L(X) = sum(square(sum(X, axis<0>) - t)),
//                                        dL/dX_rj = 2 (colsum_j - t_j)
//   CC (centering, a matrix parent):     L(X) = sum(square(X - mean(X, axis<0>))),
//                                        dL/dX_rj = 2 (X_rj - m_j)  (the centered column sums to 0)
//
// tad runs one loop over blocks of columns (engine::down_loop): per block, the sweep down its
// rows, the parent's code, the backward sweep. Baselines compute value and gradient analytically
// row by row with a buffer of N column sums (two passes over X; the gradient written once):
//   scalar   plain loops;   xsimd   the same in xsimd batches.
//   CM (CC on column-major data):        X given as tad::col_major(p, 1024, N) of the same
//                                        values stored by columns; tad reads each row of it as
//                                        gathers. Baselines: CC's, on the row-major storage (what
//                                        the layout costs against the fast hand loop).
// Ratios: benchmark/processes.py (CS, CC, CM); results: doc/log/benchmarks.md ("Columns").
#include "harness.hpp"

#include <tad/tad.hpp>

#include <benchmark/benchmark.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr std::size_t rows = 1024;
using batch = xsimd::batch<double>;
constexpr std::size_t W = batch::size;

std::vector<double> x_data(std::size_t cols) { return bench::uniform<double>(rows * cols, -1.0, 1.0, 43); }
std::vector<double> t_data(std::size_t cols) { return bench::uniform<double>(cols, -3.0, 3.0, 44); }

/// s[j] = sum_r x[r, j], row by row (each row once, contiguous).
template <bool Simd>
void column_sums(const double* x, std::size_t cols, std::vector<double>& s) {
  s.assign(cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = x + r * cols;
    std::size_t j = 0;
    if constexpr (Simd) {
      for (; j + W <= cols; j += W) (batch::load_unaligned(s.data() + j) + batch::load_unaligned(row + j)).store_unaligned(s.data() + j);
    }
    for (; j < cols; ++j) s[j] += row[j];
  }
}

template <bool Simd>
double cs_baseline(const double* x, const double* t, double* g, std::size_t cols, std::vector<double>& s) {
  column_sums<Simd>(x, cols, s);
  double value = 0;
  for (std::size_t j = 0; j < cols; ++j) {
    const double d = s[j] - t[j];
    value += d * d;
    s[j] = 2 * d;  // the gradient of every row
  }
  for (std::size_t r = 0; r < rows; ++r) {
    double* gr = g + r * cols;
    std::size_t j = 0;
    if constexpr (Simd) {
      for (; j + W <= cols; j += W) batch::load_unaligned(s.data() + j).store_unaligned(gr + j);
    }
    for (; j < cols; ++j) gr[j] = s[j];
  }
  return value;
}

template <bool Simd>
double cc_baseline(const double* x, const double*, double* g, std::size_t cols, std::vector<double>& s) {
  column_sums<Simd>(x, cols, s);
  for (double& v : s) v /= static_cast<double>(rows);  // the means
  double value = 0;
  batch acc(0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = x + r * cols;
    double* gr = g + r * cols;
    std::size_t j = 0;
    if constexpr (Simd) {
      for (; j + W <= cols; j += W) {
        const batch d = batch::load_unaligned(row + j) - batch::load_unaligned(s.data() + j);
        acc = xsimd::fma(d, d, acc);
        (d + d).store_unaligned(gr + j);
      }
    }
    for (; j < cols; ++j) {
      const double d = row[j] - s[j];
      value += d * d;
      gr[j] = 2 * d;
    }
  }
  return value + xsimd::hadd(acc);
}

/// The values of x_data(cols) stored column by column (CM's X).
std::vector<double> cm_storage;

using baseline_fn = double (*)(const double*, const double*, double*, std::size_t, std::vector<double>&);

auto cs_expression(const std::vector<double>& xs, const std::vector<double>& ts, std::size_t cols) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::square(tad::sum(X, tad::axis<0>) - tad::constant(ts)));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}
auto cc_expression(const std::vector<double>& xs, const std::vector<double>&, std::size_t cols) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::square(X - tad::mean(X, tad::axis<0>)));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}

auto cm_expression(const std::vector<double>& xs, const std::vector<double>&, std::size_t cols) {
  cm_storage.assign(rows * cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) cm_storage[j * rows + r] = xs[r * cols + j];
  auto X = tad::var<"X">(tad::col_major(cm_storage.data(), rows, cols));
  auto L = tad::sum(tad::square(X - tad::mean(X, tad::axis<0>)));
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);
  return std::pair{X, L};
}

/// tad's value and gradient must equal both baselines' before anything is timed.
template <class Make>
void check(const std::string& name, Make make, baseline_fn scalar, baseline_fn simd, std::size_t cols) {
  bench::check_once(name + "/" + std::to_string(cols), [&] {
    const auto xs = x_data(cols);
    const auto ts = t_data(cols);
    auto [X, L] = make(xs, ts, cols);
    std::vector<double> gt(rows * cols), s;
    const double vt = tad::grad_into(L, tad::wrt(X, std::span<double>(gt)));
    constexpr double tol = bench::tolerance<double>::value;
    for (auto [label, f] : {std::pair<const char*, baseline_fn>{"scalar", scalar}, {"xsimd", simd}}) {
      std::vector<double> gb(rows * cols);
      const double vb = f(xs.data(), ts.data(), gb.data(), cols, s);
      const std::string w = name + " (tad vs " + label + ") ";
      bench::expect_close(w + "value", vt, vb, tol, 1);
      bench::expect_close<double>(w + "gradient", gt, gb, tol, 1);
    }
  });
}

template <class Make>
void run_tad(benchmark::State& state, const std::string& name, Make make, baseline_fn scalar, baseline_fn simd) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  check(name, make, scalar, simd, cols);
  const auto xs = x_data(cols);
  const auto ts = t_data(cols);
  auto [X, L] = make(xs, ts, cols);  // built once
  std::vector<double> g(rows * cols);
  for (auto _ : state) {
    double v = tad::grad_into(L, tad::wrt(X, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

template <class Make>
void run_baseline(benchmark::State& state, const std::string& name, Make make, baseline_fn f, baseline_fn scalar,
                  baseline_fn simd) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  check(name, make, scalar, simd, cols);
  const auto xs = x_data(cols);
  const auto ts = t_data(cols);
  std::vector<double> g(rows * cols), s;
  s.reserve(cols);
  for (auto _ : state) {
    double v = f(xs.data(), ts.data(), g.data(), cols, s);
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows * cols));
}

constexpr auto cs_make = [](const auto& xs, const auto& ts, std::size_t c) { return cs_expression(xs, ts, c); };
constexpr auto cc_make = [](const auto& xs, const auto& ts, std::size_t c) { return cc_expression(xs, ts, c); };
constexpr auto cm_make = [](const auto& xs, const auto& ts, std::size_t c) { return cm_expression(xs, ts, c); };

void CS_tad(benchmark::State& s) { run_tad(s, "CS", cs_make, cs_baseline<false>, cs_baseline<true>); }
void CS_xsimd(benchmark::State& s) { run_baseline(s, "CS", cs_make, cs_baseline<true>, cs_baseline<false>, cs_baseline<true>); }
void CS_scalar(benchmark::State& s) { run_baseline(s, "CS", cs_make, cs_baseline<false>, cs_baseline<false>, cs_baseline<true>); }
void CC_tad(benchmark::State& s) { run_tad(s, "CC", cc_make, cc_baseline<false>, cc_baseline<true>); }
void CC_xsimd(benchmark::State& s) { run_baseline(s, "CC", cc_make, cc_baseline<true>, cc_baseline<false>, cc_baseline<true>); }
void CC_scalar(benchmark::State& s) { run_baseline(s, "CC", cc_make, cc_baseline<false>, cc_baseline<false>, cc_baseline<true>); }

void CM_tad(benchmark::State& s) { run_tad(s, "CM", cm_make, cc_baseline<false>, cc_baseline<true>); }
void CM_xsimd(benchmark::State& s) { run_baseline(s, "CM", cm_make, cc_baseline<true>, cc_baseline<false>, cc_baseline<true>); }
void CM_scalar(benchmark::State& s) { run_baseline(s, "CM", cm_make, cc_baseline<false>, cc_baseline<false>, cc_baseline<true>); }

void sizes(benchmark::internal::Benchmark* b) { b->Arg(100)->Arg(1000); }

}  // namespace

BENCHMARK(CS_tad)->Apply(sizes);
BENCHMARK(CS_xsimd)->Apply(sizes);
BENCHMARK(CS_scalar)->Apply(sizes);
BENCHMARK(CC_tad)->Apply(sizes);
BENCHMARK(CC_xsimd)->Apply(sizes);
BENCHMARK(CC_scalar)->Apply(sizes);
BENCHMARK(CM_tad)->Apply(sizes);
BENCHMARK(CM_xsimd)->Apply(sizes);
BENCHMARK(CM_scalar)->Apply(sizes);

BENCHMARK_MAIN();
