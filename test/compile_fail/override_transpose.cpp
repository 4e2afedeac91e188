// tad::transpose_op is a view of a product's operand, not an op with a backward of its own: a
// rule for it is refused, and the diagnostic names the rule to write instead (the product's).
// TAD_EXPECT: tad::transpose_op has no rule of its own.*override the product's \(tad::matmul_op\)
#include <tad/linalg.hpp>

#include <boost/hana.hpp>

#include <vector>

int main() {
  namespace hana = boost::hana;
  std::vector<double> xs(6, 0.5), ws(6, 0.25);
  auto X = tad::constant(xs.data(), 2, 3);
  auto W = tad::var<"W">(ws.data(), 2, 3);
  auto e = tad::sum(tad::tanh(tad::matmul(X, tad::transpose(W))));
  auto product_rule = [](const auto& dy, const auto& a, const auto& b, const auto&) {
    return tad::adjoints{dy * b.transpose(), a.transpose() * dy};
  };
#ifdef TAD_SHOULD_FAIL
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::transpose_op>, product_rule));
#else
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::matmul_op>, product_rule));
#endif
  auto [v, g] = tad::grad(tad::override_gradients(e, rules), W);
  return v > 0 && g.size() == 6 ? 0 : 1;
}
