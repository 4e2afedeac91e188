// The benchmarks' tad calls, one out-of-line function each, to read with objdump -d and to
// compare between commits (tools/codegen_diff.sh, doc/benchmarks.md "Codegen diff").
//
// Each `tad_cg_<workload>` function builds the expression of benchmark/<file>.cpp over its
// arguments and calls `tad::grad_into` the way the benchmark's timing loop does (same leaves,
// same wrt order, same buffer types), so its machine code (with what it calls) is the code the
// benchmark times. extern "C" keeps the names plain and stable across commits; the functions
// are never called: tools/codegen_diff.sh compiles the file once per workload (-DTAD_CG_ONLY
// -DTAD_CG_ONLY_<W>: g++'s inlining budgets are per translation unit, so one TU holding every
// workload lets a change to one move another's loops) and links it without startup files, only
// to disassemble it. Not a ctest and not in CMake.
//
// When a benchmark's expression changes, change it here too; a new benchmark gets a function
// here (doc/log/plan-shapes.md section 4: each new workload as it lands).
#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <numbers>
#include <span>
#include <vector>

#define TAD_CG_FN extern "C" [[gnu::noinline, gnu::used]]

// W1, W1f (w1_elementwise.cpp): sum(exp(sin(x)) * x + square(tanh(x))), gradient w.r.t. x.
template <class T>
static T w1(const std::vector<T>& xs, std::vector<T>& g) {
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::exp(tad::sin(x)) * x + tad::square(tad::tanh(x)));
  return tad::grad_into(e, tad::wrt(x, std::span<T>(g)));
}
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W1)
TAD_CG_FN double tad_cg_W1(const std::vector<double>& xs, std::vector<double>& g) { return w1(xs, g); }
#endif
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W1f)
TAD_CG_FN float tad_cg_W1f(const std::vector<float>& xs, std::vector<float>& g) { return w1(xs, g); }
#endif

// W2 (w2_gaussian.cpp): the Gaussian log-likelihood, gradient w.r.t. mu, sigma and y.
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W2)
TAD_CG_FN double tad_cg_W2(const std::vector<double>& ys, const double& mu_, const double& sigma_, double& gmu,
                           double& gsigma, std::vector<double>& gy) {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  auto y = tad::var<"y">(ys);
  auto mu = tad::var<"mu">(mu_);
  auto sigma = tad::var<"sigma">(sigma_);
  auto e = tad::sum(-0.5 * tad::square((y - mu) / sigma) - tad::log(sigma) - half_log_2pi);
  return tad::grad_into(e, tad::wrt(mu, gmu), tad::wrt(sigma, gsigma), tad::wrt(y, std::span<double>(gy)));
}
#endif

// W3 (w3_logsumexp.cpp): logsumexp(x), gradient w.r.t. x.
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W3)
TAD_CG_FN double tad_cg_W3(const std::vector<double>& xs, std::vector<double>& g) {
  auto x = tad::var<"x">(xs);
  auto e = tad::logsumexp(x);
  return tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
}
#endif

// W4, W4f (w4_clipped_regression.cpp): sum(square(clip_gradient(w * x + b, -0.1, 0.1) - y)),
// gradient w.r.t. the scalars w and b.
template <class T>
static T w4(const std::vector<T>& xs, const std::vector<T>& ys, const T& w_, const T& b_, T& gw, T& gb) {
  auto w = tad::var<"w">(w_);
  auto b = tad::var<"b">(b_);
  auto x = tad::constant(xs);
  auto y = tad::constant(ys);
  auto e = tad::sum(tad::square(tad::clip_gradient(w * x + b, -0.1, 0.1) - y));
  return tad::grad_into(e, tad::wrt(w, gw), tad::wrt(b, gb));
}
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W4)
TAD_CG_FN double tad_cg_W4(const std::vector<double>& xs, const std::vector<double>& ys, const double& w,
                           const double& b, double& gw, double& gb) {
  return w4(xs, ys, w, b, gw, gb);
}
#endif
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_W4f)
TAD_CG_FN float tad_cg_W4f(const std::vector<float>& xs, const std::vector<float>& ys, const float& w,
                           const float& b, float& gw, float& gb) {
  return w4(xs, ys, w, b, gw, gb);
}
#endif

