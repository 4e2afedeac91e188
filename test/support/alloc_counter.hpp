#pragma once
// Counts heap allocations (global operator new) between start() and stop(). The replacement
// operators live in alloc_counter.ipp, included by exactly one TU of a test executable, so the
// compiler does not inline them into the code under test.

namespace tad_test::alloc_counter {
void start();
/// Stops counting; returns the number of allocations since start().
long stop();
}  // namespace tad_test::alloc_counter
