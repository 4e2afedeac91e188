// One node, one rule, op by op (issue 39, doc/semantics.md "Shared subexpressions"): every op,
// reduction and composite applied to an argument that carries a rule not linear in the adjoint
// runs that rule ONCE, on the argument's summed adjoint. Expected values come from the
// definition: the op's adjoint of its argument by central differences of the plain op (no rule),
// then the rule applied once per element. Rules: clip_gradient(x, -0.2, 0.2), a custom_gradient
// whose rule is dy * dy, and override_gradients giving identity the rule clip(dy, -0.1, 0.1).
// Composites that read their argument twice (softmax_cross_entropy, softmax, log_softmax of a
// vector, and their matrix forms, whose argument is a stage: decisions.md 56) are in the list;
// so are the single-read ops (norms, max/min, where, dot, logsumexp). That the list compiles is
// part of the audit: an op that copied a rule-carrying argument would meet the repeated-rule
// compile error (eval/shared_rules.hpp). Scalars, vectors at lengths around the SIMD width on
// unaligned data, matrices along both axes; float and double. Then the other shapes of sharing
// the engine's loops cannot hold, which a program stages: a vector under a rule broadcast across
// rows, a let of a matrix under a rule used along an axis and elsewhere.
#include <gradient/common.hpp>
#include <support/gradient_check.hpp>
#include <tad/linalg.hpp>

#include <stdexcept>

#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace {

using tad_test::gradient_check::central_differences;

enum class rule { clip, custom, override };

double apply_rule(rule r, double g) {
  switch (r) {
    case rule::clip: return grad_test::clip(g, -0.2, 0.2);
    case rule::custom: return g * g;
    case rule::override: return grad_test::clip(g, -0.1, 0.1);
  }
  return 0;
}

/// The expression op(r(x), w) with the rule r on the variable x. A composite makes its argument
/// one node itself only where tad can compare copies of it (clip_gradient, ops without state);
/// a custom rule's or an override's argument is named with a let, as the repeated-rule error
/// asks (doc/semantics.md): an override given to an op inside a composite already built, and a
/// custom rule, whose captures cannot be compared.
template <rule R, bool Composite, class X, class W, class Op>
auto with_rule(const X& x, const W& w, Op op) {
  using T = tad::value_type_t<X>;
  if constexpr (R == rule::clip) return op(tad::clip_gradient(x, T(-0.2), T(0.2)), w);
  else if constexpr (R == rule::custom && Composite) return op(tad::let<"z">(grad_test::squared_rule(x)), w);
  else if constexpr (R == rule::custom) return op(grad_test::squared_rule(x), w);
  else if constexpr (Composite) return tad::override_gradients(op(tad::let<"z">(tad::identity(x)), w), grad_test::identity_clip);
  else return tad::override_gradients(op(tad::identity(x), w), grad_test::identity_clip);
}

/// Whether every op runs under all three rules. The sanitizer stage (tools/test.sh's clang-san,
/// CMake TAD_TEST_ALL_RULES=OFF) runs each under clip_gradient only: the custom and override
/// nodes' code runs sanitized in custom.cpp, override.cpp and sharing.cpp, and the rules' values
/// per op are checked here in the gcc stage; this TU was the longest of the stage (doc/testing.md).
#ifdef TAD_TEST_ONE_RULE
constexpr bool all_rules = false;
#else
constexpr bool all_rules = true;
#endif

/// Shapes: rows == 0 is a vector of cols elements; rows > 0 a rows x cols matrix.
struct shape {
  std::size_t rows, cols;
  std::size_t size() const { return rows == 0 ? cols : rows * cols; }
};

