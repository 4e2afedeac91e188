// A product's rule is called as rule(dY, A, B, Y) with Eigen expressions (doc/linear-algebra.md);
// a rule written for an elementwise binary op, rule(dy, a, b) without Y, is not: the diagnostic
// says how a product's rule is called.
// TAD_EXPECT: a rule for a matrix product \(tad::matmul_op, tad::outer_op\) is called as rule\(dY, A, B, Y\)
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
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, [](const auto& dy, const auto& a, const auto& b) {
    return tad::adjoints{dy * b.transpose(), a.transpose() * dy};
  }));
#else
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, [](const auto& dy, const auto& a, const auto& b, const auto&) {
    return tad::adjoints{dy * b.transpose(), a.transpose() * dy};
  }));
#endif
  auto [v, g] = tad::grad(tad::override_gradients(e, rules), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
