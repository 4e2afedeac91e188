// Placeholder: a teammate replaces this with the real demo (tools/demo.sh runs it).
#include <tad/tad.hpp>

#include <cstdio>

int main() {
  std::puts("tad demo");
  return 0;
}