/// Checks op over the three rules at shape s (All = false: clip_gradient only, for the forms
/// whose gradient runs through a program, each instantiation of which costs the test's build
/// seconds): tad's gradient against the rule applied once to the op's adjoint (central
/// differences in double).
template <class T, bool Matrix, class Op, bool Composite = false, bool All = true>
void check_op(Op op, shape s, const std::string& what) {
  auto xb = grad_test::data<T>(s.size(), -1.5, 1.5, 3);
  auto wb = grad_test::data<T>(s.size(), -1.0, 1.0, 11);
  std::vector<double> xd(xb.begin(), xb.end()), wd(wb.begin(), wb.end());
  // The op's adjoint of its argument, from its plain value in double.
  const auto adjoint = central_differences(xd, [&] {
    if constexpr (Matrix) {
      return tad::value(op(tad::constant(xd.data(), s.rows, s.cols), tad::constant(wd.data(), s.rows, s.cols)));
    } else {
      return tad::value(op(tad::constant(xd), tad::constant(wd)));
    }
  });
  auto run = [&]<rule R>(const char* name) {
    std::vector<T> g(s.size());
    if constexpr (Matrix) {
      auto x = tad::var<"x">(xb.data(), s.rows, s.cols);
      auto w = tad::constant(static_cast<const T*>(wb.data()), s.rows, s.cols);
      tad::grad_into(with_rule<R, Composite>(x, w, op), tad::wrt(x, g));
    } else {
      auto x = tad::var<"x">(xb.span());
      auto w = tad::constant(wb.cspan());
      tad::grad_into(with_rule<R, Composite>(x, w, op), tad::wrt(x, g));
    }
    std::vector<double> want(s.size());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = apply_rule(R, adjoint[i]);
    grad_test::expect_all(g, want, tad_test::grad_tol<T>(), what + ", " + name);
  };
  run.template operator()<rule::clip>("clip_gradient");
  if constexpr (All && all_rules) {
    run.template operator()<rule::custom>("custom dy * dy");
    run.template operator()<rule::override>("override clip(dy, -0.1, 0.1)");
  }
}

const std::vector<std::size_t> vector_lengths{1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33};

template <class T, bool Composite = false, class Op>
void check_vector_op(Op op, const std::string& what) {
  for (std::size_t n : vector_lengths) check_op<T, false, Op, Composite>(op, {0, n}, what + " (n = " + std::to_string(n) + ")");
}

// The composites, then the single-read ops; w is a constant of z's shape.
constexpr auto sce = [](auto z, auto w) { return tad::softmax_cross_entropy(z, tad::square(w) * 0.5); };
constexpr auto softmax_of = [](auto z, auto w) { return tad::sum(w * tad::softmax(z)); };
constexpr auto log_softmax_of = [](auto z, auto w) { return tad::sum(w * tad::log_softmax(z)); };
// Each reads z once (a second read in the test's own code would be the repeated-rule error).
constexpr auto lse = [](auto z, auto w) { return tad::logsumexp(z * 2.0 + w); };
constexpr auto dot_of = [](auto z, auto w) { return tad::dot(w, tad::sin(z)); };
constexpr auto max_of = [](auto z, auto w) { return tad::max(z + w); };
constexpr auto min_of = [](auto z, auto w) { return tad::min(z * w); };
constexpr auto norm_of = [](auto z, auto w) { return tad::norm(z + w); };
constexpr auto squared_norm_of = [](auto z, auto w) { return tad::squared_norm(z * w); };
constexpr auto where_of = [](auto z, auto w) { return tad::sum(tad::where(w > 0.0, tad::sin(z), w)); };
constexpr auto clamp_of = [](auto z, auto w) { return tad::sum(w * tad::clamp(z, -0.5, 0.5)); };
constexpr auto mean_of = [](auto z, auto w) { return tad::mean(tad::square(w - tad::tanh(z))); };

}  // namespace

BOOST_AUTO_TEST_SUITE(one_node_one_rule)

BOOST_AUTO_TEST_CASE(composites_run_a_rule_once_on_the_summed_adjoint) {
  check_vector_op<double, true>(sce, "softmax_cross_entropy(r(x), t)");
  check_vector_op<float, true>(sce, "softmax_cross_entropy(r(x), t) float");
  check_vector_op<double, true>(softmax_of, "sum(w * softmax(r(x)))");
  check_vector_op<float, true>(softmax_of, "sum(w * softmax(r(x))) float");
  check_vector_op<double, true>(log_softmax_of, "sum(w * log_softmax(r(x)))");
  check_vector_op<float, true>(log_softmax_of, "sum(w * log_softmax(r(x))) float");
}

BOOST_AUTO_TEST_CASE(single_read_ops_run_a_rule_once) {
  check_vector_op<double>(lse, "logsumexp(2 r(x) + w)");
  check_vector_op<double>(dot_of, "dot(w, sin(r(x)))");
  check_vector_op<double>(max_of, "max(r(x) + w)");
  check_vector_op<double>(min_of, "min(r(x) w)");
  check_vector_op<double>(norm_of, "norm(r(x) + w)");
  check_vector_op<double>(squared_norm_of, "squared_norm(r(x) w)");
  check_vector_op<double>(where_of, "sum(where(w > 0, sin(r(x)), w))");
  check_vector_op<double>(clamp_of, "sum(w * clamp(r(x), -0.5, 0.5))");
  check_vector_op<double>(mean_of, "mean(square(w - tanh(r(x))))");
}

