// GradBench's lse: logsumexp of a vector x, and its gradient (the softmax of x). tad: one
// expression, `tad::logsumexp(x)`, its value by tad::value and its gradient by tad::grad_into
// into a buffer allocated once.
#include "tool.hpp"

#include <tad/tad.hpp>

#include <vector>

namespace {

struct state {
  std::vector<double> x, g;
  double value = 0;
  explicit state(const tad_gradbench::json& in) : x(in["x"].get<std::vector<double>>()), g(x.size()) {}
  auto expression() const { return tad::logsumexp(tad::var<"x">(x)); }
  void primal() { value = tad::value(expression()); }
  void gradient() { value = tad::grad_into(expression(), tad::wrt(tad::var<"x">(x), g)); }
  tad_gradbench::json primal_output() const { return value; }
  tad_gradbench::json gradient_output() const { return g; }
};

}  // namespace

int main(int argc, char** argv) { return tad_gradbench::serve<state>(argc, argv, "primal", "gradient"); }
