#!/usr/bin/env python3
"""Instructions per call of every workload, tad's and its baseline's, against the recorded ones.

Usage:
  tools/icount.py BENCH_ICOUNT              check: fail if a tad count grew by more than 2 %
  tools/icount.py BENCH_ICOUNT --update     rewrite benchmark/icount/counts.txt
  tools/icount.py BENCH_ICOUNT --only W5    some workloads only (a comma-separated list)

BENCH_ICOUNT is the bench.icount binary (benchmark/icount/: fixed flags -O3, x86-64 with AVX2
and FMA). Each workload's call runs `calls` times under callgrind, which counts only between the
program's two toggles (benchmark/icount/icount.hpp), so count / calls is exact and the same on
every run of the same binary: a regression of one instruction per call shows.

counts.txt records, per workload, tad's and the baseline's instructions per call (the baseline:
the hand-written loop the benchmarks compare with, "-" where benchmark/icount/ has none yet) and the
compiler that built them. The check fails when tad's count is more than 2 % above the record;
a count 2 % below it is reported, so that the record is lowered in the commit that earned it.
The recorded counts change only in a commit that says why (doc/benchmarks.md, "Instruction
counts"). A different compiler (the first line) makes the check report and pass: the counts
are those of g++ 12.2 (Debian 12).

Python 3 standard library only; needs valgrind.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COUNTS = os.path.join(HERE, "..", "benchmark", "icount", "counts.txt")
THRESHOLD = 0.02

# workload, calls counted, has a baseline in benchmark/icount/
WORKLOADS = [
    ("W1", 20, True),
    ("W2", 20, True),
    ("W3", 20, True),
    ("W4", 20, True),
    ("W5", 200, True),
    ("W5tuple", 200, False),
    ("W5lit", 200, False),
    ("LR", 10, True),
    ("SMX", 1, True),
    ("SQ4", 200, True),
    ("MLP", 2, True),
    ("RNN", 2, True),
    ("SCAN", 20, True),
] + [(f"F_{entry}", 200, False)
     for entry in ("grad", "grad_into", "value", "program", "vjp", "vjp_into", "baseline")]


def instructions(binary, workload, side, calls):
    """Instructions per call of one side of one workload."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
               binary, workload, side, str(calls)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"icount.py: {' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
        with open(out) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    count = int(line.split()[1])
                    if count == 0:  # nothing was counted: the toggles did not run, not a fall
                        sys.exit(f"icount.py: callgrind counted no instructions for {workload} {side}")
                    return count / calls
    sys.exit(f"icount.py: no totals in callgrind's output for {workload} {side}")


def compiler_of(binary):
    """The compiler that built the binary, from its .comment section (e.g. 'GCC: (Debian 12.2.0-14) 12.2.0')."""
    try:
        text = subprocess.run(["readelf", "-p", ".comment", binary], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "unknown"
    found = [c.strip() for c in re.findall(r"\]\s+(.*)", text)]
    # A clang++ binary also holds the C runtime's "GCC: ..." entries: clang's own comes first.
    for mark in ("clang version", "GCC"):
        named = [c for c in found if mark in c]
        if named:
            return named[-1]
    return found[-1] if found else "unknown"


def read_counts():
    compiler, rows = None, {}
    if not os.path.exists(COUNTS):
        return compiler, rows
    with open(COUNTS) as f:
        for line in f:
            line = line.strip()
            if line.startswith("# compiler:"):
                compiler = line.split(":", 1)[1].strip()
            elif line and not line.startswith("#"):
                name, tad, base = line.split()
                rows[name] = (float(tad), None if base == "-" else float(base))
    return compiler, rows


def write_counts(compiler, measured):
    with open(COUNTS, "w") as f:
        f.write(f"# compiler: {compiler}\n")
        f.write("# Instructions per call (callgrind) of bench.icount (-O3, x86-64 + AVX2 + FMA), written by\n")
        f.write("# `tools/icount.py <bench.icount> --update`; checked by tools/icount.py in CI (stage icount).\n")
        f.write("# Change them only in a commit that says why (doc/benchmarks.md, \"Instruction counts\").\n")
        f.write("# workload  tad  baseline\n")
        for name, (tad, base) in measured.items():
            f.write(f"{name} {tad:.1f} {'-' if base is None else f'{base:.1f}'}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    unknown = only - {w for w, _, _ in WORKLOADS}
    if unknown:
        sys.exit(f"icount.py: unknown workload(s) {', '.join(sorted(unknown))}")

    compiler = compiler_of(args.binary)
    recorded_compiler, recorded = read_counts()
    measured = {}
    print(f"{'workload':10} {'tad':>12} {'baseline':>12} {'ratio':>6} {'recorded':>12} {'change':>8}")
    failed, lower = [], []
    for name, calls, has_base in WORKLOADS:
        if only and name not in only:
            if name in recorded:
                measured[name] = recorded[name]
            continue
        tad = instructions(args.binary, name, "tad", calls)
        base = instructions(args.binary, name, "base", calls) if has_base else None
        measured[name] = (tad, base)
        ratio = f"{tad / base:6.2f}" if base else "     -"
        old = recorded.get(name)
        change = ""
        if old:
            rel = tad / old[0] - 1
            change = f"{100 * rel:+7.1f}%"
            if rel > THRESHOLD:
                failed.append(f"{name}: {tad:.1f} instructions per call, recorded {old[0]:.1f} ({100 * rel:+.1f} %)")
            elif rel < -THRESHOLD:
                lower.append(name)
        base_s = f"{base:12.1f}" if base else f"{'-':>12}"
        old_s = f"{old[0]:12.1f}" if old else f"{'-':>12}"
        print(f"{name:10} {tad:12.1f} {base_s} {ratio} {old_s} {change:>8}", flush=True)

    if args.update:
        write_counts(compiler, measured)
        print(f"icount.py: wrote {os.path.relpath(COUNTS)} ({compiler})")
        return 0
    if recorded_compiler and recorded_compiler != compiler:
        print(f"icount.py: the counts were recorded with '{recorded_compiler}', this binary is '{compiler}': "
              "not compared (record them for this compiler with --update)")
        return 0
    missing = [w for w, _, _ in WORKLOADS if w not in recorded and (not only or w in only)]
    if missing:
        print(f"icount.py: no recorded count for {', '.join(missing)} (record them with --update)")
        return 1
    if lower:
        print(f"icount.py: {', '.join(lower)} fell by more than {100 * THRESHOLD:.0f} %: "
              "lower the record (--update) in the commit that did it")
    if failed:
        print("icount.py: FAILED, tad's instructions per call grew by more than "
              f"{100 * THRESHOLD:.0f} %:\n  " + "\n  ".join(failed))
        return 1
    print("icount.py: every tad count within 2 % of the record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
