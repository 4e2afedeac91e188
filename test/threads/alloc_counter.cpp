// The counting operator new, in a TU of its own so that it is not inlined into the code under
// test. Left out under ThreadSanitizer, whose runtime defines operator new (products.cpp then
// counts nothing).
#include <support/tsan.hpp>
#ifndef TAD_TEST_TSAN
#include "support/alloc_counter.ipp"
#endif
