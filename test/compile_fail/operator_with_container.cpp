// An expression times a std::vector: the data must be wrapped in tad::constant or tad::var.
// TAD_EXPECT: tad::operator\*\(a, b\): a and b must be tad expressions or numbers. wrap data .*in tad::constant\(data\) or tad::var
#include <tad/tad.hpp>

#include <vector>

int main() {
  double wv = 2;
  std::vector<double> cs{1, 2};
  auto w = tad::var<"w">(wv);
#ifdef TAD_SHOULD_FAIL
  auto [v, g] = tad::grad(tad::sum(w * cs), w);
#else
  auto [v, g] = tad::grad(tad::sum(w * tad::constant(cs)), w);
#endif
  return v == 6 && g == 3 ? 0 : 1;
}