BOOST_AUTO_TEST_CASE(matrix_composites_run_a_rule_once_on_the_summed_adjoint) {
  // One distribution per row (or per column, axis<0>); the argument is read twice per row.
  // (Labels: a pick per row, from w's signs.)
  constexpr auto sce_rows = [](auto z, auto w) { return tad::sum(tad::softmax_cross_entropy(z, tad::square(w) * 0.5)); };
  constexpr auto log_softmax_rows = [](auto z, auto w) { return tad::sum(w * tad::log_softmax(z, tad::axis<1>)); };
  constexpr auto softmax_rows = [](auto z, auto w) { return tad::sum(w * tad::softmax(z, tad::axis<1>)); };
  constexpr auto softmax_cols = [](auto z, auto w) { return tad::sum(w * tad::softmax(z, tad::axis<0>)); };
  for (shape s : {shape{1, 1}, shape{3, 5}, shape{4, 17}, shape{9, 8}, shape{2, 33}}) {
    const std::string at = " at " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
    // The three rules on a composite along each axis; clip_gradient on the others (the stage
    // that makes the argument one node is the same for every rule).
    check_op<double, true, decltype(sce_rows), true>(sce_rows, s, "softmax_cross_entropy(r(Z), T)" + at);
    check_op<double, true, decltype(softmax_cols), true>(softmax_cols, s, "softmax(r(Z), axis<0>)" + at);
    check_op<double, true, decltype(log_softmax_rows), true, false>(log_softmax_rows, s, "log_softmax(r(Z), axis<1>)" + at);
    check_op<double, true, decltype(softmax_rows), true, false>(softmax_rows, s, "softmax(r(Z), axis<1>)" + at);
  }
  check_op<float, true, decltype(sce_rows), true, false>(sce_rows, {5, 9}, "softmax_cross_entropy(r(Z), T), float");
  // With class labels: the adjoint softmax(z) - onehot, clipped once (TensorFlow).
  std::vector<double> zs{1, -0.5, 2, 0.3, 0.2, 0.1, -1, 0.4};
  const std::vector<int> labels{2, 3};
  auto Z = tad::var<"Z">(zs.data(), 2, 4);
  std::vector<double> g(8);
  tad::grad_into(tad::sum(tad::softmax_cross_entropy(tad::clip_gradient(Z, -0.2, 0.2), labels)), tad::wrt(Z, g));
  std::vector<double> want(8);
  for (std::size_t r = 0; r < 2; ++r) {
    double e = 0;
    for (std::size_t j = 0; j < 4; ++j) e += std::exp(zs[4 * r + j]);
    for (std::size_t j = 0; j < 4; ++j)
      want[4 * r + j] = grad_test::clip(std::exp(zs[4 * r + j]) / e - (static_cast<int>(j) == labels[r] ? 1 : 0), -0.2, 0.2);
  }
  grad_test::expect_all(g, want, 1e-12, "softmax_cross_entropy(clip(Z), labels)");
}

