// bench.icount's W1 (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../workloads.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

using namespace bench::work;

int run_w1(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  const std::size_t n_small = runtime_n();
  if (w == "W1") {
    const auto xs = w1_data<double>(n_small);
    std::vector<double> g(n_small), gb(n_small);
    const auto made = w1_expression(xs);  // (no structured bindings: clang 14 cannot capture them)
    const auto& x = made.first;
    const auto& e = made.second;
    bench::expect_close("W1", tad::grad_into(e, tad::wrt(x, std::span<double>(g))),
                        bench::w1_xsimd(xs.data(), gb.data(), n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(e, tad::wrt(x, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w1_xsimd(xs.data(), g.data(), n_small)); });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
