// bench.icount's SMX (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../softmax.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

int run_smx(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  const std::size_t n_small = runtime_n();
  if (w == "SMX") {
    // benchmark/softmax.cpp's SMX at 1,024 x 10^3 (its larger size); baseline: SMX_xsimd, the
    // "store" loop per row (benchmark/softmax.hpp), the one doc/benchmarks.md's ratio is against.
    const std::size_t cols = n_small;
    const auto xs = bench::smx::smx_data(cols);
    const auto gs = bench::smx::smx_weights(cols);
    const auto made = bench::smx::smx_expression(xs, gs, cols);
    const auto& X = made.first;
    const auto& L = made.second;
    std::vector<double> g(bench::smx::rows * cols), gb(bench::smx::rows * cols);
    // Value and gradient against the counted baseline only (bench.softmax checks the others):
    // under callgrind each of these calls costs seconds.
    bench::expect_close("SMX value", tad::grad_into(L, tad::wrt(X, std::span<double>(g))),
                        bench::smx::per_row(bench::smx::smx_xsimd_store, xs.data(), gs.data(), gb.data(), cols), tol);
    bench::expect_close<double>("SMX gradient", g, gb, tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(L, tad::wrt(X, std::span<double>(g)))); });
    else count(calls, [&](int) {
      benchmark::DoNotOptimize(bench::smx::per_row(bench::smx::smx_xsimd_store, xs.data(), gs.data(), g.data(), cols));
    });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
