// The allocation counter of test.eval (see support/alloc_counter.hpp).
#include "support/alloc_counter.ipp"