BOOST_AUTO_TEST_CASE(a_vector_broadcast_across_rows_runs_its_rule_on_the_column_sums) {
  // sum(sin(W * r(b))): b's adjoint is, per column j, sum_i W_ij cos(W_ij b_j) (central
  // differences of the plain expression); the rule runs once on it, as in TensorFlow.
  const auto run = [&]<class T, bool All>(shape s, const std::string& what) {
    auto wb = grad_test::data<T>(s.rows * s.cols, -1.5, 1.5, 5);
    auto bb = grad_test::data<T>(s.cols, -1.0, 1.0, 7);
    std::vector<double> wd(wb.begin(), wb.end()), bd(bb.begin(), bb.end());
    const auto adjoint = central_differences(bd, [&] {
      return tad::value(tad::sum(tad::sin(tad::constant(wd.data(), s.rows, s.cols) * tad::constant(bd))));
    });
    auto b = tad::var<"b">(bb.span());
    auto W = tad::constant(static_cast<const T*>(wb.data()), s.rows, s.cols);
    const auto check = [&](const auto& rb, rule r, const char* name) {
      std::vector<T> g(s.cols);
      tad::grad_into(tad::sum(tad::sin(W * rb)), tad::wrt(b, g));
      std::vector<double> want(s.cols);
      for (std::size_t j = 0; j < s.cols; ++j) want[j] = apply_rule(r, adjoint[j]);
      grad_test::expect_all(g, want, tad_test::grad_tol<T>(), what + ", " + name);
    };
    check(tad::clip_gradient(b, T(-0.2), T(0.2)), rule::clip, "clip_gradient");
    if constexpr (All && all_rules) {
      check(grad_test::squared_rule(b), rule::custom, "custom dy * dy");
      check(tad::let<"c">(tad::clip_gradient(b, T(-0.2), T(0.2))) * T(1), rule::clip, "a let of clip_gradient, times 1");
    }
  };
  for (shape s : {shape{1, 1}, shape{3, 5}, shape{4, 17}, shape{9, 8}, shape{2, 33}}) {
    const std::string at = "sum(sin(W * r(b))) at " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
    run.template operator()<double, true>(s, at);
  }
  run.template operator()<float, false>({5, 9}, "sum(sin(W * r(b))) float");
  // The issue's numbers: X (3 x 4) and the clip's bounds [-0.2, 0.5]: the column sums, clipped.
  std::vector<double> xs{0.5, -1.0, 0.25, 2.0, 1.5, -0.5, 0.3, 0.2, 0.1, -0.4, 1.1, 0.7}, rs{0.1, 0.2, 0.3, 0.4};
  auto r = tad::var<"r">(rs);
  auto g = std::get<1>(tad::grad(tad::sum(tad::constant(xs.data(), 3, 4) * tad::clip_gradient(r, -0.2, 0.5)), r));
  grad_test::expect_all(g, {0.5, -0.2, 0.5, 0.5}, 1e-15, "column sums 2.1, -1.3, 1.65, 2.7, clipped");
  // Two copies of X * c, one computation on one datum: one node, its rule once on the summed
  // adjoint (twice the column sums, clipped), as for two copies of a let.
  auto c = tad::clip_gradient(r, -0.2, 3.5);
  auto g2 = std::get<1>(tad::grad(tad::sum(tad::constant(xs.data(), 3, 4) * c) + tad::sum(tad::constant(xs.data(), 3, 4) * c), r));
  grad_test::expect_all(g2, {3.5, -0.2, 3.3, 3.5}, 1e-15, "two copies of X * c: 2 x column sums, clipped once");
}

BOOST_AUTO_TEST_CASE(a_let_of_a_rule_along_an_axis_and_elsewhere_is_one_node) {
  // c = let(clip(sin(X))) used by logsumexp along the rows and elementwise: its adjoint (central
  // differences of the plain function of c) clipped once, then times cos(X).
  for (shape s : {shape{1, 1}, shape{3, 5}, shape{4, 17}, shape{9, 8}}) {
    auto xb = grad_test::data<double>(s.size(), -1.5, 1.5, 3);
    std::vector<double> xd(xb.begin(), xb.end()), cd(s.size());
    for (std::size_t i = 0; i < cd.size(); ++i) cd[i] = std::sin(xd[i]);
    const auto f = [&](auto c) { return tad::sum(tad::square(tad::logsumexp(c, tad::axis<1>))) + tad::sum(c * c); };
    const auto adjoint = central_differences(cd, [&] { return tad::value(f(tad::constant(cd.data(), s.rows, s.cols))); });
    auto X = tad::var<"X">(xb.data(), s.rows, s.cols);
    std::vector<double> g(s.size());
    tad::grad_into(f(tad::let<"c">(tad::clip_gradient(tad::sin(X), -0.3, 0.3))), tad::wrt(X, g));
    std::vector<double> want(s.size());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = grad_test::clip(adjoint[i], -0.3, 0.3) * std::cos(xd[i]);
    grad_test::expect_all(g, want, 1e-8,
                          "let of clip along axis<1> and elementwise at " + std::to_string(s.rows) + " x " + std::to_string(s.cols));
  }
}

