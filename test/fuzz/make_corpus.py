#!/usr/bin/env python3
"""Writes the seed corpus of the expression fuzzer (test/fuzz/corpus/).

    python3 test/fuzz/make_corpus.py [--family-size N] [--out DIR]

Input format (test/fuzz/README.md, expressions.cpp `decode_header` and `value_stream`):
    byte 0  expression (modulo the family size)
    byte 1  bit 0 double (else float), bit 1 long array (1000 + byte 3 % 64 elements),
            bit 2 padding values positive only
    byte 2  bits 0-2 misalignment of x in elements, bits 3-5 of y
    byte 3  length (modulo 71) unless long
    then    values s, k, lo, hi, x[0..n), y[0..n): 3 bytes each (selector, 16-bit payload,
            little endian); past the end of the input the fuzzer pads with moderate values.

The matrix family (test/fuzz/shapes.cpp): byte 1 bit 3 set; byte 0 the expression (modulo its
size), byte 2 bits 6-7 the row padding (0, 1, 3, 8), bytes 3 and 4 rows and columns (modulo 41),
then s, k, lo, hi, b[0..cols), v[0..rows), X and Y row by row (doc/testing.md "Input format").

For every expression: moderate values of mixed sign, moderate positive values (the domains of
log, sqrt, pow, so central differences run), and special values (NaN, +-inf, +-0, subnormals,
huge, tiny, ties, points near k pi/2 and exp's thresholds, reversed clip bounds), at lengths
around the SIMD widths and all misalignments; every fourth expression also at a long length.
Deterministic: the same files every run. Python 3 standard library only.
"""

import argparse
import os
import random
import re

# The number of entries of `family` in expressions.cpp and in shapes.cpp (`fuzz.replay --list`
# prints them).
FAMILY_SIZE = 59
SHAPES_FAMILY_SIZE = 22
LENGTHS = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17]
# rows x cols of the matrix family (issue 15's shapes around the SIMD width; 33 x 3 and the large
# one have their own inputs).
SHAPES = [(0, 4), (4, 0), (1, 1), (3, 5), (4, 8), (7, 9), (16, 17), (5, 16), (9, 15), (2, 33), (17, 1)]
ROW_PADS = [0, 1, 3, 8]  # ld - cols, byte 2 bits 6-7

# Selector kinds (the low 7 bits of a value's first byte; bit 7 is the sign).
NAN, INF, ZERO, DENORM_MIN, SUBNORMAL, MIN, MAX, E30, HUGE, TINY, SMALL = range(64, 75)
NEAR_PI2, TIE_PREV, TIE_PARTNER, ANY_FINITE, EXP_THRESHOLD = range(75, 80)
INT_OR_HALF = 80
LARGE = 88


def value(kind, negative=False, payload=0):
    payload &= 0xFFFF
    return bytes([(0x80 if negative else 0) | kind, payload & 0xFF, payload >> 8])


def moderate(rng, positive=False):
    """(1 + f) 2^e with e in [-9, 3]: |v| in [0.002, 16)."""
    e = rng.randrange(13)  # kind % 13 == e + 9
    return value(e, negative=(not positive and rng.random() < 0.5), payload=rng.randrange(65536))


def special(rng):
    kind = rng.choice([NAN, INF, ZERO, DENORM_MIN, SUBNORMAL, MIN, MAX, E30, HUGE, TINY, SMALL,
                       NEAR_PI2, TIE_PREV, TIE_PARTNER, ANY_FINITE, EXP_THRESHOLD, INT_OR_HALF,
                       LARGE + rng.randrange(4)])
    return value(kind, negative=rng.random() < 0.5, payload=rng.randrange(65536))


def header(expr, dbl, n, offx, offy, pad_positive=False):
    flags = (1 if dbl else 0) | (4 if pad_positive else 0)
    if n >= 1000:
        flags |= 2
        length = n - 1000
    else:
        length = n
    return bytes([expr, flags, offx | (offy << 3), length])


def scalars(rng, positive, specials):
    """s, k, lo, hi: moderate (lo < 0 < hi), or special (clip bounds may be reversed or NaN)."""
    if specials:
        return b"".join(special(rng) if rng.random() < 0.6 else moderate(rng) for _ in range(4))
    s = moderate(rng, positive)
    k = moderate(rng)
    lo = value(rng.randrange(13), negative=True, payload=rng.randrange(65536))
    hi = value(rng.randrange(13), negative=False, payload=rng.randrange(65536))
    return s + k + lo + hi


