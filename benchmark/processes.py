#!/usr/bin/env python3
"""tad / baseline over many processes: the median of per-process ratios.

Usage:
  python3 benchmark/processes.py build/bench/benchmark/bench.surgery CG 100000 \\
      [--tad tad] [--baseline xsimd] [--processes 16] [--repetitions 5] [--target 1.05]

Why: on the shared machines this project runs on, one benchmark process gives a tad / baseline
ratio that is stable inside the process (repetitions agree to about 1 %) but differs from the
next process's by up to 15 % (CG: 1.05 in one process, 1.20 in the next, same binary, same
machine, even with address randomization off and pinned to one core). A single run's ratio is
then one draw from that spread. This script starts the binary `--processes` times, each time
timing only `<workload>_<tad>/<N>` and `<workload>_<baseline>/<N>` (`--repetitions` each,
randomly interleaved, 0.05 s minimum per repetition), takes the ratio of the two medians of
CPU time, and reports the median, the quartiles and every ratio. With --target it exits 1 when
the median ratio is above the target.

Python 3 standard library only; doc/log/benchmarks.md says which targets were checked this way.
"""

import argparse
import json
import statistics
import subprocess
import sys


def one_process(binary, workload, tad, baseline, n, repetitions):
    names = [f"{workload}_{v}" + ("" if n == "-" else f"/{n}") for v in (tad, baseline)]
    cmd = [binary, f"--benchmark_filter=^({'|'.join(names)})$",
           f"--benchmark_repetitions={repetitions}", "--benchmark_min_time=0.05",
           "--benchmark_enable_random_interleaving=true", "--benchmark_format=json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    times = {name: [] for name in names}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") == "iteration" and b["run_name"] in times:
            times[b["run_name"]].append(b["cpu_time"])
    for name, t in times.items():
        if not t:
            sys.exit(f"processes.py: {binary} has no benchmark {name}")
    return statistics.median(times[names[0]]) / statistics.median(times[names[1]])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("workload", help="e.g. CG, W3, T1")
    ap.add_argument("n", help="the size argument, e.g. 100000; - for a benchmark without one (W5, FIXED)")
    ap.add_argument("--tad", default="tad", help="tad's variant (default tad)")
    ap.add_argument("--baseline", default="xsimd", help="the baseline variant (default xsimd)")
    ap.add_argument("--processes", type=int, default=16)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--target", type=float, help="exit 1 if the median ratio is above it")
    args = ap.parse_args()
    if args.processes < 1 or args.repetitions < 1:
        sys.exit("processes.py: --processes and --repetitions must be at least 1")

    ratios = sorted(one_process(args.binary, args.workload, args.tad, args.baseline, args.n, args.repetitions)
                    for _ in range(args.processes))
    med = statistics.median(ratios)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [med, med, med]
    label = f"{args.workload}_{args.tad} / {args.workload}_{args.baseline} at N = {args.n}"
    print(f"{label}: median {med:.3f}, quartiles {q[0]:.3f} - {q[2]:.3f}, "
          f"range {ratios[0]:.3f} - {ratios[-1]:.3f} ({args.processes} processes)")
    print("  every process:", " ".join(f"{r:.3f}" for r in ratios))
    if args.target is not None:
        met = med <= args.target
        print(f"  target {args.target:.2f}: {'met' if met else 'NOT met'}")
        return 0 if met else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