BOOST_AUTO_TEST_CASE(axis_reductions_run_a_rule_once) {
  // Along the rows and down the columns; each reduction reads its argument once.
  constexpr auto lse_rows = [](auto z, auto w) { return tad::sum(tad::square(tad::logsumexp(z * w, tad::axis<1>))); };
  constexpr auto max_rows = [](auto z, auto w) { return tad::sum(tad::square(tad::max(z + w, tad::axis<1>))); };
  constexpr auto norm_rows = [](auto z, auto w) { return tad::sum(tad::sin(tad::norm(z + w, tad::axis<1>))); };
  constexpr auto lse_cols = [](auto z, auto w) { return tad::sum(tad::square(tad::logsumexp(z * w, tad::axis<0>))); };
  constexpr auto min_cols = [](auto z, auto w) { return tad::sum(tad::square(tad::min(z - w, tad::axis<0>))); };
  constexpr auto mean_cols = [](auto z, auto w) { return tad::sum(tad::square(tad::mean(z - w, tad::axis<0>))); };
  for (shape s : {shape{1, 1}, shape{3, 5}, shape{4, 17}, shape{9, 8}}) {
    const std::string at = " at " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
    check_op<double, true>(lse_rows, s, "logsumexp(r(X) w, axis<1>)" + at);
    check_op<double, true>(max_rows, s, "max(r(X) + w, axis<1>)" + at);
    check_op<double, true>(norm_rows, s, "norm(r(X) + w, axis<1>)" + at);
    check_op<double, true>(lse_cols, s, "logsumexp(r(X) w, axis<0>)" + at);
    check_op<double, true>(min_cols, s, "min(r(X) - w, axis<0>)" + at);
    check_op<double, true>(mean_cols, s, "mean(r(X) - w, axis<0>)" + at);
  }
  check_op<float, true>(lse_rows, {5, 9}, "logsumexp(r(X) w, axis<1>), float");
  check_op<float, true>(lse_cols, {5, 9}, "logsumexp(r(X) w, axis<0>), float");
}

BOOST_AUTO_TEST_CASE(scalars_run_a_rule_once) {
  // A scalar variable in the scalar code: log(1 + exp(r(x))) * 3 - r(x) is two reads, so
  // written with a let (one node); the rule applied once to 3 sigmoid(x) - 1.
  for (double xv : {-2.0, -0.3, 0.4, 1.7}) {
    const double s = 1 / (1 + std::exp(-xv));
    const double adjoint = 3 * s - 1;
    double v = xv;
    auto x = tad::var<"x">(v);
    auto c = tad::let<"c">(tad::clip_gradient(x, -0.2, 0.2));
    grad_test::expect(std::get<1>(tad::grad(tad::log(1.0 + tad::exp(c)) * 3.0 - c, x)), apply_rule(rule::clip, adjoint), 1e-12,
                      "scalar let, clip");
    auto q = tad::let<"q">(grad_test::squared_rule(x));
    grad_test::expect(std::get<1>(tad::grad(tad::log(1.0 + tad::exp(q)) * 3.0 - q, x)), apply_rule(rule::custom, adjoint), 1e-12,
                      "scalar let, custom");
  }
}

BOOST_AUTO_TEST_CASE(the_issue_s_example) {
  // softmax_cross_entropy(clip_gradient(x, -0.2, 0.2), t), x = [1, -0.5, 2, 0.3], t one-hot at
  // 2: the logits' adjoint p - t clipped once (TensorFlow and PyTorch): [0.2, p1, -0.2, p3].
  std::vector<double> xs{1, -0.5, 2, 0.3}, ts{0, 0, 1, 0};
  auto x = tad::var<"x">(xs);
  auto [v, g] = tad::grad(tad::softmax_cross_entropy(tad::clip_gradient(x, -0.2, 0.2), tad::constant(ts)), x);
  double z = 0;
  for (double a : xs) z += std::exp(a);
  grad_test::expect_all(g, {0.2, std::exp(-0.5) / z, -0.2, std::exp(0.3) / z}, 1e-12, "clipped logits");
  grad_test::expect(v, std::log(z) - 2, 1e-12, "value");
}

BOOST_AUTO_TEST_CASE(per_use_keeps_one_rule_per_copy) {
  // c * c + c at x = 2 with the clip of each copy's share: clip(2) + clip(2) + clip(1) = 3 (the
  // old per-copy value, now written explicitly); as one node (let): clip(5) = 1.
  double xv = 2.0;
  auto x = tad::var<"x">(xv);
  auto u = tad::per_use(tad::clip_gradient(x, -1.0, 1.0));
  grad_test::expect(std::get<1>(tad::grad(u * u + u, x)), 3.0, 0, "per_use");
  auto c = tad::let<"c">(tad::clip_gradient(x, -1.0, 1.0));
  grad_test::expect(std::get<1>(tad::grad(c * c + c, x)), 1.0, 0, "let");
  BOOST_TEST(tad::to_string(u + u) == "per_use(clip_gradient(x, -1, 1)) + per_use(clip_gradient(x, -1, 1))");
  // Copies below a cut carry no adjoint and are not counted: the stop_gradient copy.
  auto k = tad::clip_gradient(x, -1.0, 1.0);
  grad_test::expect(std::get<1>(tad::grad(k * tad::stop_gradient(k), x)), 1.0, 0, "a copy under stop_gradient");
}

