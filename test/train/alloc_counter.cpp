// The allocation counter of test.train (see support/alloc_counter.hpp).
#include "support/alloc_counter.ipp"