// CG (surgery.cpp): sum(soft(x)), soft = custom_gradient(log1p(exp(v)), dy * sigmoid(v)).
inline constexpr auto soft = tad::custom_gradient([](auto v) { return tad::log1p(tad::exp(v)); },
                                                  [](auto dy, auto v, auto) { return dy * tad::math::sigmoid(v); });
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_CG)
TAD_CG_FN double tad_cg_CG(const std::vector<double>& xs, std::vector<double>& g) {
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(soft(x));
  return tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
}
#endif

// ST (surgery.cpp): sum(square(straight_through(round(x), x))).
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_ST)
TAD_CG_FN double tad_cg_ST(const std::vector<double>& xs, std::vector<double>& g) {
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::square(tad::straight_through(tad::round(x), x)));
  return tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
}
#endif

// ST trick (surgery.cpp, ST_tadtrick): sum(square(x + stop_gradient(round(x) - x))).
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_STtrick)
TAD_CG_FN double tad_cg_STtrick(const std::vector<double>& xs, std::vector<double>& g) {
  auto x = tad::var<"x">(xs);
  auto e = tad::sum(tad::square(x + tad::stop_gradient(tad::round(x) - x)));
  return tad::grad_into(e, tad::wrt(x, std::span<double>(g)));
}
#endif

// PEN, PENf (penalties.cpp): a data term plus penalties on p (length N) and q (length M != N),
// gradient w.r.t. p and q. Before the engine takes several lengths it throws shape_error.
template <class T>
static T pen(const std::vector<T>& ps, const std::vector<T>& qs, const std::vector<T>& xs, const std::vector<T>& ys,
             const std::vector<T>& ts, std::vector<T>& gp, std::vector<T>& gq) {
  auto p = tad::var<"p">(ps);
  auto q = tad::var<"q">(qs);
  auto x = tad::constant(xs);
  auto y = tad::constant(ys);
  auto t = tad::constant(ts);
  auto e = 0.5 * tad::sum(tad::square(p * x - y)) + 0.01 * tad::squared_norm(p) + 0.1 * tad::squared_norm(q - t);
  return tad::grad_into(e, tad::wrt(p, std::span<T>(gp)), tad::wrt(q, std::span<T>(gq)));
}
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_PEN)
TAD_CG_FN double tad_cg_PEN(const std::vector<double>& ps, const std::vector<double>& qs,
                            const std::vector<double>& xs, const std::vector<double>& ys,
                            const std::vector<double>& ts, std::vector<double>& gp, std::vector<double>& gq) {
  return pen(ps, qs, xs, ys, ts, gp, gq);
}
#endif
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_PENf)
TAD_CG_FN float tad_cg_PENf(const std::vector<float>& ps, const std::vector<float>& qs, const std::vector<float>& xs,
                            const std::vector<float>& ys, const std::vector<float>& ts, std::vector<float>& gp,
                            std::vector<float>& gq) {
  return pen(ps, qs, xs, ys, ts, gp, gq);
}
#endif