BOOST_AUTO_TEST_CASE(broadcast_scalars_and_columns_run_a_rule_once) {
  // A scalar under a rule in a loop: its adjoint summed over the loop, the rule run once.
  // sum(X * clip(s, -2, 2)) with X = [1, 2, 3, 4]: clip(10) = 2 (per element: 1 + 2 + 2 + 2).
  std::vector<double> xs{1, 2, 3, 4};
  double sv = 1;
  auto s = tad::var<"s">(sv);
  grad_test::expect(std::get<1>(tad::grad(tad::sum(tad::constant(xs) * tad::clip_gradient(s, -2.0, 2.0)), s)), 2.0, 0,
                    "scalar in a loop");
  // A column met by a matrix: each row's summed adjoint, clipped once. X = [[1, 2], [3, 4]],
  // sum(X * clip(as_column(b), -2.5, 2.5)): row sums 3 and 7, clipped: [2.5, 2.5] (TensorFlow).
  std::vector<double> bs{0.5, -0.5};
  auto b = tad::var<"b">(bs);
  auto X = tad::constant(xs.data(), 2, 2);
  grad_test::expect_all(std::get<1>(tad::grad(tad::sum(X * tad::clip_gradient(tad::as_column(b), -2.5, 2.5)), b)),
                        {2.5, 2.5}, 0, "column");
  grad_test::expect_all(std::get<1>(tad::grad(tad::sum(X * tad::clip_gradient(tad::as_column(b), -1.0, 3.5)), b)),
                        {3.0, 3.5}, 0, "column, one clipped");
}

BOOST_AUTO_TEST_CASE(per_use_into_a_composite_is_still_one_node_per_read) {
  // per_use means one rule per use the user wrote; the composite's two reads stay one node.
  std::vector<double> xs{1, -0.5, 2, 0.3}, ts{0, 0, 1, 0};
  auto x = tad::var<"x">(xs);
  auto g = std::get<1>(tad::grad(tad::softmax_cross_entropy(tad::per_use(tad::clip_gradient(x, -0.2, 0.2)), tad::constant(ts)), x));
  double z = 0;
  for (double a : xs) z += std::exp(a);
  grad_test::expect_all(g, {0.2, std::exp(-0.5) / z, -0.2, std::exp(0.3) / z}, 1e-12, "per_use logits");
}

BOOST_AUTO_TEST_CASE(a_scalar_rule_inside_a_broadcast_vector_runs_once) {
  // sum(X * (b * clip(s, -0.8, 0.8))), X = [[1, 2], [3, 4]], b = [0.5, -0.5]: the clip node is
  // a scalar (a loop invariant); its adjoint sum(X * b) = -1 is clipped once: -0.8 (per element
  // it would be 0.5 - 0.8 + 0.8 - 0.8 = -0.3).
  std::vector<double> xs{1, 2, 3, 4}, bs{0.5, -0.5};
  double sv = 0.3;
  auto s = tad::var<"s">(sv);
  auto X = tad::constant(xs.data(), 2, 2);
  auto b = tad::constant(bs);
  grad_test::expect(std::get<1>(tad::grad(tad::sum(X * (b * tad::clip_gradient(s, -0.8, 0.8))), s)), -0.8, 1e-15,
                    "scalar rule in a broadcast vector");
}

