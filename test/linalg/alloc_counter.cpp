// The allocation counter of test.linalg (see support/alloc_counter.hpp).
#include "support/alloc_counter.ipp"
