// bench.icount's F_* (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../fixed_costs.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

using namespace bench::work;

int run_fixed(std::string_view w, bool tad_side, int calls) {
  if (w.starts_with("F_") && tad_side) {
    // The fixed cost of one entry point (benchmark/fixed_costs.hpp): F_grad, F_grad_into, ...
    fixed_problem p;
    if (!with_fixed_call(w.substr(2), p, [&](auto call) {
          count(calls, [&](int) {
            benchmark::DoNotOptimize(p.xs.data());
            benchmark::DoNotOptimize(call());
          });
        }))
      return 2;
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
