// bench.icount's RNN and SCAN (icount.hpp: why one translation unit per workload): the RNN
// training step through tad::scan (benchmark/rnn.hpp, float, as RNNf) against BPTT by hand
// with Eigen; SCAN, the tiny scan of 64 steps whose cost is mostly tad's per step, against
// scalar loops by hand.
#include "icount.hpp"

#include "../rnn.hpp"
#include <tad/linalg.hpp>

#include <string_view>
#include <tuple>

namespace bench::icount {

int run_rnn(std::string_view w, bool tad_side, int calls) {
  if (w == "RNN") {
    bench::rnn::check<float>();
    bench::rnn::data<float> d;
    if (tad_side) {
      const auto made = bench::rnn::tad_loss(d);
      const auto& [loss, W, U, B, V, C] = made;
      const tad::program p(loss);
      // clang++ 14 cannot capture a structured binding by name: init-captures.
      count(calls, [&, &W = W, &U = U, &B = B, &V = V, &C = C](int) {
        benchmark::DoNotOptimize(
            p.grad_into(tad::wrt(W, d.gw), tad::wrt(U, d.gu), tad::wrt(B, d.gb), tad::wrt(V, d.gv), tad::wrt(C, d.gc)));
      });
    } else {
      bench::rnn::eigen_rnn<float> e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else if (w == "SCAN") {
    namespace tiny = bench::rnn::tiny;
    tiny::check<double>();
    tiny::data<double> d;
    if (tad_side) {
      const auto made = tiny::tad_loss(d);
      const auto& [loss, W, U, B] = made;
      const tad::program p(loss);
      count(calls, [&, &W = W, &U = U, &B = B](int) {
        benchmark::DoNotOptimize(p.grad_into(tad::wrt(W, d.gw), tad::wrt(U, d.gu), tad::wrt(B, d.gb)));
      });
    } else {
      tiny::by_hand<double> e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
