// Definitions for alloc_counter.hpp: include in exactly one TU per test executable.
#include "support/alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> tad_counting{false};
std::atomic<long> tad_allocations{0};
}  // namespace

void tad_test::alloc_counter::start() {
  tad_allocations = 0;
  tad_counting = true;
}
long tad_test::alloc_counter::stop() {
  tad_counting = false;
  return tad_allocations.load();
}

void* operator new(std::size_t n) {
  if (tad_counting.load(std::memory_order_relaxed)) tad_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
