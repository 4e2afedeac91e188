// GradBench's lse: logsumexp of a vector x, and its gradient (the softmax of x). tad: one
// expression, `tad::logsumexp(x)`, its value by tad::value and its gradient by tad::grad_into
// into a buffer allocated once.
#include "tool.hpp"

#include <tad/tad.hpp>

#include <memory>
#include <vector>

namespace {

struct state {
  std::vector<double> x, g;
  double value = 0;
  explicit state(const tad_gradbench::json& in) : x(in["x"].get<std::vector<double>>()), g(x.size()) {}
  auto expression() const { return tad::logsumexp(tad::var<"x">(x)); }
};

}  // namespace

int main(int argc, char** argv) {
  using tad_gradbench::json;
  const auto prepare = [](const json& in) { return std::make_unique<state>(in); };
  return tad_gradbench::main_of(
      argc, argv,
      {{"primal",
        [&](const json& in) {
          return tad_gradbench::measure(
              in, prepare, [](state& s) { s.value = tad::value(s.expression()); },
              [](const state& s) { return json(s.value); });
        }},
       {"gradient", [&](const json& in) {
          return tad_gradbench::measure(
              in, prepare,
              [](state& s) {
                const auto e = s.expression();
                s.value = tad::grad_into(e, tad::wrt(tad::var<"x">(s.x), s.g));
              },
              [](const state& s) { return json(s.g); });
        }}});
}
