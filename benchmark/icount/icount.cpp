// Instruction counts per call, for tools/icount.py (doc/benchmarks.md, "Instruction counts"):
//
//   valgrind --tool=callgrind --collect-atstart=no bench.icount <workload> <tad|base> <calls>
//
// runs one workload's call `calls` times between two callgrind toggles, after one call that is
// not counted (what a first call does once, e.g. a program's workspace, is not a per-call cost),
// so callgrind's total is exactly `calls` calls. The loops are the benchmarks' (benchmark/w*.cpp,
// logreg.hpp, softmax.hpp, mlp.hpp, products.hpp), on the same data; before counting, tad's value
// is checked against the baseline's where the workload has one here ("base"; LR, MLP and SQ4 run
// their benchmark's check, value and gradients against every baseline it has). Built with fixed
// flags (-O3 -mavx2 -mfma, benchmark/icount/CMakeLists.txt), so the counts do not depend on the
// machine. Without valgrind it just runs (the toggles do nothing). Each workload is a
// translation unit of its own (icount.hpp says why); this one holds main and the table.
#include "icount.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

using bench::icount::no_workload;

struct entry {
  std::string_view prefix;  // the workloads whose names start with it
  int (*run)(std::string_view, bool, int);
};
// W5 before W5tuple and W5lit: the first entry whose prefix starts the name runs it.
constexpr entry workloads[] = {
    {"W1", bench::icount::run_w1},   {"W2", bench::icount::run_w2},   {"W3", bench::icount::run_w3},
    {"W4", bench::icount::run_w4},   {"W5", bench::icount::run_w5},   {"LR", bench::icount::run_lr},
    {"SMX", bench::icount::run_smx}, {"MLP", bench::icount::run_mlp}, {"SQ4", bench::icount::run_sq},
    {"RNN", bench::icount::run_rnn}, {"SCAN", bench::icount::run_rnn}, {"F_", bench::icount::run_fixed},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bench.icount <workload> <tad|base> <calls>\n");
    return 2;
  }
  const std::string_view side = argv[2];
  if (side != "tad" && side != "base") {
    std::fprintf(stderr, "bench.icount: side must be tad or base, not '%s'\n", argv[2]);
    return 2;
  }
  const std::string_view w = argv[1];
  for (const entry& e : workloads)
    if (w.starts_with(e.prefix)) return e.run(w, side == "tad", std::atoi(argv[3]));
  return no_workload(w, side == "tad");
}
