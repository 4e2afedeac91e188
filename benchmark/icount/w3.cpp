// bench.icount's W3 (icount.hpp: why one translation unit per workload).
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

int run_w3(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  const std::size_t n_small = runtime_n();
  if (w == "W3") {
    const auto xs = bench::uniform<double>(n_small, -10.0, 10.0, 3);  // benchmark/w3_logsumexp.cpp's data
    std::vector<double> g(n_small);
    auto x = tad::var<"x">(xs);
    auto e = tad::logsumexp(x);
    bench::expect_close("W3", tad::grad_into(e, tad::wrt(x, std::span<double>(g))),
                        bench::w3_xsimd_store<double>(xs.data(), g.data(), n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(e, tad::wrt(x, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w3_xsimd_store<double>(xs.data(), g.data(), n_small)); });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
