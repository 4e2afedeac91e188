#!/usr/bin/env python3
"""A PNG bar chart of tad / baseline time ratios from Google Benchmark JSON output.

Usage:
  build/bench/benchmark/bench.mlp --benchmark_format=json --benchmark_repetitions=5 > mlp.json
  python3 benchmark/plot.py mlp.json [more.json ...] --baseline eigen [--baseline torch] \\
      [--tad tad] [--metric cpu_time] [--filter REGEX] [--title TEXT] --out doc/benchmarks-x.png

Benchmarks are named <workload>_<variant>[/<N>] (as for ratios.py and processes.py). For every
workload and N that has both <workload>_<tad> and <workload>_<baseline> in the same file, the
ratio is tad's time over the baseline's (each the median of its repetitions, or the file's
"median" aggregate); ratios are taken inside one file, i.e. one process, never across files.
When several files give a ratio for the same bar (e.g. several runs), the bar is their median.
One bar group per workload and N, one bar per baseline present for it (in the order given, one
colour per baseline); below 1 tad is faster. A dashed line marks 1.

Needs matplotlib (Debian: python3-matplotlib), used with the Agg backend (no display); only
this script needs it (doc/decisions.md 43), never the build or the tests.
"""

import argparse
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import file_times  # noqa: E402  (same folder, standard library only)


def ratios(paths, tad, baselines, metric, pattern):
    """{(workload, N): {baseline: median over files of tad / baseline}}, in first-seen order."""
    found = defaultdict(lambda: defaultdict(list))
    for path in paths:
        times, _ = file_times(path, metric)
        for (workload, variant, n), t in times.items():
            if variant != tad or (pattern and not re.search(pattern, f"{workload}/{n}")):
                continue
            for base in baselines:
                b = times.get((workload, base, n))
                if b:
                    found[(workload, n)][base].append(t / b)
    return {k: {b: statistics.median(r) for b, r in v.items()} for k, v in found.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="Google Benchmark JSON files (--benchmark_format=json)")
    ap.add_argument("--baseline", action="append", required=True,
                    help="baseline variant suffix, e.g. eigen, torch, xsimd, scalar (repeatable)")
    ap.add_argument("--tad", default="tad", help="tad's variant (default tad)")
    ap.add_argument("--metric", default="cpu_time", choices=["cpu_time", "real_time"])
    ap.add_argument("--filter", help="only bars whose <workload>/<N> matches this regex")
    ap.add_argument("--title", help="the chart's title (default: tad / <baselines>, the metric)")
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--dpi", type=int, default=100)
    args = ap.parse_args()

    found = ratios(args.json, args.tad, args.baseline, args.metric, args.filter)
    if not found:
        sys.exit(f"plot.py: no benchmark has both a {args.tad} variant and one of the baselines "
                 f"{', '.join(args.baseline)} in the same file")

    try:
        import matplotlib
    except ImportError:
        sys.exit(f"plot.py: {sys.executable} has no matplotlib: install python3-matplotlib (Debian) and "
                 "run this script with that Python (/usr/bin/python3 benchmark/plot.py ...)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def sort_key(key):
        workload, n = key
        return (workload, int(n) if n and n.isdigit() else -1)

    groups = sorted(found, key=sort_key)
    labels = [f"{w}/{n}" if n else w for w, n in groups]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(groups) + 1.5), 3.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labelled = set()
    for g, key in enumerate(groups):
        present = [b for b in args.baseline if b in found[key]]  # centred: absent baselines leave no gap
        width = 0.8 / len(present)
        for i, base in enumerate(present):
            r = found[key][base]
            color = colors[args.baseline.index(base) % len(colors)]
            bars = ax.bar([g - 0.4 + width * (i + 0.5)], [r], width * 0.9, color=color,
                          label=None if base in labelled else f"tad / {base}")
            labelled.add(base)
            ax.bar_label(bars, labels=[f"{r:.2f}"], fontsize=8, padding=2)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(groups)), labels, fontsize=9)
    ax.set_ylabel(f"tad / baseline ({args.metric.replace('_', ' ')})")
    ax.set_ylim(0, max(1.2, 1.15 * max(r for v in found.values() for r in v.values())))
    ax.set_title(args.title or f"tad / {', '.join(args.baseline)} (below 1: tad faster)", fontsize=10)
    if len(labelled) > 1:
        handles, names = ax.get_legend_handles_labels()
        order = sorted(range(len(names)), key=lambda k: args.baseline.index(names[k].removeprefix("tad / ")))
        ax.legend([handles[k] for k in order], [names[k] for k in order], fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=args.dpi)
    for key, label in zip(groups, labels):
        print(label + ": " + ", ".join(f"tad / {b} {r:.3f}" for b, r in found[key].items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
