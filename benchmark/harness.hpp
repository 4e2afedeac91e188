#pragma once
/// Shared by the benchmarks: deterministic input data, the sizes every array workload runs
/// over, and the correctness check each benchmark performs once before it measures anything
/// (a benchmark that measures wrong code is worthless).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// N = 1e3, 1e4, ..., 1e7: from L1 to main memory.
inline void sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(10)->Range(1000, 10000000);
}

/// n values uniform in [lo, hi], the same for a given seed on every run.
template <class T>
std::vector<T> uniform(std::size_t n, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(d(rng));
  return v;
}

/// n values normal(mean, sd), the same for a given seed on every run.
template <class T>
std::vector<T> normal(std::size_t n, double mean, double sd, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(d(rng));
  return v;
}

/// Relative tolerance of the startup checks. Double: 1e-9. Float: 1e-5 for elementwise
/// gradients; 1e-3 for values, because a float sum of 10^7 terms in 16 float accumulators
/// (tad, and the xsimd baseline) is itself off by about 1.5e-4 from the exact sum.
template <class T>
struct tolerance {
  static constexpr double value = sizeof(T) == 8 ? 1e-9 : 1e-3;
  static constexpr double elementwise = sizeof(T) == 8 ? 1e-9 : 1e-5;
};

[[noreturn]] inline void fail(const std::string& msg) {
  std::fprintf(stderr, "\nbenchmark check FAILED: %s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

/// |got - want| <= rtol * max(|got|, |want|, floor). `floor` is the magnitude of the terms
/// that produce the number (1 for all workloads here): a gradient that cancels to nearly 0
/// is compared with the absolute error its terms allow, not relative to itself.
inline bool close(double got, double want, double rtol, double floor) {
  if (std::isnan(got) || std::isnan(want)) return false;
  return std::abs(got - want) <= rtol * std::max({std::abs(got), std::abs(want), floor});
}

/// Aborts unless the scalars agree.
inline void expect_close(const std::string& what, double got, double want, double rtol, double floor = 1) {
  if (!close(got, want, rtol, floor)) {
    char buf[256];
    std::snprintf(buf, sizeof buf, ": got %.17g, want %.17g (rel. tolerance %g)", got, want, rtol);
    fail(what + buf);
  }
}

/// Aborts unless the arrays agree elementwise.
template <class T>
void expect_close(const std::string& what, std::span<const T> got, std::span<const T> want, double rtol,
                  double floor = 1) {
  if (got.size() != want.size()) fail(what + ": lengths differ");
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], rtol, floor)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "[%zu]: got %.17g, want %.17g (rel. tolerance %g)", i,
                    static_cast<double>(got[i]), static_cast<double>(want[i]), rtol);
      fail(what + buf);
    }
  }
}

/// Runs `check` the first time `key` is seen in this process: each workload and size is
/// checked once, by whichever of its benchmarks runs first.
template <class F>
void check_once(const std::string& key, F&& check) {
  static std::set<std::string> done;
  if (done.insert(key).second) std::forward<F>(check)();
}

}  // namespace bench
