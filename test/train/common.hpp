#pragma once
// Shared by the training tests: the tolerance for comparing an update computed in T with the
// same formula evaluated in the test (a few roundings of T).
#include <support/check.hpp>

#include <type_traits>

namespace train_test {
template <class T>
double tol() {
  return std::is_same_v<T, float> ? 2e-6 : 1e-14;
}
}  // namespace train_test
