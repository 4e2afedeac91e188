// Gradient surgery: modifiers whose backward differs from the derivative of their forward
// (doc/gradient-surgery.md). Checks its own numbers; returns 1 if one is wrong.
#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <cmath>
#include <cstdio>
#include <string_view>
#include <string>
#include <tuple>
#include <vector>

// [new primitive]
// log(1 + e^x) without overflow for large x, with its own derivative: a new op, defined once.
// forward and backward are written once for scalars and SIMD batches (tad::math dispatches).
struct log1pexp_op {
  static constexpr std::string_view name = "log1pexp";
  static constexpr auto forward(auto x) {
    using V = decltype(x);
    return tad::math::max(x, V(0)) + tad::math::log1p(tad::math::exp(-tad::math::abs(x)));
  }
  static constexpr auto backward(auto dy, auto x, auto /*y*/) { return dy * tad::math::sigmoid(x); }
};
template <class X>
constexpr auto log1pexp(const X& x) {
  return tad::apply<log1pexp_op>(x);  // a node like tad::exp(x)
}
// Checked at compile time: the derivative at 0 is sigmoid(0) = 1/2.
static_assert([] {
  double x0 = 0.0;
  auto x = tad::var<"x">(x0);
  return std::get<1>(tad::grad(log1pexp(x), x));
}() == 0.5);
// [new primitive]

