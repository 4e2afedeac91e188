// Consumer smoke test: the umbrella header compiles and links through tad::tad.
#include <tad/tad.hpp>

int main() { return 0; }
