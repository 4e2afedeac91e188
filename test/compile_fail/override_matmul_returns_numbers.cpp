// A product's rule returns Eigen expressions of A's and B's shapes (or tad::zero{}): numbers
// (a rule written as for a scalar op) are refused with a diagnostic that says so.
// TAD_EXPECT: a matrix product's rule returns Eigen expressions .*not numbers
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
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, [](const auto& dy, const auto&, const auto&, const auto&) {
    return tad::adjoints{dy.sum(), dy.sum()};
  }));
#else
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, [](const auto& dy, const auto& a, const auto& b, const auto&) {
    return tad::adjoints{dy * b.transpose(), a.transpose() * dy};
  }));
#endif
  auto [v, g] = tad::grad(tad::override_gradients(e, rules), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
