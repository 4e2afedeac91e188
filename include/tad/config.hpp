#pragma once
/// Version and configuration macros.

#define TAD_VERSION_MAJOR 0
#define TAD_VERSION_MINOR 1
#define TAD_VERSION_PATCH 0

/// Number of independent SIMD accumulators (and batches per loop iteration) of each pass.
#ifndef TAD_UNROLL
#define TAD_UNROLL 2
#endif
/// Expressions of more leaves than this run one batch per loop iteration: their unrolled
/// values and adjoints no longer fit in the vector registers, and the spills cost more than
/// the second accumulator gains (an RK4 step's vector-Jacobian product, 17 leaves: 2.2x
/// faster at one batch; decisions.md 67).
#ifndef TAD_UNROLL_MAX_LEAVES
#define TAD_UNROLL_MAX_LEAVES 16
#endif

/// The most bytes of one block of rows of an axis point's argument (SIMD-width rows) that a
/// backward pass sweeps as a block (engine::point_loop): a block is swept forward, then
/// backward, and must stay in L1 in between (with the gradient rows it writes). Longer rows
/// run one at a time.
#ifndef TAD_POINT_BLOCK_BYTES
#define TAD_POINT_BLOCK_BYTES 16384
#endif

/// Batches of columns per block of a loop over the columns of reductions along axis 0
/// (engine::down_loop): each sweep down the rows reads this many batches of each row, one
/// contiguous run, before it moves to the next row.
#ifndef TAD_DOWN_BATCHES
#define TAD_DOWN_BATCHES 8
#endif

/// Forces inlining of the per-element code, so that each loop body is one function whose
/// accumulators and loop invariants live in registers.
///
/// Define TAD_NO_FORCE_INLINE (before any tad header, in every TU of a program) to leave that
/// to the compiler's inliner: the same results, slower loops (no longer one function each),
/// and faster compiles where the optimizer's time is most of a TU's, e.g. sanitized builds
/// (clang++ -O1 with ASan and UBSan: a third less; doc/compile-times.md). tad's sanitizer
/// stage builds its tests so (tools/test.sh); keep it off where speed is measured.
#if (defined(__GNUC__) || defined(__clang__)) && !defined(TAD_NO_FORCE_INLINE)
#define TAD_INLINE __attribute__((always_inline)) inline
#define TAD_INLINE_LAMBDA __attribute__((always_inline))
#define TAD_FLATTEN __attribute__((always_inline, flatten))
#else
#define TAD_INLINE inline
#define TAD_INLINE_LAMBDA
#define TAD_FLATTEN
#endif

/// The inlining hint of an engine loop defined out of its class (eval/engine/*.hpp): what the
/// same definition written in the class had, so the split left each compiler's code as it was
/// (doc/decisions.md 34). g++ treats a member function defined in its class as declared inline
/// (its inliner then uses the larger limits); clang++ gives it no hint unless it says `inline`.
#if defined(__clang__)
#define TAD_AS_IN_CLASS
#else
#define TAD_AS_IN_CLASS inline
#endif
