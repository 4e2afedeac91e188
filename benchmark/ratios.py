#!/usr/bin/env python3
"""Ratios of tad's time to the baselines' times, from Google Benchmark JSON output.

Usage:
  build/bench/benchmark/bench.<name> --benchmark_format=json --benchmark_repetitions=5 \\
      --benchmark_report_aggregates_only=true > out.json
  python3 benchmark/ratios.py out.json [more.json ...] [--metric real_time] [--markdown]

Benchmarks are named <workload>_<variant>[/<N>]: W1_tad/1000, W1_xsimd/1000, W1_scalar/1000.
The script groups by the workload (the prefix before the first "_") and N, and prints for each
group tad / xsimd and tad / scalar, then tad / every other baseline present (e.g. W3_xsimdonline).
Variants whose name starts with "tad" (e.g. W5_tadtuple) get their own row, "W5:tadtuple".

Each time is the median over repetitions: the "median" aggregate when the file has one, else
the median of the individual repetitions. With several files (several runs of one binary),
each ratio is taken inside one file (one process) and the median over files is printed (as
plot.py and processes.py do); pooling samples across processes mixed their spreads. The default metric is cpu_time, which on a shared
machine is less disturbed by other processes than real_time (both are single-threaded here).

--check-targets prints whether the targets of doc/log/benchmarks.md are met (N = 100000, double;
T1 at N = 1000000, float). One process's ratio is one draw from a spread of up to 15 % on a
shared machine: benchmark/processes.py gives the median over many processes.
Python 3 standard library only.
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# (workload, N, baseline variant, maximal tad / baseline[, tad variant]); None for N means "no
# size argument"; the tad variant defaults to "tad" (ST_tadtrick is the stop_gradient trick).
TARGETS = [
    ("W1", "100000", "xsimd", 1.10),
    ("W2", "100000", "xsimd", 1.10),
    ("W3", "100000", "xsimd", 1.25),
    ("W4", "100000", "xsimd", 1.10),
    ("W5", None, "scalar", 1.20),
    ("CG", "100000", "xsimd", 1.05),
    ("ST", "100000", "xsimd", 1.05),
    ("ST", "100000", "xsimd", 1.05, "tadtrick"),
    ("T1", "1000000", "xsimd", 1.10),
]


def split_name(run_name):
    """'W1_tad/1000' -> ('W1', 'tad', '1000'); 'W5_tad' -> ('W5', 'tad', None)."""
    base, _, args = run_name.partition("/")
    workload, sep, variant = base.partition("_")
    if not sep:
        return None
    return workload, variant, (args or None)


def file_times(path, metric):
    """{(workload, variant, N): median time in ns} of one Google Benchmark JSON file, and its
    context: each time the file's "median" aggregate when it has one, else the median of the
    file's repetitions."""
    with open(path) as f:
        data = json.load(f)
    samples, medians = defaultdict(list), {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            print(f"warning: {path}: {b.get('name')}: {b.get('error_message')}", file=sys.stderr)
            continue
        parts = split_name(b.get("run_name", b["name"]))
        if parts is None:
            continue
        t = b[metric] * UNIT_NS[b.get("time_unit", "ns")]
        if b.get("run_type", "iteration") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[parts] = t
        else:
            samples[parts].append(t)
    times = {k: statistics.median(v) for k, v in samples.items()}
    times.update(medians)
    return times, data.get("context", {})


class Times:
    """The files' times by (workload, N) and variant. A ratio is taken inside each file (one
    process: the spread between processes is larger than inside one, processes.py) and the
    median over the files that have both variants; only when no file has both is it the ratio
    of the two variants' medians over the files."""

    def __init__(self, paths, metric):
        self.files = []
        self.context = None
        for path in paths:
            times, context = file_times(path, metric)
            self.files.append(times)
            self.context = self.context or context
        pooled = defaultdict(list)
        for times in self.files:
            for key, t in times.items():
                pooled[key].append(t)
        self.medians = defaultdict(dict)  # (workload, N) -> {variant: median over files}
        for (w, v, n), ts in pooled.items():
            self.medians[(w, n)][v] = statistics.median(ts)

    def ratio(self, w, n, a, b):
        """a's time over b's for workload w at N."""
        per_file = [t[(w, a, n)] / t[(w, b, n)] for t in self.files if (w, a, n) in t and (w, b, n) in t]
        if per_file:
            return statistics.median(per_file)
        return self.medians[(w, n)][a] / self.medians[(w, n)][b]


def size_key(n):
    return (0, int(n)) if n is not None and n.isdigit() else (1, n or "")


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="JSON output of one or more benchmark binaries")
    ap.add_argument("--metric", choices=("cpu_time", "real_time"), default="cpu_time")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--check-targets", action="store_true", help="check the targets at N = 100000")
    args = ap.parse_args()

    data = Times(args.files, args.metric)
    times = data.medians
    if not times:
        sys.exit("ratios.py: no benchmarks named <workload>_<variant>[/<N>] in the input")

    # One row per tad variant: "tad", and any other variant whose name starts with "tad"
    # (e.g. W5_tadtuple), shown as workload:variant against the same baselines.
    rows = []
    for (w, n) in sorted(times, key=lambda k: (k[0], size_key(k[1]))):
        t = times[(w, n)]
        bases = {v: x for v, x in t.items() if not v.startswith("tad")}
        others = sorted(v for v in bases if v not in ("xsimd", "scalar"))
        for v in sorted((v for v in t if v.startswith("tad")), key=lambda v: (v != "tad", v)):
            against = {b: data.ratio(w, n, v, b) for b in bases}
            rows.append((w if v == "tad" else f"{w}:{v}", n, t[v], against, others))

    if args.markdown:
        extra = sorted({v for *_, o in rows for v in o})
        head = ["workload", "N", "tad", "tad / xsimd", "tad / scalar"] + [f"tad / {v}" for v in extra]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
        for w, n, tad, r, _ in rows:
            cells = [w, n or "-", fmt_time(tad)]
            for v in ["xsimd", "scalar"] + extra:
                cells.append(f"{r[v]:.2f}" if v in r else "")
            print("| " + " | ".join(cells) + " |")
    else:
        print(f"metric: {args.metric}, median over repetitions; ratios inside each file, median over files")
        print(f"{'workload':<14} {'N':>9} {'tad':>10} {'tad/xsimd':>10} {'tad/scalar':>11}  others")
        for w, n, tad, r, others in rows:
            rx = f"{r['xsimd']:.2f}" if "xsimd" in r else "-"
            rs = f"{r['scalar']:.2f}" if "scalar" in r else "-"
            rest = "  ".join(f"tad/{v} {r[v]:.2f}" for v in others)
            print(f"{w:<14} {n or '-':>9} {fmt_time(tad):>10} {rx:>10} {rs:>11}  {rest}")

    if args.check_targets:
        print()
        for w, n, base, limit, *variant in TARGETS:
            tv = variant[0] if variant else "tad"
            label = w if tv == "tad" else f"{w}:{tv}"
            t = times.get((w, n))
            if not t or tv not in t or base not in t:
                print(f"{label} (N = {n or '-'}): not measured")
                continue
            r = data.ratio(w, n, tv, base)
            verdict = "met" if r <= limit else "MISSED"
            print(f"{label} (N = {n or '-'}): {tv} / {base} = {r:.2f}, target <= {limit:.2f}: {verdict}")


if __name__ == "__main__":
    main()
