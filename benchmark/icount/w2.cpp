// bench.icount's W2 (icount.hpp: why one translation unit per workload).
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

int run_w2(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  const std::size_t n_small = runtime_n();
  if (w == "W2") {
    const w2_problem p(n_small);
    std::vector<double> gy(n_small);
    double gmu = 0, gsigma = 0;
    bench::w2_grads<double> gs{};
    const auto made = w2_expression(p);
    const auto& y = std::get<0>(made);
    const auto& mu = std::get<1>(made);
    const auto& sigma = std::get<2>(made);
    const auto& e = std::get<3>(made);
    auto tad_call = [&] {
      return tad::grad_into(e, tad::wrt(mu, gmu), tad::wrt(sigma, gsigma), tad::wrt(y, std::span<double>(gy)));
    };
    bench::expect_close("W2", tad_call(), bench::w2_xsimd(p.ys.data(), p.mu, p.sigma, gy.data(), gs, n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad_call()); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w2_xsimd(p.ys.data(), p.mu, p.sigma, gy.data(), gs, n_small)); });
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
