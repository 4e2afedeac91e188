// bench.icount's MLP (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../mlp.hpp"
#include <tad/linalg.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

int run_mlp(std::string_view w, bool tad_side, int calls) {
  if (w == "MLP") {
    // Float, as MLPf; baseline: MLPf_eigen, the step by hand with Eigen (benchmark/mlp.hpp).
    bench::mlp::check<float>();
    bench::mlp::data<float> d;
    if (tad_side) {
      const auto made = bench::mlp::tad_loss(d);
      const auto& W1 = std::get<1>(made);
      const auto& B1 = std::get<2>(made);
      const auto& W2 = std::get<3>(made);
      const auto& B2 = std::get<4>(made);
      const tad::program p(std::get<0>(made));
      count(calls, [&](int) {
        benchmark::DoNotOptimize(p.grad_into(tad::wrt(W1, d.g1), tad::wrt(B1, d.gb1), tad::wrt(W2, d.g2), tad::wrt(B2, d.gb2)));
      });
    } else {
      bench::mlp::eigen_mlp<float> e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
