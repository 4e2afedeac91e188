#pragma once
/// Version and configuration macros.

#define TAD_VERSION_MAJOR 0
#define TAD_VERSION_MINOR 1
#define TAD_VERSION_PATCH 0

/// Number of independent SIMD accumulators (and batches per loop iteration) of each pass.
#ifndef TAD_UNROLL
#define TAD_UNROLL 2
#endif
