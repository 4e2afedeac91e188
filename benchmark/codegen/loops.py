#!/usr/bin/env python3
"""Compare the loops of the codegen workloads between two builds of benchmark/codegen/workloads.cpp.

Usage:
  python3 benchmark/codegen/loops.py BASE NEW [--label g++] [--diff-lines 40]
  python3 benchmark/codegen/loops.py --show BINARY [WORKLOAD]   # print one build's loops

BASE and NEW are two builds of workloads.cpp, compiled and linked: either two binaries, or two
directories holding one binary <W>.x per workload (what tools/codegen_diff.sh builds). For each
workload function `tad_cg_<W>` the script collects every function of the binary it reaches
(calls and jumps, transitively; not through the PLT, i.e. not into libc/libstdc++), disassembles
them with `objdump -d --no-show-raw-insn -C`, and normalizes each instruction:
  - addresses are dropped; a jump inside the function becomes an instruction index
    (".L+k": k-th instruction of the loop; "<exit>": a target outside the loop);
  - a call or jump to another function becomes "<name>", its name without template arguments,
    parameter list and clone numbers (the same code under a renamed type compares equal);
  - a rip-relative operand (a constant) becomes "[const:<hex>]", the bytes it points to (up to the
    operand's width), so a changed constant is a changed instruction and a moved one is not;
  - nop padding is dropped.
A loop is an instruction range closed by a backward jump (from the jump's target to the jump).
Per workload it reports
  same                  every loop and every other instruction equal;
  prologue changed only the loops equal, code outside them differs (set-up, shape checks, ...);
  loops changed         a loop differs, or loops were added or removed: the changed loops'
                        instruction counts and calls on each side (a kernel that inlining moved
                        out of the loop shows as a call), then a unified diff of them (first
                        --diff-lines lines);
  loops changed in register names only
                        the changed loops are the same instructions with other registers
                        (g++'s allocation moves with unrelated changes): no diff printed.
Functions whose name matches --cold (default: the standard library and tad's error-message and
binding-check helpers) are followed but their loops count as prologue: they build exception
messages and run before or instead of the evaluation, not in it.
Exit code 0 when every workload's loops are the same, 1 otherwise, 2 on a usage error.
Python 3 standard library only.
"""

import argparse
import bisect
from collections import Counter
import difflib
import os
import re
import subprocess
import sys

DEFAULT_COLD = (r"^(std::|__gnu_cxx::|operator new|operator delete)|\[clone \.cold\]|\.cold$|"
                r"describe_|shape_error|"
                r"check_binding|check_sets|common_length|throw_|to_string|checked_rate|value_error")

FUNC_RE = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INSN_RE = re.compile(r"^\s+([0-9a-f]+):\t(.*)$")
# A direct branch or call: "jne    41c0 <sym+0x12>" (possibly with bnd/notrack prefixes).
BRANCH_RE = re.compile(r"^((?:bnd |notrack )?(?:j\w+|call\w*|loop\w*|xbegin))\s+([0-9a-f]+) <(.*)>$")
RIP_RE = re.compile(r"(-?0x[0-9a-f]+)?\(%rip\)")
COMMENT_RE = re.compile(r"\s+#.*$")
OPERATOR_RE = re.compile(r"operator(?:\(\)|<=>|<<=?|>>=?|<=|>=|->\*?|<|>)")
NORETURN_RE = re.compile(r"^(_Unwind_Resume|__cxa_throw|__cxa_rethrow|__cxa_bad_|std::__throw_|abort|exit|"
                         r"__stack_chk_fail|__assert_fail|std::terminate)")
# A loop that calls one of these is error handling: tad's evaluation allocates and throws nothing.
ERROR_CALL_RE = re.compile(r"^call\w* <(operator new|operator delete|__cxa_|_Unwind_|std::__cxx11::basic_string|"
                           r"std::__throw_|std::terminate)")
