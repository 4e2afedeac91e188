// The counting operator new, in a TU of its own so that it is not inlined into the code under
// test. Left out under ThreadSanitizer, whose runtime defines operator new (products.cpp then
// counts nothing).
#if defined(__SANITIZE_THREAD__)
#define TAD_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TAD_TEST_TSAN 1
#endif
#endif
#ifndef TAD_TEST_TSAN
#include "support/alloc_counter.ipp"
#endif
