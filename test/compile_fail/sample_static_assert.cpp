// Sample compile-fail test: proves the harness (test/CMakeLists.txt). Replace it with real ones.
// TAD_EXPECT: tad::sample: this must fail
#ifdef TAD_SHOULD_FAIL
static_assert(sizeof(int) == 0, "tad::sample: this must fail");
#endif
int main() {}
