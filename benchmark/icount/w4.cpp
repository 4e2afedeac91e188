// bench.icount's W4 (icount.hpp: why one translation unit per workload).
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

int run_w4(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  const std::size_t n_small = runtime_n();
  if (w == "W4") {
    const w4_problem<double> p(n_small);
    double gw = 0, gb = 0;
    w4_grads<double> g{};
    const auto made = w4_expression(p);
    const auto& wv = std::get<0>(made);
    const auto& b = std::get<1>(made);
    const auto& e = std::get<2>(made);
    auto tad_call = [&] { return tad::grad_into(e, tad::wrt(wv, gw), tad::wrt(b, gb)); };
    auto base_call = [&] { return w4_xsimd(p.xs.data(), p.ys.data(), p.w, p.b, p.lo, p.hi, g, n_small); };
    bench::expect_close("W4", tad_call(), base_call(), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad_call()); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(base_call()); });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