NOP_RE = re.compile(r"^(?:(?:data16|cs|ds)\s+)*(nop\w*|xchg\s+%ax,%ax)\b")


def strip_name(name):
    """A function's name without offset, template arguments, parameters, clone numbers."""
    name = re.sub(r"\+0x[0-9a-f]+$", "", name)
    name = re.sub(r"\.(cold|part|isra|constprop|lto_priv)\.\d+", r".\1", name)
    name = re.sub(r" \[clone ([^\]]*?)\.?\d*\]", r" [clone \1]", name)
    out, depth, i = [], 0, 0
    while i < len(name):
        m = OPERATOR_RE.match(name, i)
        if m:  # operator(), operator<, operator<< ...: not brackets
            if depth == 0:
                out.append(m.group(0))
            i = m.end()
            continue
        c = name[i]
        if c in "<(":
            if depth == 0:
                out.append("<>" if c == "<" else "()")
            depth += 1
        elif c in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out).strip()


class Binary:
    def __init__(self, path):
        self.path = path
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", path], check=True,
                             capture_output=True, text=True).stdout
        self.funcs = {}      # start address -> (name, [(addr, text)])
        self.by_name = {}    # name -> start address (first)
        cur = None
        for line in dis.splitlines():
            m = FUNC_RE.match(line)
            if m:
                cur = int(m.group(1), 16)
                self.funcs[cur] = (m.group(2), [])
                self.by_name.setdefault(m.group(2), cur)
                continue
            m = INSN_RE.match(line)
            if m and cur is not None:
                text = m.group(2).strip()
                if text and not text.startswith("(bad)"):
                    self.funcs[cur][1].append((int(m.group(1), 16), text))
        self.starts = sorted(self.funcs)
        self.data = self._read_data(path)

    @staticmethod
    def _read_data(path):
        """address -> byte, for every section objdump -s dumps (rodata holds the constants)."""
        out = subprocess.run(["objdump", "-s", path], check=True, capture_output=True, text=True).stdout
        data = {}
        for line in out.splitlines():
            m = re.match(r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ?){1,4})", line)
            if not m:
                continue
            addr = int(m.group(1), 16)
            for word in m.group(2).split():
                for k in range(0, len(word), 2):
                    data[addr] = word[k:k + 2]
                    addr += 1
        return data

    def func_of(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        start = self.starts[i]
        insns = self.funcs[start][1]
        if insns and addr <= insns[-1][0]:
            return start
        return None

    def const(self, addr, width):
        return "".join(self.data.get(addr + k, "??") for k in range(width))

    def reachable(self, root):
        """Functions reached from root, depth-first in the order of their first reference."""
        order, seen, stack = [], set(), [root]
        while stack:
            f = stack.pop()
            if f in seen:
                continue
            seen.add(f)
            order.append(f)
            targets = []
            for _, text in self.funcs[f][1]:
                m = BRANCH_RE.match(text)
                if not m or m.group(3).endswith("@plt"):
                    continue
                t = self.func_of(int(m.group(2), 16))
                if t is not None and t != f and t not in seen:
                    targets.append(t)
            stack.extend(reversed(targets))
        return order


def operand_width(mnemonic, text):
    for suffix, width in (("broadcastb", 1), ("broadcastw", 2), ("broadcastd", 4), ("broadcastss", 4),
                          ("broadcastq", 8), ("broadcastsd", 8), ("broadcastf128", 16), ("broadcasti128", 16),
                          ("movq", 8), ("movd", 4)):
        if mnemonic.endswith(suffix):
            return width
    if "broadcastsd" in mnemonic or mnemonic.endswith("sd") and "%ymm" not in text:
        return 8
    if "broadcastss" in mnemonic or mnemonic.endswith("ss") and "%ymm" not in text:
        return 4
    if "%zmm" in text:
        return 64
    if "%ymm" in text:
        return 32
    if "%xmm" in text:
        return 16
    return 8


def normalize(binary, func, lo, hi):
    """The instructions of func with addresses in [lo, hi], normalized (see the module doc)."""
    insns = [(a, t) for a, t in binary.funcs[func][1] if lo <= a <= hi and not NOP_RE.match(t)]
    addrs = [a for a, _ in insns]
    every = [a for a, _ in binary.funcs[func][1]]  # with the nops: the next instruction's address
    out = []
    for a, text in insns:
        m = BRANCH_RE.match(text)
        if m:
            mnemonic, target, sym = m.group(1), int(m.group(2), 16), m.group(3)
            tf = binary.func_of(target)
            if tf == func and lo <= target <= hi:
                k = bisect.bisect_left(addrs, target)
                out.append(f"{mnemonic} .L+{k}")
            elif tf == func:
                out.append(f"{mnemonic} <exit>")
            else:
                out.append(f"{mnemonic} <{strip_name(sym)}>")
            continue
        text = COMMENT_RE.sub("", text)
        if "(%rip)" in text:
            # objdump's comment gave the target address; recompute it from the next instruction.
            j = bisect.bisect_right(every, a)
            next_addr = every[j] if j < len(every) else None
            mnemonic = text.split()[0]
            width = operand_width(mnemonic, text)

            def repl(mm, next_addr=next_addr, width=width):
                if next_addr is None or mnemonic.startswith("lea"):
                    return "[rip]"
                disp = int(mm.group(1), 16) if mm.group(1) else 0
                return f"[const:{binary.const(next_addr + disp, width)}]"

            text = RIP_RE.sub(repl, text)
        out.append(re.sub(r"\s+", " ", text))
    return out


def successors(binary, func):
    """Per instruction index of func, the indices control can go to next (inside func)."""
    insns = binary.funcs[func][1]
    addrs = [a for a, _ in insns]
    succ = []
    for i, (a, text) in enumerate(insns):
        nxt = [i + 1] if i + 1 < len(insns) else []
        mnemonic = text.split()[0] if text else ""
        if mnemonic in ("bnd", "notrack", "rep", "repz"):
            mnemonic = text.split()[1] if len(text.split()) > 1 else mnemonic
        m = BRANCH_RE.match(text)
        if m and m.group(1).split()[-1].startswith("call") and NORETURN_RE.search(m.group(3)):
            succ.append([])  # _Unwind_Resume, __cxa_throw, ...: the next instruction is a landing pad
        elif m and not m.group(1).split()[-1].startswith("call"):
            t = int(m.group(2), 16)
            inside = binary.func_of(t) == func
            k = bisect.bisect_left(addrs, t)
            tgt = [k] if inside and k < len(addrs) else []
            succ.append(tgt if m.group(1).split()[-1] == "jmp" else tgt + nxt)
        elif mnemonic.startswith("ret") or mnemonic in ("jmp", "ud2", "hlt") or text.startswith("jmp"):
            succ.append([])  # return, trap, indirect jump (a jump table: not followed)
        else:
            succ.append(nxt)
    return succ


def loops_of(binary, func):
    """[(lo, hi)] of every backward jump inside func that closes a cycle, sorted. A backward
    jump whose target cannot reach it again is block layout (a tail placed before), no loop."""
    insns = binary.funcs[func][1]
    addrs = [a for a, _ in insns]
    succ = None
    res = set()
    for i, (a, text) in enumerate(insns):
        m = BRANCH_RE.match(text)
        if not m or m.group(1).split()[-1].startswith("call"):
            continue
        t = int(m.group(2), 16)
        if t > a or binary.func_of(t) != func:
            continue
        if succ is None:
            succ = successors(binary, func)
        start = bisect.bisect_left(addrs, t)
        seen, todo = {start}, [start]
        while todo and i not in seen:
            for j in succ[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        if i in seen:
            res.add((t, a))
    return sorted(res)


def describe(binary, root_name, cold):
    """([(loop key, loop lines)], other lines) of a workload, or None if it is not in binary."""
    if root_name not in binary.by_name:
        return None
    loops, other_lines = [], []
    for f in binary.reachable(binary.by_name[root_name]):
        name = binary.funcs[f][0]
        short = strip_name(name)
        insns = binary.funcs[f][1]
        other_lines.append(f"== {short}")
        other_lines += normalize(binary, f, insns[0][0], insns[-1][0]) if insns else []
        if cold.search(name):
            continue
        ranges = loops_of(binary, f)
        bodies = [normalize(binary, f, lo, hi) for lo, hi in ranges]
        bodies = [b for b in bodies if not any(ERROR_CALL_RE.match(x) for x in b)]
        for k, body in enumerate(bodies):
            loops.append((f"{short}: loop {k + 1} of {len(bodies)}", body))
    return loops, other_lines


REG_RE = re.compile(r"%([xyz]mm[0-9]+|k[0-7]|r[0-9]+[dwb]?|[re]?[abcd]x|[re]?[sd]il?|[re]?[sb]pl?|[abcd]l)\b")


def canon(body):
    """body with its registers renamed in order of first use: loops equal under canon differ in
    register names only (g++'s allocation moves with unrelated changes to the TU)."""
    names = {}

    def repl(m):
        r = m.group(1)
        kind = r[0] if r[0] in "xyzk" else "g"
        return names.setdefault(r, f"%{kind}{len(names)}")

    return tuple(REG_RE.sub(repl, line) for line in body)


def summary(loops):
    """Instructions and calls of the given loops: a kernel now called out of line (an inlining
    decision) shows as a call here, where the first lines of a diff may show only renamings."""
    n = sum(len(b) for _, b in loops)
    calls = Counter(line.split(" ", 1)[1] for _, b in loops for line in b if line.startswith("call"))
    listed = ", ".join(f"{c}x {name}" for name, c in sorted(calls.items())) or "none"
    return f"{n} instructions, calls: {listed}"


def compare(db, dn, diff_lines):
    """(changed?, report lines) for the loops of one workload in BASE (db) and NEW (dn). Loops are
    matched by their bodies, wherever they are: a loop that moved into another function (an
    inlining decision changed) with the same instructions is the same loop."""
    bl, nl = db[0], dn[0]
    if bl == nl:
        return False, []
    left = Counter(tuple(b) for _, b in nl)
    only_base = []
    for key, body in bl:
        if left[tuple(body)] > 0:
            left[tuple(body)] -= 1
        else:
            only_base.append((key, body))
    remaining = Counter(tuple(b) for _, b in bl)
    only_new = []
    for key, body in nl:
        if remaining[tuple(body)] > 0:
            remaining[tuple(body)] -= 1
        else:
            only_new.append((key, body))
    if not only_base and not only_new:
        return False, []
    if Counter(canon(b) for _, b in only_base) == Counter(canon(b) for _, b in only_new):
        return True, [f"register names only: {len(only_base)} of {len(bl)} loops have the same "
                      f"instructions with other registers"]
    report = [f"{len(only_base)} of {len(bl)} loops of BASE have no equal loop in NEW "
              f"({len(only_new)} of {len(nl)} the other way):",
              f"BASE's: {summary(only_base)}", f"NEW's: {summary(only_new)}"]
    shown = 0
    pending = list(only_new)
    for kb, lb in only_base:
        if shown >= diff_lines:
            report.append(f"... (--diff-lines {diff_lines} reached)")
            break
        if not pending:
            report.append(f"only in BASE: {kb} ({len(lb)} instructions)")
            shown += 1
            continue
        best = max(range(len(pending)), key=lambda j: difflib.SequenceMatcher(None, lb, pending[j][1]).ratio())
        kn, ln = pending.pop(best)
        diff = list(difflib.unified_diff(lb, ln, f"BASE {kb}", f"NEW {kn}", lineterm="", n=3))
        room = diff_lines - shown
        report += diff[:room]
        if len(diff) > room:
            report.append(f"... ({len(diff) - room} more lines of this loop's diff)")
        shown += min(len(diff), room)
    for kn, ln in pending:
        if shown >= diff_lines:
            break
        report.append(f"only in NEW: {kn} ({len(ln)} instructions)")
        shown += 1
    return True, report


def workloads(binary):
    return sorted(n for n in binary.by_name if n.startswith("tad_cg_"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="BASE NEW, or with --show: BINARY [WORKLOAD]")
    ap.add_argument("--show", action="store_true", help="print the normalized loops of one build")
    ap.add_argument("--label", default="", help="printed before each line (e.g. the compiler)")
    ap.add_argument("--diff-lines", type=int, default=40)
    ap.add_argument("--cold", default=DEFAULT_COLD, help="regex of functions whose loops are prologue")
    ap.add_argument("--roots", help="regex of the functions to compare (demangled names) instead of the "
                    "tad_cg_ workloads: two builds of a benchmark binary, e.g. --roots '^void W1_tad<'")
    args = ap.parse_args()
    cold = re.compile(args.cold)
    label = f"{args.label}: " if args.label else ""

    if args.show:
        b = Binary(args.binaries[0])
        names = [f"tad_cg_{args.binaries[1]}"] if len(args.binaries) > 1 else workloads(b)
        for n in names:
            d = describe(b, n, cold)
            if d is None:
                sys.exit(f"loops.py: {args.binaries[0]} has no function {n}")
            print(f"##### {n}")
            for key, lines in d[0]:
                print(f"== {key}")
                print("\n".join("  " + s for s in lines))
        return 0
    if len(args.binaries) != 2:
        ap.error("give BASE and NEW binaries")

    pairs = []  # (workload, BASE binary or None, NEW binary or None, root function)
    if args.roots:
        # The benchmark binaries' own code: g++'s inlining there can differ from the harness's
        # (decisions.md 62: xsimd's sin kernel out of line in bench.w1_elementwise only).
        base, new = Binary(args.binaries[0]), Binary(args.binaries[1])
        roots = re.compile(args.roots)
        for n in sorted(n for n in set(base.by_name) | set(new.by_name) if roots.search(n)):
            pairs.append((n, base, new, n))
    elif os.path.isdir(args.binaries[0]) and os.path.isdir(args.binaries[1]):
        stems = [{f[:-2] for f in os.listdir(d) if f.endswith(".x")} for d in args.binaries]
        for w in sorted(stems[0] | stems[1]):
            pairs.append((w, *(Binary(os.path.join(d, w + ".x")) if w in st else None
                               for d, st in zip(args.binaries, stems)), "tad_cg_" + w))
    else:
        base, new = Binary(args.binaries[0]), Binary(args.binaries[1])
        for n in sorted(set(workloads(base)) | set(workloads(new))):
            pairs.append((n[len("tad_cg_"):], base, new, n))
    if not pairs:
        sys.exit("loops.py: no function to compare" + (f" matches --roots {args.roots}" if args.roots else ""))
    changed = False
    for w, base, new, n in pairs:
        db = describe(base, n, cold) if base else None
        dn = describe(new, n, cold) if new else None
        if db is None or dn is None:
            print(f"{label}{w}: only in {'NEW' if db is None else 'BASE'} (not compared)")
            continue
        nloops = len(dn[0])
        loops_changed, report = compare(db, dn, args.diff_lines)
        if loops_changed:
            changed = True
            renamed = len(report) == 1 and report[0].startswith("register names only")
            print(f"{label}{w}: {'loops changed in register names only' if renamed else 'loops changed'}")
            for s in report:
                print("    " + s)
        elif db[1] != dn[1]:
            moved = "" if [k for k, _ in db[0]] == [k for k, _ in dn[0]] else \
                ", some now in other functions (inlining changed)"
            print(f"{label}{w}: prologue changed only ({nloops} loops same{moved})")
        else:
            print(f"{label}{w}: same ({nloops} loops)")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
