#!/usr/bin/env python3
"""Times the compilation of tad gradients of growing size (doc/compile-times.md).

    benchmark/compile/measure.py [--repeat 3] [--sizes 10,25,50,100,200,400]
                                 [--compilers g++,clang++] [--out build/compile-times]
                                 [--no-syntax-only] [--no-baselines] [--rev REV]

Generates the translation units (generate.py) into --out, then compiles each one --repeat
times, one compile at a time, with the project's flags (-std=c++20 -march=native -I include)
and prints a Markdown table of wall and CPU (user + system) times, minimum and median, and
the largest resident set size. Gradient TUs are compiled with -O2 -c and, unless
--no-syntax-only, with -fsyntax-only (front end and template instantiation only); the
include-only baselines with both. With --rev, the headers are `git archive REV include`
extracted into --out (a fixed version while include/ is being edited); without it, the
working tree's include/. Prints `uptime` before and after: other jobs on the machine inflate
the wall times, the CPU times much less.
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import generate  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLAGS = ["-std=c++20", "-march=native"]


def run_once(cmd):
    """Wall time (s), CPU time (user + system, s) and peak RSS (MB) of one compile."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: long diagnostics cannot block
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err.read().decode()[-20000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default=",".join(map(str, generate.SIZES)))
    ap.add_argument("--compilers", default="g++,clang++")
    ap.add_argument("--out", default=str(ROOT / "build" / "compile-times"))
    ap.add_argument("--no-syntax-only", action="store_true")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-models", action="store_true", help="skip the shaped models (generate.MODELS)")
    ap.add_argument("--rev", help="measure the headers of this git revision, not the working tree")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s]
    out = pathlib.Path(args.out)
    generate.write(out, sizes)
    include = ROOT / "include"
    if args.rev:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.rev], check=True,
                             capture_output=True, text=True).stdout.strip()
        snap = out / f"rev-{sha}"
        snap.mkdir(exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "include"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(snap)], input=archive, check=True)
        include = snap / "include"
        print(f"<!-- headers: git {sha} -->")
    flags = FLAGS + ["-I", str(include)]

    jobs = []  # (label, file, mode)
    if not args.no_baselines:
        for name in generate.BASELINES:
            jobs += [(name, "-fsyntax-only"), (name, "-O2 -c")]
    if not args.no_models:
        jobs += [(name, "-O2 -c") for name in generate.MODELS]
    for n in sizes:
        if not args.no_syntax_only:
            jobs.append((f"grad_{n}.cpp", "-fsyntax-only"))
        jobs.append((f"grad_{n}.cpp", "-O2 -c"))

    print(f"<!-- before: {uptime()} -->", flush=True)
    print("| TU | mode | compiler | wall min (s) | wall median (s) | CPU min (s) | CPU median (s) | peak RSS (MB) |")
    print("|---|---|---|---:|---:|---:|---:|---:|", flush=True)
    for name, mode in jobs:
        for cxx in args.compilers.split(","):
            obj = out / (name + "." + os.path.basename(cxx).replace("+", "x") + ".o")
            cmd = [cxx, *flags, *mode.split(), str(out / name)]
            if mode != "-fsyntax-only":
                cmd += ["-o", str(obj)]
            runs = [run_once(cmd) for _ in range(args.repeat)]
            walls = [w for w, _, _ in runs]
            cpus = [c for _, c, _ in runs]
            rss = max(r for _, _, r in runs)
            print(f"| {name} | `{mode}` | {cxx} | {min(walls):.2f} | {statistics.median(walls):.2f} | "
                  f"{min(cpus):.2f} | {statistics.median(cpus):.2f} | {rss:.0f} |", flush=True)
    print(f"<!-- after: {uptime()} -->", flush=True)


if __name__ == "__main__":
    main()