namespace {
int failures = 0;
void check(const char* what, double got, double want) {
  const bool ok = std::abs(got - want) <= 1e-12 * (1 + std::abs(want));
  std::printf("%-44s %12.9f  %s\n", what, got, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}
}  // namespace

int main() {
  {
    // [stop_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(x * tad::stop_gradient(x), x);  // x^2, but only one factor is differentiated
    // v == 9, g == 3
    // [stop_gradient]
    check("stop_gradient: value of x * stop(x)", v, 9.0);
    check("stop_gradient: gradient", g, 3.0);
  }
  {
    // [scale_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::scale_gradient(x, 5.0), x);  // identity; backward 5 * dy
    // v == 3, g == 5
    // [scale_gradient]
    check("scale_gradient: value", v, 3.0);
    check("scale_gradient: gradient", g, 5.0);
  }
  {
    // [clip_gradient]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::clip_gradient(x, -0.1, 0.1), x);  // backward clip(dy, -0.1, 0.1)
    auto [v1, g1] = tad::grad(1.0 * x, x);                           // without it
    // v == 3, g == 0.1; g1 == 1
    // [clip_gradient]
    check("clip_gradient: value", v, 3.0);
    check("clip_gradient: gradient", g, 0.1);
    check("without clip_gradient: value", v1, 3.0);
    check("without clip_gradient: gradient", g1, 1.0);
  }
  {
    // [scale with stop_gradient]
    // The identity with gradient l, written with stop_gradient alone:
    auto shrink_gradient = [](auto x, double l) { return tad::stop_gradient(x * (1 - l)) + x * l; };
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(shrink_gradient(x, 0.25), x);
    // v == 3, g == 0.25
    // [scale with stop_gradient]
    check("stop_gradient(x * (1 - l)) + x * l: value", v, 3.0);
    check("stop_gradient(x * (1 - l)) + x * l: gradient", g, 0.25);
  }
  {
    // [straight_through]
    double xv = 2.7;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::straight_through(tad::round(x), x), x);  // round forward, identity backward
    // v == 3, g == 1
    // [straight_through]
    check("straight_through(round(x), x): value", v, 3.0);
    check("straight_through(round(x), x): gradient", g, 1.0);
  }
  {
    // [reverse_gradient]
    std::vector<double> features{0.5, -1.0, 2.0};
    auto f = tad::var<"f">(features);
    double lambda = 0;
    // Built once; lambda is re-read at every evaluation.
    auto loss = tad::sum(tad::square(tad::reverse_gradient(f, tad::constant_ref(lambda))));
    for (double p : {0.0, 0.25, 0.5, 1.0}) {
      lambda = tad::reversal_strength(p);  // 2 / (1 + exp(-10 p)) - 1
      auto [v, df] = tad::grad(loss, f);   // df[i] == -lambda * 2 * features[i]
      std::printf("p = %.2f  lambda = %.9f  loss = %.4f  df[2] = %.9f\n", p, lambda, v, df[2]);
      check("  loss", v, 0.25 + 1.0 + 4.0);
      check("  df[2] = -lambda * 2 * 2", df[2], -4.0 * std::tanh(5.0 * p));
    }
    // [reverse_gradient]
    check("reversal_strength(0)", tad::reversal_strength(0.0), 0.0);
    check("reversal_strength(0.25)", tad::reversal_strength(0.25), 0.848283639957513);
    check("reversal_strength(0.5)", tad::reversal_strength(0.5), 0.986614298151430);
    check("reversal_strength(1)", tad::reversal_strength(1.0), 0.999909204262595);
  }
  {
    // [custom_gradient]
    // The identity whose backward is 5 * dy, and the identity whose backward clips dy.
    auto times5 = tad::custom_gradient([](auto x) { return x; },                         // forward
                                       [](auto dy, auto /*x*/, auto /*y*/) { return 5 * dy; });  // backward
    auto clip_dy = tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) {
      using D = decltype(dy);  // a number, or a SIMD batch inside array loops
      return tad::simd::select(dy < D(-0.1), D(-0.1), tad::simd::select(dy > D(0.1), D(0.1), dy));
    });
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(times5(x), x);   // v == 3, g == 5
    auto [v1, g1] = tad::grad(clip_dy(x), x);  // v1 == 3, g1 == 0.1
    // [custom_gradient]
    check("custom_gradient 5 * dy: value", v, 3.0);
    check("custom_gradient 5 * dy: gradient", g, 5.0);
    check("custom_gradient clip(dy): value", v1, 3.0);
    check("custom_gradient clip(dy): gradient", g1, 0.1);
  }
  {
    // [custom_gradient inputs]
    // Several inputs: one adjoint each, tad::zero for an input that gets none. The rule reads
    // the inputs a, b and the output y.
    auto scaled_product = tad::custom_gradient(
        [](auto a, auto b) { return a * b; },
        [](auto dy, auto /*a*/, auto b, auto /*y*/) { return tad::adjoints{dy * b, tad::zero{}}; });
    std::vector<double> av{1, 2, 3}, bv{4, 5, 6};
    auto a = tad::var<"a">(av);
    auto b = tad::var<"b">(bv);
    auto loss = tad::sum(scaled_product(a, b));
    static_assert(tad::gradient_is_zero_v<decltype(loss), decltype(b)>);  // no code for b
    auto [v, ga, gb] = tad::grad(loss, a, b);  // v == 32, ga == b, gb == {0, 0, 0}
    // [custom_gradient inputs]
    check("custom_gradient a * b: value", v, 32.0);
    check("custom_gradient a * b: d/da[1]", ga[1], 5.0);
    check("custom_gradient a * b: d/db[1]", gb[1], 0.0);
  }
  {
    // [override_gradients]
    namespace hana = boost::hana;
    // gradient_override_map({"Identity": ...}) as a Hana map from op type to backward rule.
    auto times5 = hana::make_map(hana::make_pair(hana::type_c<tad::identity_op>,
                                                 [](auto dy, auto /*x*/, auto /*y*/) { return 5 * dy; }));
    auto clip_dy = hana::make_map(hana::make_pair(hana::type_c<tad::identity_op>, [](auto dy, auto, auto) {
      using D = decltype(dy);
      return tad::simd::select(dy < D(-0.1), D(-0.1), tad::simd::select(dy > D(0.1), D(0.1), dy));
    }));
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto [v, g] = tad::grad(tad::override_gradients(tad::identity(x), times5), x);    // v == 3, g == 5
    auto [v1, g1] = tad::grad(tad::override_gradients(tad::identity(x), clip_dy), x);  // g1 == 0.1
    auto [v2, g2] = tad::grad(tad::identity(x), x);                                    // g2 == 1
    // Only inside the scope: the identity outside keeps its gradient 1.
    auto [v3, g3] = tad::grad(tad::override_gradients(tad::identity(x), times5) + tad::identity(x), x);  // g3 == 6
    // [override_gradients]
    check("override identity 5 * dy: value", v, 3.0);
    check("override identity 5 * dy: gradient", g, 5.0);
    check("override identity clip(dy): value", v1, 3.0);
    check("override identity clip(dy): gradient", g1, 0.1);
    check("identity without override: gradient", g2, 1.0);
    check("override scope: value", v3, 6.0);
    check("override scope: gradient 5 + 1", g3, 6.0);
  }
  {
    // [new primitive use]
    std::vector<double> xs{-800, 0, 800};  // log(1 + e^800) overflows when written naively
    auto x = tad::var<"x">(xs);
    auto [v, g] = tad::grad(tad::sum(log1pexp(x)), x);  // v == log 2 + 800, g == {0, 0.5, 1}
    // [new primitive use]
    check("log1pexp: value", v, std::log(2.0) + 800);
    check("log1pexp: gradient at -800", g[0], 0.0);
    check("log1pexp: gradient at 0", g[1], 0.5);
    check("log1pexp: gradient at 800", g[2], 1.0);
  }
  {
    // [strip_gradient_modifiers]
    double xv = 3.0;
    auto x = tad::var<"x">(xv);
    auto modified = tad::clip_gradient(x * x, -0.1, 0.1) + tad::stop_gradient(x * x);
    auto [v, g] = tad::grad(modified, x);                                  // g == 2x * 0.1 == 0.6
    auto [vt, gt] = tad::grad(tad::strip_gradient_modifiers(modified), x);  // gt == 2x + 2x == 12
    auto [vs, gs] = tad::grad(tad::strip_gradient_modifiers(modified, tad::keep_stop_gradient), x);  // gs == 6
    // [strip_gradient_modifiers]
    check("modified: gradient", g, 0.6);
    check("stripped: value", vt, 18.0);
    check("stripped: gradient", gt, 12.0);
    check("stripped, stops kept: gradient", gs, 6.0);
  }
  {
    std::vector<double> xs{4.0, 0.0, -1.0};
    auto x = tad::var<"x">(xs);
    // [double where]
    // where(x > 0, sqrt(x), 0): the gradient at x <= 0 is 0 * sqrt'(x) = 0 * inf or 0 * NaN = NaN.
    auto trap = tad::sum(tad::where(x > 0, tad::sqrt(x), 0));
    // The double where: sqrt only ever sees positive inputs, so its derivative is finite.
    auto safe = tad::sum(tad::where(x > 0, tad::sqrt(tad::where(x > 0, x, 1)), 0));
    // [double where]
    auto [vt, gt] = tad::grad(trap, x);
    auto [vs, gs] = tad::grad(safe, x);
    check("where(x > 0, sqrt(x), 0): value", vt, 2.0);
    check("where: gradient at 4", gt[0], 0.25);
    check("where: gradient at 0 is NaN (0 * inf)", std::isnan(gt[1]) ? 1.0 : 0.0, 1.0);
    check("where: gradient at -1 is NaN (0 * NaN)", std::isnan(gt[2]) ? 1.0 : 0.0, 1.0);
    check("double where: value", vs, 2.0);
    check("double where: gradient at 4", gs[0], 0.25);
    check("double where: gradient at 0", gs[1], 0.0);
    check("double where: gradient at -1", gs[2], 0.0);
  }
  {
    // [let]
    double xv = 2.0;
    auto x = tad::var<"x">(xv);
    // One node, used twice: its rule runs once, on the sum of the adjoints (1 + 1 = 2).
    auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
    auto [v, g] = tad::grad(c + c, x);  // g == clip(2) == 1, as TensorFlow and PyTorch
    // Two copies, each a node of its own (per_use): each clips its own share. Without per_use
    // or let, two copies of one clip_gradient are a compile error.
    auto u = tad::per_use(tad::clip_gradient(x, -1.0, 1.0));
    auto [vu, gu] = tad::grad(u + u, x);  // gu == clip(1) + clip(1) == 2
    std::string shown = tad::to_string(c + c);  // "c + c where c = clip_gradient(x, -1, 1)"
    // [let]
    check("let: value", v, 4.0);
    check("let: gradient", g, 1.0);
    check("unshared copies: value", vu, 4.0);
    check("unshared copies: gradient", gu, 2.0);
    check("let: printed", shown == "c + c where c = clip_gradient(x, -1, 1)" ? 1.0 : 0.0, 1.0);
  }
  {
    // [clipped logits]
    std::vector<double> logits{1.0, -0.5, 2.0, 0.3}, target{0.0, 0.0, 1.0, 0.0};
    auto z = tad::var<"z">(logits);
    // The loss reads its logits twice (logsumexp and the target's term); the clip runs once,
    // on their summed adjoint softmax(z) - target, as in TensorFlow and PyTorch.
    auto loss = tad::softmax_cross_entropy(tad::clip_gradient(z, -0.2, 0.2), tad::constant(target));
    auto [v, dz] = tad::grad(loss, z);  // [0.2, 0.0503, -0.2, 0.1119]
    // [clipped logits]
    double total = 0;
    for (double a : logits) total += std::exp(a);
    check("clipped logits: value", v, std::log(total) - 2.0);
    check("clipped logits: dz[0] (0.225 clipped)", dz[0], 0.2);
    check("clipped logits: dz[1]", dz[1], std::exp(-0.5) / total);
    check("clipped logits: dz[2] (0.612 - 1 clipped)", dz[2], -0.2);
    check("clipped logits: dz[3]", dz[3], std::exp(0.3) / total);
  }
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