// BC, BCf (broadcast.cpp): 0.5 * mean(square(X * s + o - Y)), s and o vectors of length D
// broadcast across the rows of the N x D constants X and Y: a row nest. Before broadcasting
// (up to ec0cad8) mixing ranks is a compile error, so a BASE before it has no BC.
template <class T>
static T bc(const std::vector<T>& ss, const std::vector<T>& os, const std::vector<T>& xs, const std::vector<T>& ys,
            std::size_t rows, std::vector<T>& gs, std::vector<T>& go) {
  auto s = tad::var<"s">(ss);
  auto o = tad::var<"o">(os);
  auto X = tad::constant(xs.data(), rows, ss.size());
  auto Y = tad::constant(ys.data(), rows, ss.size());
  auto e = 0.5 * tad::mean(tad::square(X * s + o - Y));
  return tad::grad_into(e, tad::wrt(s, std::span<T>(gs)), tad::wrt(o, std::span<T>(go)));
}
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_BC)
TAD_CG_FN double tad_cg_BC(const std::vector<double>& ss, const std::vector<double>& os,
                           const std::vector<double>& xs, const std::vector<double>& ys, std::size_t rows,
                           std::vector<double>& gs, std::vector<double>& go) {
  return bc(ss, os, xs, ys, rows, gs, go);
}
#endif
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_BCf)
TAD_CG_FN float tad_cg_BCf(const std::vector<float>& ss, const std::vector<float>& os, const std::vector<float>& xs,
                           const std::vector<float>& ys, std::size_t rows, std::vector<float>& gs,
                           std::vector<float>& go) {
  return bc(ss, os, xs, ys, rows, gs, go);
}
#endif
// T1 (adam_step.cpp): clip_by_global_norm(1) then Adam on N float parameters, the tad_state of
// the benchmark (its step(); the gradient is given, not computed).
struct t1_state {
  std::vector<float> p;
  tad::array_var<"p", float> var;
  tad::parameter_set<tad::array_var<"p", float>> params;
  tad::gradient_set<float> grads;
  tad::chain<tad::clip_by_global_norm> transform{tad::clip_by_global_norm(1.0)};
  tad::adam<float, double> opt;
  explicit t1_state(const std::vector<float>& p0)
      : p(p0), var(tad::var<"p">(p)), params(var), grads(params),
        opt(params, 1e-3, {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}) {}
};
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_T1)
TAD_CG_FN void tad_cg_T1(t1_state& s) {
  s.grads.reset_scale();
  if (s.transform.update(s.grads, s.params) == tad::step_action::apply) s.opt.apply_gradients(s.params, s.grads);
}
#endif

// LR (logreg.cpp): the mean logistic loss over a constant feature matrix, z a let of a reduction
// along the rows; gradient w.r.t. w.
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_LR)
TAD_CG_FN double tad_cg_LR(const std::vector<double>& xs, const std::vector<double>& ys, const std::vector<double>& ws,
                           std::size_t rows, std::size_t features, std::vector<double>& g) {
  auto w = tad::var<"w">(ws);
  auto X = tad::constant(xs.data(), rows, features);
  auto y = tad::constant(ys);
  const auto z = tad::let<"z">(tad::sum(X * w, tad::axis<1>));
  auto L = tad::mean(tad::softplus(z) - y * z);
  return tad::grad_into(L, tad::wrt(w, std::span<double>(g)));
}
#endif

// RLSE (rowlse.cpp): sum(logsumexp(X, axis<1>)), gradient w.r.t. the matrix variable X.
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_RLSE)
TAD_CG_FN double tad_cg_RLSE(const std::vector<double>& xs, std::size_t rows, std::size_t cols, std::vector<double>& g) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::logsumexp(X, tad::axis<1>));
  return tad::grad_into(L, tad::wrt(X, std::span<double>(g)));
}
#endif

// SMX (softmax.cpp): sum(G * softmax(X, axis<1>)), gradient w.r.t. X.
#if !defined(TAD_CG_ONLY) || defined(TAD_CG_ONLY_SMX)
TAD_CG_FN double tad_cg_SMX(const std::vector<double>& xs, const std::vector<double>& gs, std::size_t rows,
                            std::size_t cols, std::vector<double>& g) {
  auto X = tad::var<"X">(xs.data(), rows, cols);
  auto L = tad::sum(tad::constant(gs.data(), rows, cols) * tad::softmax(X, tad::axis<1>));
  return tad::grad_into(L, tad::wrt(X, std::span<double>(g)));
}
#endif
