// bench.icount's LR (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../logreg.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

int run_lr(std::string_view w, bool tad_side, int calls) {
  const std::size_t n_small = runtime_n();
  if (w == "LR") {
    // Baseline: LR_xsimd (benchmark/logreg.hpp), the one doc/benchmarks.md's LR ratio is against.
    bench::lr::check(n_small);
    const bench::lr::lr_problem pr(n_small);
    std::vector<double> g(bench::lr::features);
    const auto made = bench::lr::lr_expression(pr);
    const auto& wv = made.first;
    const auto& L = made.second;
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(L, tad::wrt(wv, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::lr::lr_xsimd(pr, g.data())); });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