BOOST_AUTO_TEST_CASE(composites_of_one_type_on_different_data_must_be_named) {
  // Two cross-entropies whose rule-carrying arguments have one type but other parameters: tad
  // names each argument's node by its type, so it cannot tell them apart and says so; named
  // lets give each its own node (TensorFlow's result: each clipped once).
  std::vector<double> xs{1, -0.5, 2, 0.3}, ts{0, 0, 1, 0};
  auto x = tad::var<"x">(xs);
  auto t = tad::constant(ts);
  try {
    (void)(tad::softmax_cross_entropy(tad::clip_gradient(x, -0.2, 0.2), t) +
           tad::softmax_cross_entropy(tad::clip_gradient(x, -0.1, 0.1), t));
    BOOST_FAIL("no exception for two composites of one argument type on other parameters");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST(what.starts_with("tad::softmax_cross_entropy / softmax / log_softmax: two calls whose arguments "
                                "have one type"));
    BOOST_TEST(what.ends_with("name each argument, tad::let<\"a\">(...) and tad::let<\"b\">(...)"));
  }
  // A custom rule (its captures cannot be compared): each composite's argument is a stage of
  // its own (one node per call, as in TensorFlow), its rule run once on that call's adjoint.
  auto scaled = [](double k) {
    return tad::custom_gradient([](auto v) { return v; }, [k](auto dy, auto, auto) { return dy * k; });
  };
  {
    auto g = std::get<1>(tad::grad(tad::softmax_cross_entropy(scaled(1.0)(x), t) + tad::softmax_cross_entropy(scaled(10.0)(x), t), x));
    double z = 0;
    for (double v : xs) z += std::exp(v);
    const std::vector<double> p{std::exp(1.0) / z, std::exp(-0.5) / z, std::exp(2.0) / z - 1, std::exp(0.3) / z};
    std::vector<double> want(4);
    for (std::size_t i = 0; i < 4; ++i) want[i] = p[i] * 1.0 + p[i] * 10.0;
    grad_test::expect_all(g, want, 1e-12, "two custom rules");
  }
  auto a = tad::let<"a">(tad::clip_gradient(x, -0.2, 0.2));
  auto c = tad::let<"c">(tad::clip_gradient(x, -0.1, 0.1));
  auto g = std::get<1>(tad::grad(tad::softmax_cross_entropy(a, t) + tad::softmax_cross_entropy(c, t), x));
  double z = 0;
  for (double v : xs) z += std::exp(v);
  const std::vector<double> p{std::exp(1.0) / z, std::exp(-0.5) / z, std::exp(2.0) / z - 1, std::exp(0.3) / z};
  std::vector<double> want(4);
  for (std::size_t i = 0; i < 4; ++i) want[i] = grad_test::clip(p[i], -0.2, 0.2) + grad_test::clip(p[i], -0.1, 0.1);
  grad_test::expect_all(g, want, 1e-12, "two named lets");
}

BOOST_AUTO_TEST_SUITE_END()

// The repeated-rule check at compile time: which expressions it refuses.
namespace {
double xv_ct = 2.0;
[[maybe_unused]] const auto x_ct = tad::var<"x">(xv_ct);
[[maybe_unused]] const auto clip_ct = tad::clip_gradient(x_ct, -1.0, 1.0);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(clip_ct + x_ct)>>);
static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(clip_ct + clip_ct)>>);
static_assert(std::is_same_v<tad::detail::repeated_rule_t<decltype(tad::sin(clip_ct) * clip_ct)>,
                             std::remove_cvref_t<decltype(clip_ct)>>);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::per_use(clip_ct) + tad::per_use(clip_ct))>>);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(clip_ct + tad::stop_gradient(clip_ct))>>);
