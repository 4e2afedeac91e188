// A product's rule cannot be overridden yet (its backward is two GEMMs, not an elementwise
// rule); override_gradients says so and names the ways that work.
// TAD_EXPECT: the rule of a matrix product \(tad::matmul_op, tad::outer_op\) cannot be overridden yet
#include <tad/linalg.hpp>

#include <boost/hana.hpp>

#include <vector>

int main() {
  namespace hana = boost::hana;
  std::vector<double> xs(6, 0.5), ws(6, 0.25);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 3, 2);
  auto e = tad::sum(tad::tanh(tad::matmul(X, W)));
#ifdef TAD_SHOULD_FAIL
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, [](auto dy, auto, auto, auto) {
    return tad::adjoints{dy, dy};
  }));
#else
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::tanh_op>, [](auto dy, auto, auto) { return dy; }));
#endif
  auto [v, g] = tad::grad(tad::override_gradients(e, rules), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
