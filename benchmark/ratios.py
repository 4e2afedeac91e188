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
the median of the individual repetitions. The default metric is cpu_time, which on a shared
machine is less disturbed by other processes than real_time (both are single-threaded here).

--check-targets prints whether the targets of doc/benchmarks.md are met (N = 100000, double;
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


def load(paths, metric):
    """{(workload, N): {variant: median time in ns}}, and the context of the first file."""
    samples = defaultdict(list)   # (workload, N, variant) -> repetition times
    medians = {}                  # (workload, N, variant) -> median aggregate
    context = None
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                print(f"warning: {b.get('name')}: {b.get('error_message')}", file=sys.stderr)
                continue
            parts = split_name(b.get("run_name", b["name"]))
            if parts is None:
                continue
            t = b[metric] * UNIT_NS[b.get("time_unit", "ns")]
            kind = b.get("run_type", "iteration")
            if kind == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[parts] = t
            else:
                samples[parts].append(t)
    times = defaultdict(dict)
    for key in set(samples) | set(medians):
        w, v, n = key
        times[(w, n)][v] = medians[key] if key in medians else statistics.median(samples[key])
    return times, context


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

    times, context = load(args.files, args.metric)
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
            rows.append((w if v == "tad" else f"{w}:{v}", n, {**bases, "tad": t[v]}, others))

    if args.markdown:
        extra = sorted({v for _, _, _, o in rows for v in o})
        head = ["workload", "N", "tad", "tad / xsimd", "tad / scalar"] + [f"tad / {v}" for v in extra]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
        for w, n, t, _ in rows:
            cells = [w, n or "-", fmt_time(t["tad"])]
            for v in ["xsimd", "scalar"] + extra:
                cells.append(f"{t['tad'] / t[v]:.2f}" if v in t else "")
            print("| " + " | ".join(cells) + " |")
    else:
        print(f"metric: {args.metric}, median over repetitions")
        print(f"{'workload':<14} {'N':>9} {'tad':>10} {'tad/xsimd':>10} {'tad/scalar':>11}  others")
        for w, n, t, others in rows:
            rx = f"{t['tad'] / t['xsimd']:.2f}" if "xsimd" in t else "-"
            rs = f"{t['tad'] / t['scalar']:.2f}" if "scalar" in t else "-"
            rest = "  ".join(f"tad/{v} {t['tad'] / t[v]:.2f}" for v in others)
            print(f"{w:<14} {n or '-':>9} {fmt_time(t['tad']):>10} {rx:>10} {rs:>11}  {rest}")

    if args.check_targets:
        print()
        for w, n, base, limit, *variant in TARGETS:
            tv = variant[0] if variant else "tad"
            label = w if tv == "tad" else f"{w}:{tv}"
            t = times.get((w, n))
            if not t or tv not in t or base not in t:
                print(f"{label} (N = {n or '-'}): not measured")
                continue
            r = t[tv] / t[base]
            verdict = "met" if r <= limit else "MISSED"
            print(f"{label} (N = {n or '-'}): {tv} / {base} = {r:.2f}, target <= {limit:.2f}: {verdict}")


if __name__ == "__main__":
    main()
