// bench.icount's SQ4 (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../products.hpp"
#include <tad/linalg.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

int run_sq(std::string_view w, bool tad_side, int calls) {
  if (w == "SQ4") {
    // benchmark/products.cpp's SQ at n = 4: a program call whose products are tiny, so its
    // fixed cost shows. Baseline: SQ_eigen, the same by hand with Eigen (benchmark/products.hpp).
    constexpr std::size_t n = 4;
    bench::sq::check(n);
    bench::sq::data d{n};
    if (tad_side) {
      const auto made = bench::sq::tad_sq(d);
      const auto& A = std::get<1>(made);
      const auto& B = std::get<2>(made);
      const tad::program p(std::get<0>(made));
      count(calls, [&](int) { benchmark::DoNotOptimize(p.grad_into(tad::wrt(A, d.ga), tad::wrt(B, d.gb))); });
    } else {
      bench::sq::eigen_sq e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
