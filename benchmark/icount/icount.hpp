#pragma once
// The harness of bench.icount (doc/benchmarks.md, "Instruction counts"): `count` and the
// workloads' entry points, one translation unit each (w1.cpp ... fixed.cpp; icount.cpp holds
// main and the table).
//
// One translation unit per workload, because g++ decides inlining over a whole translation unit:
// when every workload shared one, adding a workload changed how the library code they share was
// compiled (xsimd's sine reduction moved W1's baseline by up to 10 % and W1's tad count by 3 %,
// with no change to either), and a guard that fails on an unrelated edit is not a guard. Now a
// workload's counts depend only on its own file and the headers it includes.
#include <benchmark/benchmark.h>
#include <valgrind/callgrind.h>

#include <cstddef>
#include <cstdio>
#include <string_view>

namespace bench::icount {

/// One uncounted call (what a first call does once, e.g. a program's workspace, is not a
/// per-call cost), then `calls` counted ones between two callgrind toggles. Not inlined into
/// the workload's function, so its loop is the same code whatever surrounds it.
template <class F>
[[gnu::noinline]] void count(int calls, F&& call) {
  call(0);
  CALLGRIND_TOGGLE_COLLECT;
  for (int i = 0; i < calls; ++i) {
    call(i);
    benchmark::ClobberMemory();
  }
  CALLGRIND_TOGGLE_COLLECT;
}

/// N = 10^3 at run time, as in the benchmarks (a constant N lets g++ specialize the loops, and
/// warn about their tails).
inline std::size_t runtime_n() {
  const volatile std::size_t n = 1000;
  return n;
}

/// The answer to a workload name or side that a workload's file does not have: 2.
inline int no_workload(std::string_view w, bool tad_side) {
  std::fprintf(stderr, "bench.icount: no workload '%.*s' with side '%s'\n", static_cast<int>(w.size()), w.data(),
               tad_side ? "tad" : "base");
  return 2;
}

// Each runs workload w (one of its file's), tad's call or the baseline's, `calls` times
// counted; 0, or 2 for an unknown name or side.
int run_w1(std::string_view w, bool tad_side, int calls);
int run_w2(std::string_view w, bool tad_side, int calls);
int run_w3(std::string_view w, bool tad_side, int calls);
int run_w4(std::string_view w, bool tad_side, int calls);
int run_w5(std::string_view w, bool tad_side, int calls);
int run_lr(std::string_view w, bool tad_side, int calls);
int run_smx(std::string_view w, bool tad_side, int calls);
int run_mlp(std::string_view w, bool tad_side, int calls);
int run_sq(std::string_view w, bool tad_side, int calls);
int run_rnn(std::string_view w, bool tad_side, int calls);
int run_fixed(std::string_view w, bool tad_side, int calls);

}  // namespace bench::icount
