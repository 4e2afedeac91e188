#!/usr/bin/env python3
"""The include graph of tad's public headers: fails if a header includes one that includes it back.

Usage: tools/include_graph.py [INCLUDE_DIR]     (default: the repository's include/)

Reads every include/tad/**/*.hpp, takes its `#include <tad/...>` lines as edges, and prints each
strongly connected component of more than one header (a cycle) and exits 1 if there is one
(issue 40: the engine's and the program's member headers used to include their class's header,
which included them back). With --layers it prints, per header, its depth in the graph (0: it
includes no tad header), for a reader who wants the order to read them in.
Python 3 standard library only; the ctest test `include_graph` runs it.
"""

import os
import re
import sys


def graph(root):
    g = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".hpp"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, root)
                with open(path) as text:
                    g[name] = re.findall(r"^\s*#\s*include\s*<(tad/[^>]+)>", text.read(), re.M)
    return g


def cycles(g):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include")
    g = graph(root)
    missing = sorted({w for v in g for w in g[v] if w not in g})
    if missing:
        print("include_graph.py: included but not found under " + root + ": " + ", ".join(missing))
        return 1
    found = cycles(g)
    for comp in found:
        print(f"include_graph.py: a cycle of {len(comp)} headers: " + ", ".join(comp))
    if "--layers" in sys.argv and not found:
        depth = {}

        def d(v):
            if v not in depth:
                depth[v] = 1 + max((d(w) for w in g[v]), default=-1)
            return depth[v]

        for v in sorted(g, key=lambda v: (d(v), v)):
            print(f"{d(v):3} {v}")
    if found:
        return 1
    print(f"include_graph.py: {len(g)} headers, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
