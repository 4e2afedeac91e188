#pragma once
// TAD_TEST_TSAN: defined when the TU is built with ThreadSanitizer (g++ or clang++), whose
// runtime defines operator new: the tests that count allocations leave the counter out there.
#if defined(__SANITIZE_THREAD__)
#define TAD_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TAD_TEST_TSAN 1
#endif
#endif