def inputs(expr, rng):
    """(name, bytes) of the seed inputs of one expression."""
    out = []
    # moderate values of mixed sign
    n = LENGTHS[expr % len(LENGTHS)]
    dbl = expr % 2 == 0
    data = header(expr, dbl, n, expr % 8, (expr * 3) % 8) + scalars(rng, False, False)
    data += b"".join(moderate(rng) for _ in range(2 * n))
    out.append((f"{expr:02d}-moderate-{'d' if dbl else 'f'}{n}", data))
    # moderate positive values: log, sqrt, pow's domains; central differences run
    n = LENGTHS[(expr + 4) % len(LENGTHS)]
    dbl = not dbl
    data = header(expr, dbl, n, (expr + 1) % 8, (expr + 5) % 8, pad_positive=True) + scalars(rng, True, False)
    data += b"".join(moderate(rng, positive=True) for _ in range(2 * n))
    out.append((f"{expr:02d}-positive-{'d' if dbl else 'f'}{n}", data))
    # special values mixed with moderate ones
    n = max(LENGTHS[(expr + 7) % len(LENGTHS)], 3)
    dbl = (expr // 2) % 2 == 0
    data = header(expr, dbl, n, (expr + 3) % 8, (expr + 6) % 8) + scalars(rng, False, True)
    data += b"".join(special(rng) if rng.random() < 0.5 else moderate(rng) for _ in range(2 * n))
    out.append((f"{expr:02d}-special-{'d' if dbl else 'f'}{n}", data))
    # long arrays (padded with moderate values past the explicit ones)
    if expr % 4 == 0:
        n = 1000 + (expr * 7) % 64
        dbl = expr % 8 == 0
        data = header(expr, dbl, n, (expr + 2) % 8, (expr + 7) % 8, pad_positive=True)
        data += scalars(rng, True, False) + b"".join(moderate(rng, positive=True) for _ in range(16))
        out.append((f"{expr:02d}-long-{'d' if dbl else 'f'}{n}", data))
    return out


def shapes_header(expr, dbl, rows, cols, offx, offy, pad, pad_positive=False, large=False):
    flags = 8 | (1 if dbl else 0) | (4 if pad_positive else 0) | (2 if large else 0)
    if large:
        rows, cols = rows - 40, cols - 200
    return bytes([expr, flags, offx | (offy << 3) | (ROW_PADS.index(pad) << 6), rows, cols])


def shapes_inputs(expr, rng):
    """(name, bytes) of the seed inputs of one expression of the matrix family (byte 1 bit 3)."""
    out = []

    def body(rows, cols, scal, gen):
        return scal + b"".join(gen() for _ in range(cols + rows + 2 * rows * cols))

    # moderate values of mixed sign, dense
    rows, cols = SHAPES[expr % len(SHAPES)]
    dbl = expr % 2 == 0
    data = shapes_header(expr, dbl, rows, cols, expr % 8, (expr * 3) % 8, 0)
    data += body(rows, cols, scalars(rng, False, False), lambda: moderate(rng))
    out.append((f"m{expr:02d}-moderate-{'d' if dbl else 'f'}{rows}x{cols}", data))
    # moderate positive values, strided rows
    rows, cols = SHAPES[(expr + 4) % len(SHAPES)]
    pad = ROW_PADS[1 + expr % 3]
    dbl = not dbl
    data = shapes_header(expr, dbl, rows, cols, (expr + 1) % 8, (expr + 5) % 8, pad, pad_positive=True)
    data += body(rows, cols, scalars(rng, True, False), lambda: moderate(rng, positive=True))
    out.append((f"m{expr:02d}-positive-{'d' if dbl else 'f'}{rows}x{cols}-ld{cols + pad}", data))
    # special values mixed with moderate ones
    rows, cols = SHAPES[(expr + 7) % len(SHAPES)]
    rows, cols = max(rows, 2), max(cols, 3)
    dbl = (expr // 2) % 2 == 0
    pad = ROW_PADS[expr % 4]
    data = shapes_header(expr, dbl, rows, cols, (expr + 3) % 8, (expr + 6) % 8, pad)
    data += body(rows, cols, scalars(rng, False, True), lambda: special(rng) if rng.random() < 0.3 else moderate(rng))
    out.append((f"m{expr:02d}-special-{'d' if dbl else 'f'}{rows}x{cols}-ld{cols + pad}", data))
    # 33 x 3 (rows beyond four blocks of the widest SIMD width)
    dbl = expr % 3 == 0
    data = shapes_header(expr, dbl, 33, 3, (expr + 4) % 8, (expr + 1) % 8, ROW_PADS[(expr + 1) % 4])
    data += body(33, 3, scalars(rng, False, False), lambda: moderate(rng))
    out.append((f"m{expr:02d}-tall-{'d' if dbl else 'f'}33x3", data))
    # a large matrix, padded with moderate values past the explicit ones
    if expr % 4 == 0:
        rows, cols = 40 + (expr * 5) % 32, 200 + (expr * 7) % 64
        dbl = expr % 8 == 0
        data = shapes_header(expr, dbl, rows, cols, (expr + 2) % 8, (expr + 7) % 8, ROW_PADS[expr % 4],
                             pad_positive=True, large=True)
        data += scalars(rng, True, False) + b"".join(moderate(rng, positive=True) for _ in range(16))
        out.append((f"m{expr:02d}-large-{'d' if dbl else 'f'}{rows}x{cols}", data))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family-size", type=int, default=FAMILY_SIZE)
    ap.add_argument("--shapes-family-size", type=int, default=SHAPES_FAMILY_SIZE)
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # Regenerates its own files (NN-* and mNN-*); inputs added by hand (named otherwise, e.g.
    # sce-long-rounding) stay. Crash files live in crashes/.
    for name in os.listdir(args.out):
        if re.match(r"m?\d\d-", name):
            os.remove(os.path.join(args.out, name))
    count = size = 0
    # Each family from its own random stream: one changing leaves the other's files as they were.
    for family_size, family_inputs, seed in [(args.family_size, inputs, 20240611),
                                             (args.shapes_family_size, shapes_inputs, 20261204)]:
        rng = random.Random(seed)
        for expr in range(family_size):
            for name, data in family_inputs(expr, rng):
                with open(os.path.join(args.out, name), "wb") as f:
                    f.write(data)
                count += 1
                size += len(data)
    print(f"{count} files, {size} bytes in {args.out}")


if __name__ == "__main__":
    main()
