#pragma once
/// The LR workload (doc/benchmarks.md "LR"), shared by bench.logreg (against hand-written
/// loops, benchmark/logreg.cpp) and the opt-in bench.torch (against libtorch,
/// benchmark/torch/torch.cpp): the data, tad's expression and tad's timed loop, so both
/// binaries time the same tad code on the same data.
#include "harness.hpp"

#include <tad/tad.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace bench::lr {

inline constexpr std::size_t features = 32;

struct lr_problem {
  std::size_t rows;
  std::vector<double> xs, ys, ws;
  /// x uniform in [-1, 1], w in [-0.5, 0.5], labels from a noisy linear rule: z is O(1).
  explicit lr_problem(std::size_t n)
      : rows(n), xs(bench::uniform<double>(n * features, -1.0, 1.0, 31)), ys(n),
        ws(bench::uniform<double>(features, -0.5, 0.5, 32)) {
    const std::vector<double> noise = bench::normal<double>(n, 0.0, 0.5, 33);
    for (std::size_t r = 0; r < n; ++r) {
      double z = 0;
      for (std::size_t j = 0; j < features; ++j) z += xs[r * features + j] * (j % 3 == 0 ? 0.4 : -0.2);
      ys[r] = z + noise[r] > 0 ? 1.0 : 0.0;
    }
  }
};

/// The loss over pr's data. Returns (w, L).
inline auto lr_expression(const lr_problem& pr) {
  auto w = tad::var<"w">(pr.ws);
  auto X = tad::constant(pr.xs.data(), pr.rows, features);
  auto y = tad::constant(pr.ys);
  const auto z = tad::let<"z">(tad::sum(X * w, tad::axis<1>));
  auto L = tad::mean(tad::softplus(z) - y * z);
  static_assert(tad::passes_v<decltype(L), decltype(w)> == 1);
  return std::pair{w, L};
}

/// The timed loop of LR_tad at N = state.range(0): value and gradient per iteration.
inline void tad_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const lr_problem pr(n);
  std::vector<double> g(features);
  auto [w, L] = lr_expression(pr);
  for (auto _ : state) {
    double v = tad::grad_into(L, tad::wrt(w, std::span<double>(g)));
    benchmark::DoNotOptimize(v);
    benchmark::DoNotOptimize(g.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n * features));
}

}  // namespace bench::lr