// A let's body counts once, however often the let is used.
[[maybe_unused]] const auto let_ct = tad::let<"c">(clip_ct);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(let_ct * let_ct + let_ct)>>);
// A copy outside the let is another node (as a second clip call is in TensorFlow), and two lets
// of one body type are two nodes.
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(let_ct + clip_ct)>>);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(let_ct + tad::let<"d">(clip_ct))>>);
static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::let<"d">(clip_ct + clip_ct))>>);
// Rules linear in the adjoint may be copied (the same numbers either way).
[[maybe_unused]] const auto scaled_ct = tad::scale_gradient(x_ct, 2.0);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(scaled_ct + scaled_ct)>>);
// A vector under a rule broadcast across rows is made a stage where the node is built (its
// rule then runs on the column sums); as a column, a matrix of its own shape or under a rule
// linear in the adjoint, it is left to the engine.
std::vector<double> bs_ct(2), ms_ct(4);
[[maybe_unused]] const auto b_ct = tad::var<"b">(bs_ct);
[[maybe_unused]] const auto m2_ct = tad::constant(ms_ct.data(), 2, 2);
static_assert(tad::detail::is_stage_op_node_v<tad::detail::child_t<1, decltype(m2_ct * tad::clip_gradient(b_ct, -1.0, 1.0))>>);
static_assert(tad::detail::is_stage_op_node_v<tad::detail::child_t<1, decltype(m2_ct * tad::let<"r">(tad::clip_gradient(b_ct, -1.0, 1.0)))>>);
static_assert(std::is_void_v<tad::detail::broadcast_rule_t<decltype(m2_ct * tad::clip_gradient(b_ct, -1.0, 1.0))>>);
static_assert(!tad::detail::has_products_v<decltype(m2_ct * tad::clip_gradient(tad::as_column(b_ct), -1.0, 1.0))>);
static_assert(!tad::detail::has_products_v<decltype(tad::clip_gradient(m2_ct * b_ct, -1.0, 1.0))>);
static_assert(!tad::detail::has_products_v<decltype(m2_ct * tad::scale_gradient(b_ct, 2.0))>);
// A scalar rule inside a broadcast vector is a loop invariant (its adjoint summed first): allowed.
double s_ct = 1;
[[maybe_unused]] const auto sv_ct = tad::var<"s">(s_ct);
static_assert(tad::detail::rule_problem<decltype(tad::sum(m2_ct * (b_ct * tad::clip_gradient(sv_ct, -1.0, 1.0))))>::kind == 0);
// A rule inside a per_use body still counts its own copies.
static_assert(!std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::per_use(clip_ct * clip_ct + x_ct))>>);
static_assert(std::is_void_v<tad::detail::repeated_rule_t<decltype(tad::per_use(clip_ct) + clip_ct)>>);

}  // namespace

// No extra pass where the plain op had none: the composites over a rule-carrying argument (one
// node: a let) run the loops the plain composites run. Softmax cross-entropy of a vector: 4
// (the shift, the sum of exponentials, the backward; the target's sum); of a matrix with labels
// (the softmax-regression loss): 1; logistic regression (benchmark/logreg.hpp): 1.
namespace {
std::vector<double> xs_ct(4), ts_ct(4), m_ct(6), w_ct(3), y_ct(2);
std::vector<int> labels_ct(2);
[[maybe_unused]] const auto xvec_ct = tad::var<"x">(xs_ct);
[[maybe_unused]] const auto tv_ct = tad::constant(ts_ct);
using sce_plain = decltype(tad::softmax_cross_entropy(xvec_ct, tv_ct));
using sce_clipped = decltype(tad::softmax_cross_entropy(tad::clip_gradient(xvec_ct, -0.2, 0.2), tv_ct));
using sce_custom = decltype(tad::softmax_cross_entropy(tad::let<"z">(grad_test::squared_rule(xvec_ct)), tv_ct));
static_assert(tad::passes_v<sce_plain, decltype(xvec_ct)> == 4);
static_assert(tad::passes_v<sce_clipped, decltype(xvec_ct)> == 4);
static_assert(tad::passes_v<sce_custom, decltype(xvec_ct)> == 4);
using lsm_plain = decltype(tad::sum(tv_ct * tad::log_softmax(xvec_ct)));
using lsm_clipped = decltype(tad::sum(tv_ct * tad::log_softmax(tad::clip_gradient(xvec_ct, -0.2, 0.2))));
static_assert(tad::passes_v<lsm_plain, decltype(xvec_ct)> == tad::passes_v<lsm_clipped, decltype(xvec_ct)>);
using sm_plain = decltype(tad::sum(tv_ct * tad::softmax(xvec_ct)));
using sm_clipped = decltype(tad::sum(tv_ct * tad::softmax(tad::clip_gradient(xvec_ct, -0.2, 0.2))));
static_assert(tad::passes_v<sm_plain, decltype(xvec_ct)> == tad::passes_v<sm_clipped, decltype(xvec_ct)>);
[[maybe_unused]] const auto mv_ct = tad::var<"m">(m_ct.data(), 2, 3);
static_assert(tad::passes_v<decltype(tad::mean(tad::softmax_cross_entropy(mv_ct, labels_ct))), decltype(mv_ct)> == 1);
[[maybe_unused]] const auto wv_ct = tad::var<"w">(w_ct);
[[maybe_unused]] const auto z_ct = tad::let<"z">(tad::sum(tad::constant(m_ct.data(), 2, 3) * wv_ct, tad::axis<1>));
static_assert(tad::passes_v<decltype(tad::mean(tad::softplus(z_ct) - tad::constant(y_ct) * z_ct)), decltype(wv_ct)> == 1);
}  // namespace
