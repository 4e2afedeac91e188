// libFuzzer target over a fixed family of compiled tad expressions (issue 6, point 3). Inputs
// with bit 3 of byte 1 set go to the matrix family instead (shapes.cpp; issue 15); common.hpp
// has what both files use (failure reports, limits, tolerances, buffers, the value stream).
//
// The input picks an expression of the family (elementwise ops, binary ops, where/clamp,
// gradient modifiers, reductions, multi-pass expressions), float or double, the misalignment
// of each array, the length, and the values (ordinary moderate numbers, NaN, +-inf, +-0,
// subnormals, huge and tiny magnitudes, ties, points near k pi/2 and near exp's overflow and
// underflow thresholds). For every input it checks
//   (a) the SIMD path against the scalar path: an elementwise expression evaluated over the
//       whole array (SIMD batches, unrolled, then the scalar tail) against the same expression
//       over each length-1 array {x[i]} (the scalar tail only), values and gradients; and
//       reductions and multi-pass expressions against reference loops of our own in double;
//       exact closed forms where the result is exact (ops without rounding, modifiers);
//   (b) gradients of smooth expressions at moderate inputs against central differences of the
//       same expression evaluated in double;
//   (c) no crash, no sanitizer report, no exception except the documented ones.
// Tolerances and the input format: test/fuzz/README.md. A failed check prints what differs and
// aborts, so libFuzzer records the input as a crash.
//
// Compile time: every expression type is instantiated once per element type, in `run` below
// (evaluate, value, grad, grad_into over one engine type each); all checks are plain
// functions on doubles, compiled once.
//
// With TAD_FUZZ_REPLAY_MAIN defined this file also has a main(argc, argv) that runs every file
// of the directories and files it is given through LLVMFuzzerTestOneInput (the seed corpus
// as a plain test, for compilers and builds without libFuzzer).

#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common.hpp"

namespace {

using namespace tad_fuzz;

// ---- the expressions -----------------------------------------------------------------------

/// Parameters of modifiers, read through tad::constant_ref.
template <class T>
struct params {
  T k, lo, hi;
};

/// A run's data: arrays x, y (length n), scalar variable s, parameters.
template <class T>
struct inputs {
  std::span<T> x, y;
  T s;
  params<T> p;
};

enum class kind { elementwise, reduction, multipass_array, multipass_scalar };

// Builders: captureless functors of (x, y, s, params) returning a tad expression. Elementwise
// and multi-pass array ones return an array expression e (the loss is sum(e), resp.
// sum(y * e)); reductions and multi-pass scalar ones return the loss.
#define TAD_FUZZ_EXPR(name, body)                                  \
  struct name {                                                    \
    template <class X, class Y, class S, class P>                  \
    auto operator()(const X& x, const Y& y, const S& s, const P& p) const { \
      (void)x, (void)y, (void)s, (void)p;                          \
      return body;                                                 \
    }                                                              \
  };

TAD_FUZZ_EXPR(e_exp, tad::exp(x))
TAD_FUZZ_EXPR(e_log, tad::log(x))
TAD_FUZZ_EXPR(e_log1p, tad::log1p(x))
TAD_FUZZ_EXPR(e_expm1, tad::expm1(x))
TAD_FUZZ_EXPR(e_sin, tad::sin(x))
TAD_FUZZ_EXPR(e_cos, tad::cos(x))
TAD_FUZZ_EXPR(e_tan, tad::tan(x))
TAD_FUZZ_EXPR(e_tanh, tad::tanh(x))
TAD_FUZZ_EXPR(e_sigmoid, tad::sigmoid(x))
TAD_FUZZ_EXPR(e_softplus, tad::softplus(x))
TAD_FUZZ_EXPR(e_sqrt, tad::sqrt(x))
TAD_FUZZ_EXPR(e_square, tad::square(x))
TAD_FUZZ_EXPR(e_abs, tad::abs(x))
TAD_FUZZ_EXPR(e_relu, tad::relu(x))
TAD_FUZZ_EXPR(e_sign, tad::sign(x))
TAD_FUZZ_EXPR(e_round, tad::round(x))
TAD_FUZZ_EXPR(e_floor, tad::floor(x))
TAD_FUZZ_EXPR(e_ceil, tad::ceil(x))
TAD_FUZZ_EXPR(e_add, x + y)
TAD_FUZZ_EXPR(e_sub, x - y)
TAD_FUZZ_EXPR(e_mul, x * y)
TAD_FUZZ_EXPR(e_div, x / y)
TAD_FUZZ_EXPR(e_pow, tad::pow(x, y))
TAD_FUZZ_EXPR(e_min, tad::min(x, y))
TAD_FUZZ_EXPR(e_max, tad::max(x, y))
TAD_FUZZ_EXPR(e_fma, x * s + y)
TAD_FUZZ_EXPR(e_div_s, x / s)
TAD_FUZZ_EXPR(e_pow_s, tad::pow(x, s))
TAD_FUZZ_EXPR(e_where, tad::where(x > y, x * s, y - s))
TAD_FUZZ_EXPR(e_clamp, tad::clamp(x, y, s))
TAD_FUZZ_EXPR(e_stop, tad::stop_gradient(x) * y)
TAD_FUZZ_EXPR(e_scale, tad::scale_gradient(x * y, tad::constant_ref(p.k)))
TAD_FUZZ_EXPR(e_reverse, tad::reverse_gradient(tad::sin(x), tad::constant_ref(p.k)))
TAD_FUZZ_EXPR(e_clip, tad::clip_gradient(x * y, tad::constant_ref(p.lo), tad::constant_ref(p.hi)))
TAD_FUZZ_EXPR(e_st_round, tad::straight_through(tad::round(x), x))
TAD_FUZZ_EXPR(e_st_trick, x + tad::stop_gradient(tad::round(x) - x))
TAD_FUZZ_EXPR(e_st_sign, tad::straight_through(tad::sign(x), tad::clamp(x, -1, 1)))

inline constexpr auto log1pexp = tad::custom_gradient([](auto v) { return tad::log1p(tad::exp(v)); },
                                                      [](auto dy, auto v, auto /*out*/) { return dy * tad::math::sigmoid(v); });
inline constexpr auto first_only_product = tad::custom_gradient(
    [](auto a, auto b) { return a * b; },
    [](auto dy, auto /*a*/, auto b, auto /*out*/) { return tad::adjoints{dy * b, tad::zero{}}; });
inline constexpr auto times3 = tad::custom_gradient([](auto v) { return v; },
                                                    [](auto dy, auto /*v*/, auto /*out*/) { return 3 * dy; });
struct identity_times3 {
  auto operator()(auto dy, auto /*v*/, auto /*out*/) const { return 3 * dy; }
};
struct pass_through {
  auto operator()(auto dy, auto /*v*/, auto /*out*/) const { return dy; }
};

TAD_FUZZ_EXPR(e_cg_log1pexp, log1pexp(x))
TAD_FUZZ_EXPR(e_cg_product, first_only_product(x, y))
TAD_FUZZ_EXPR(e_override_identity,
              tad::override_gradients(tad::identity(x) * y,
                                      boost::hana::make_map(boost::hana::make_pair(
                                          boost::hana::type_c<tad::identity_op>, identity_times3{}))))
TAD_FUZZ_EXPR(e_override_round,
              tad::override_gradients(tad::round(x), boost::hana::make_map(boost::hana::make_pair(
                                                         boost::hana::type_c<tad::round_op>, pass_through{}))))
// reductions
TAD_FUZZ_EXPR(r_sum, tad::sum(x))
TAD_FUZZ_EXPR(r_mean, tad::mean(x))
TAD_FUZZ_EXPR(r_max, tad::max(x))
TAD_FUZZ_EXPR(r_min, tad::min(x))
TAD_FUZZ_EXPR(r_norm, tad::norm(x))
TAD_FUZZ_EXPR(r_squared_norm, tad::squared_norm(x))
TAD_FUZZ_EXPR(r_dot, tad::dot(x, y))
TAD_FUZZ_EXPR(r_logsumexp, tad::logsumexp(x))
TAD_FUZZ_EXPR(r_sce, tad::softmax_cross_entropy(x, y))
// multi-pass, array-valued (the loss is sum(y * e))
TAD_FUZZ_EXPR(m_center, x - tad::mean(x))
TAD_FUZZ_EXPR(m_layer_norm,
              (x - tad::mean(x)) / tad::sqrt(tad::mean(tad::square(x - tad::mean(x))) + 1e-5))
TAD_FUZZ_EXPR(m_softmax, tad::exp(x - tad::logsumexp(x)))
TAD_FUZZ_EXPR(m_normalize, x / tad::norm(x))
// multi-pass, scalar
TAD_FUZZ_EXPR(m_variance, tad::mean(tad::square(x - tad::mean(x))))
TAD_FUZZ_EXPR(m_lse_clip,
              tad::logsumexp(tad::clip_gradient(x, tad::constant_ref(p.lo), tad::constant_ref(p.hi))))
TAD_FUZZ_EXPR(m_scale_mean, tad::sum(tad::scale_gradient(x, tad::constant_ref(p.k)) * tad::mean(x)))
TAD_FUZZ_EXPR(m_reverse_mean, tad::mean(tad::reverse_gradient(x, tad::constant_ref(p.k)) * x))
TAD_FUZZ_EXPR(m_lse_cg, tad::logsumexp(times3(x)))

#undef TAD_FUZZ_EXPR

/// One run's results, converted to double.
struct result {
  std::vector<double> val, val2;  // evaluate(e, out) and value(e), array kinds
  double value = 0;               // the loss, from grad
  std::vector<double> gx, gy;
  double gs = 0;
  double value_into = 0;          // grad_into into unaligned buffers of our own
  std::vector<double> gx_into, gy_into;
  double gs_into = 0;
  bool threw_domain = false;      // std::domain_error (max/min of an empty array)
  // run_invalid: each entry point threw std::invalid_argument, writing nothing
  bool invalid_ok = true;
  const char* invalid_what = "";
};

enum class mode { full, per_element, loss_only };

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

/// The loss whose gradient is taken: sum(e) for elementwise e, sum(y * e) for multi-pass array
/// e, e itself for scalar e.
template <kind K, class E, class Y>
auto loss_of(const E& e, const Y& y) {
  if constexpr (K == kind::elementwise) return tad::sum(e);
  else if constexpr (K == kind::multipass_array) return tad::sum(y * e);
  else return e;
}
template <kind K>
constexpr bool is_array_kind = K == kind::elementwise || K == kind::multipass_array;

/// Evaluates one expression of the family on `in`: every tad call of this file that depends on
/// the expression's type, except the invalid-bounds check below.
template <class T, class B, kind K>
void run(inputs<T>& in, result& r, mode m, std::size_t buf_off) {
  const auto x = tad::var<"x">(in.x);
  const auto y = tad::var<"y">(in.y);
  const auto s = tad::var<"s">(in.s);
  const auto e = B{}(x, y, s, in.p);
  const auto loss = loss_of<K>(e, y);
  const std::size_t n = in.x.size();
  const T sentinel = T(1234.5);
  if constexpr (is_array_kind<K>) {
    if (m != mode::loss_only) {
      std::vector<T> out(n, sentinel);
      tad::evaluate(e, out);
      r.val = to_double(out);
      if (m == mode::full) r.val2 = to_double(tad::value(e));
    }
  }
  try {
    const auto [v, gx, gy, gs] = tad::grad(loss, x, y, s);
    r.value = v;
    r.gx = to_double(gx);
    r.gy = to_double(gy);
    r.gs = gs;
  } catch (const std::domain_error&) {
    r.threw_domain = true;
    return;
  }
  if (m == mode::full) {
    buffer<T> gx(n, buf_off), gy(n, (buf_off + 3) % 8);
    std::fill(gx.span().begin(), gx.span().end(), sentinel);
    std::fill(gy.span().begin(), gy.span().end(), sentinel);
    T gs = sentinel;
    r.value_into = tad::grad_into(loss, tad::wrt(x, gx.span()), tad::wrt(y, gy.span()), tad::wrt(s, gs));
    r.gx_into.assign(gx.data(), gx.data() + n);
    r.gy_into.assign(gy.data(), gy.data() + n);
    r.gs_into = gs;
  }
}

/// clip_gradient bounds that are NaN or reversed, read through constant_ref: each entry point
/// throws std::invalid_argument before writing anything (gradient-surgery.md).
template <class T, class B, kind K>
void run_invalid(inputs<T>& in, result& r, std::size_t buf_off) {
  const auto x = tad::var<"x">(in.x);
  const auto y = tad::var<"y">(in.y);
  const auto s = tad::var<"s">(in.s);
  const auto e = B{}(x, y, s, in.p);
  const auto loss = loss_of<K>(e, y);
  const std::size_t n = in.x.size();
  const T sentinel = T(1234.5);
  auto expect = [&](const char* what, auto&& f) {
    try {
      f();
      r.invalid_ok = false;
      r.invalid_what = what;
    } catch (const std::invalid_argument&) {
    }
  };
  expect("grad", [&] { (void)tad::grad(loss, x, y, s); });
  buffer<T> gx(n, buf_off), gy(n, (buf_off + 3) % 8);
  std::fill(gx.span().begin(), gx.span().end(), sentinel);
  std::fill(gy.span().begin(), gy.span().end(), sentinel);
  T gs = sentinel;
  expect("grad_into", [&] { (void)tad::grad_into(loss, tad::wrt(x, gx.span()), tad::wrt(y, gy.span()), tad::wrt(s, gs)); });
  for (std::size_t i = 0; i < n; ++i)
    if (gx.data()[i] != sentinel || gy.data()[i] != sentinel) r.invalid_ok = false, r.invalid_what = "grad_into wrote";
  if (gs != sentinel) r.invalid_ok = false, r.invalid_what = "grad_into wrote";
  if constexpr (is_array_kind<K>) {
    std::vector<T> out(n, sentinel);
    expect("evaluate", [&] { tad::evaluate(e, out); });
    for (T v : out)
      if (v != sentinel) r.invalid_ok = false, r.invalid_what = "evaluate wrote";
    expect("value", [&] { (void)tad::value(e); });
  }
}

/// Does tad's schedule for this loss run a scaled pass (plan.hpp: a unit-adjoint pass whose
/// results are scaled afterwards)? Listed with the family (--list).
template <class T, class B, kind K>
constexpr bool scaled_plan() {
  using X = decltype(tad::var<"x">(std::declval<std::span<T>&>()));
  using Y = decltype(tad::var<"y">(std::declval<std::span<T>&>()));
  using S = decltype(tad::var<"s">(std::declval<T&>()));
  using E = decltype(B{}(std::declval<X>(), std::declval<Y>(), std::declval<S>(), std::declval<const params<T>&>()));
  using L = decltype(loss_of<K>(std::declval<E>(), std::declval<Y>()));
  return tad::detail::plan<L, tad::detail::wrt_list<X, Y, S>>::scaled;
}

// ---- tolerances and closed forms of elementwise expressions ---------------------------------

/// One element: inputs, and the results of one path (value, gradients of sum(e)).
struct elem {
  double x, y, s, k, lo, hi;
  double v, gx, gy, gs;
};
struct elem_tol {
  tolerance v = exact, gx = exact, gy = exact, gs = exact;
};
/// Tolerances for the SIMD path against the scalar path, from the scalar path's results.
using tol_fn = elem_tol (*)(const elem&, const limits&);
/// An exact closed form: returns what is wrong, or nullptr.
using closed_fn = const char* (*)(const elem&, const limits&);
/// The domain where the expression is smooth at this element (central differences apply).
using domain_fn = bool (*)(double x, double y, double s);


elem_tol tol_exact(const elem&, const limits&) { return {}; }
elem_tol tol_exp(const elem&, const limits&) { return {ulps(fn_ulps), ulps(fn_ulps), exact, exact}; }
elem_tol tol_log(const elem&, const limits&) { return {ulps(fn_ulps), exact, exact, exact}; }
elem_tol tol_expm1(const elem& e, const limits& L) {
  // gradient y + 1: y's error, absolute, survives the cancellation near y = -1
  return {ulps(fn_ulps), ulps(1, fn_ulps * L.eps * std::abs(e.v)), exact, exact};
}
/// sin, cos: 4 ulps, or an absolute 4 eps near their zeros (math.md: batch double cos near
/// k pi/2 is off by up to 25,533 ulps, with absolute error <= 4 eps).
tolerance trig(const limits& L) { return ulps(fn_ulps, 4 * L.eps); }
elem_tol tol_sincos(const elem&, const limits& L) { return {trig(L), trig(L), exact, exact}; }
elem_tol tol_tan(const elem& e, const limits& L) {
  // value: 4 ulps or 4 eps (1 + tan^2) absolute (math.md); gradient 1 + y^2: twice |y| times that
  const double a = 4 * L.eps * (1 + e.v * e.v);
  return {ulps(fn_ulps, a), ulps(fn_ulps, 2 * std::abs(e.v) * a), exact, exact};
}
elem_tol tol_tanh(const elem& e, const limits& L) {
  // gradient 1 - y^2: y's 4 ulps become 8 eps y^2 absolute where 1 - y^2 cancels
  return {ulps(fn_ulps), ulps(2, 2 * fn_ulps * L.eps * e.v * e.v), exact, exact};
}
elem_tol tol_sigmoid(const elem& e, const limits& L) {
  // gradient y (1 - y): 8 eps y absolute where 1 - y cancels
  return {ulps(fn_ulps), ulps(fn_ulps, 2 * fn_ulps * L.eps * std::abs(e.v)), exact, exact};
}
elem_tol tol_softplus(const elem&, const limits&) { return {ulps(fn_ulps), ulps(fn_ulps), exact, exact}; }
/// `x * s + y`: either path may contract the product into an FMA (g++ does by default, clang
/// within a statement), which differs from the rounded product by up to half an ulp of x * s.
elem_tol tol_fma(const elem& e, const limits& L) {
  return {ulps(2, 2 * L.eps * std::abs(e.x * e.s)), exact, exact, exact};
}
elem_tol tol_reverse(const elem& e, const limits& L) {
  // value sin; gradient -k cos: cos's tolerance scaled by |k|
  return {trig(L), ulps(fn_ulps + 1, 4 * L.eps * std::abs(e.k)), exact, exact};
}
elem_tol tol_log1pexp(const elem&, const limits&) {
  // log1p(exp(x)): both functions' errors; gradient sigmoid
  return {ulps(2 * fn_ulps), ulps(fn_ulps), exact, exact};
}

/// pow(a, b), xsimd's exp(b log|a|) against glibc (math.md): the error grows with |b ln a|
/// (14 ulps below 10, 143 below 100, 997 below 708); subnormal a gives wrong results, and
/// results beyond xsimd's exp range become 0 or inf early. Those two are skipped.
tolerance pow_tol(double a, double b, const limits& L) {
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b) || a == 0 || std::abs(a) == 1 || b == 0)
    return exact;  // special cases, restored to std::pow's exact results
  if (std::abs(a) < L.min) return skipped;
  const double l = b * std::log(std::abs(a));
  const double lo = L.dbl ? -708.39 : -87.33, hi = L.dbl ? 709.43 : 88.37;
  if (!(l > lo + 1 && l < hi - 1)) return skipped;
  return ulps(16 + 2 * std::abs(l));
}
elem_tol pow_tols(double a, double b, const limits& L) {
  elem_tol t;
  t.v = pow_tol(a, b, L);
  // d/da = b pow(a, b - 1): pow's tolerance at b - 1, one more rounding
  t.gx = pow_tol(a, b - 1, L);
  if (!t.gx.skip && t.gx.ulps > 0) t.gx.ulps += 1;
  if (b == 0) t.gx = exact;  // select: 0
  // d/db = y log(a): pow's tolerance plus log's
  t.gy = t.v;
  if (!t.gy.skip) t.gy.ulps += fn_ulps + 1;
  if (std::abs(a) < L.min && a != 0) t.gy = skipped;
  return t;
}
elem_tol tol_pow(const elem& e, const limits& L) { return pow_tols(e.x, e.y, L); }
elem_tol tol_pow_s(const elem& e, const limits& L) {
  const elem_tol t = pow_tols(e.x, e.s, L);
  return {t.v, t.gx, exact, t.gy};
}

double nearbyint_(double v, const limits& L) { return L.dbl ? std::nearbyint(v) : double(std::nearbyint(float(v))); }
/// sign(NaN) = +0, as PyTorch and TensorFlow (doc/semantics.md).
double sign_(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }

/// Is got the exact result want (NaN for NaN; the sign of a zero when `zero_sign`)?
bool is(double got, double want, bool zero_sign = false) {
  if (std::isnan(want)) return std::isnan(got);
  if (got != want) return false;
  return !zero_sign || std::signbit(got) == std::signbit(want);
}

#define TAD_FUZZ_EXPECT(cond, msg) \
  do {                             \
    if (!(cond)) return msg;       \
  } while (0)

const char* closed_nondiff(const elem& e) {
  TAD_FUZZ_EXPECT(is(e.gx, 0, true) && is(e.gy, 0, true) && is(e.gs, 0, true),
                  "gradient of a piecewise-constant op must be a structural (+0) zero");
  return nullptr;
}
const char* closed_sqrt(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(std::sqrt(e.x)), true), "sqrt is correctly rounded in both paths");
  return nullptr;
}
const char* closed_square(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.x)), "square(x) == x * x");
  TAD_FUZZ_EXPECT(is(e.gx, L.rnd(2 * e.x)), "d square(x) == 2x");
  return nullptr;
}
const char* closed_abs(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, std::abs(e.x), true), "abs(x) == |x|, abs(-0) == +0");
  TAD_FUZZ_EXPECT(is(e.gx, sign_(e.x)), "d abs(x) == sign(x), 0 at 0 and at NaN");
  return nullptr;
}
const char* closed_relu(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, e.x < 0 ? 0.0 : e.x), "relu(x) == max(x, 0), NaN stays NaN");
  const double y = e.x < 0 ? 0.0 : e.x;
  TAD_FUZZ_EXPECT(is(e.gx, y <= 0 ? 0.0 : 1.0), "d relu(x): 0 where relu(x) <= 0, else 1 (1 at NaN)");
  return nullptr;
}
const char* closed_sign(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, sign_(e.x), true), "sign(x) in {-1, +0, 1}, +0 for NaN");
  return closed_nondiff(e);
}
const char* closed_round(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, nearbyint_(e.x, L), true), "round(x) == nearbyint(x) (half to even, sign of zero kept)");
  return closed_nondiff(e);
}
const char* closed_floor(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, std::floor(e.x), true), "floor(x) == std::floor(x), sign of zero kept");
  return closed_nondiff(e);
}
const char* closed_ceil(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, std::ceil(e.x), true), "ceil(x) == std::ceil(x), sign of zero kept");
  return closed_nondiff(e);
}
// Double rounding of a float +, -, *, / computed in double is innocuous (53 >= 2 * 24 + 2), so
// L.rnd(a op b) is the float result.
const char* closed_add(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x + e.y)) && is(e.gx, 1) && is(e.gy, 1), "x + y");
  return nullptr;
}
const char* closed_sub(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x - e.y)) && is(e.gx, 1) && is(e.gy, -1), "x - y");
  return nullptr;
}
const char* closed_mul(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)) && is(e.gx, e.y) && is(e.gy, e.x), "x * y");
  return nullptr;
}
const char* closed_div(const elem& e, const limits& L) {
  const double q = L.rnd(1 / e.y);
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x / e.y)), "x / y");
  TAD_FUZZ_EXPECT(is(e.gx, q) && is(e.gy, L.rnd(-(q * L.rnd(e.x / e.y)))), "d(x / y): 1/y, -(1/y) (x/y)");
  return nullptr;
}
double max_(double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : a < b ? b : a; }
double min_(double a, double b) { return std::isnan(a) || std::isnan(b) ? a + b : b < a ? b : a; }
const char* closed_min(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, min_(e.x, e.y)), "min(x, y): NaN from either side");
  const double share = e.x == e.y ? 0.5 : 1;  // NaN: no comparison holds, both get all
  TAD_FUZZ_EXPECT(is(e.gx, e.x > e.y ? 0 : share) && is(e.gy, e.x < e.y ? 0 : share),
                  "d min(x, y): 1 to the smaller, 1/2 each at a tie, 1 to both at a NaN");
  return nullptr;
}
const char* closed_max(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, max_(e.x, e.y)), "max(x, y): NaN from either side");
  const double share = e.x == e.y ? 0.5 : 1;  // NaN: no comparison holds, both get all
  TAD_FUZZ_EXPECT(is(e.gx, e.x < e.y ? 0 : share) && is(e.gy, e.x > e.y ? 0 : share),
                  "d max(x, y): 1 to the larger, 1/2 each at a tie, 1 to both at a NaN");
  return nullptr;
}
const char* closed_fma(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.gx, e.s) && is(e.gy, 1) && is(e.gs, e.x), "d(x s + y)");
  return nullptr;
}
const char* closed_div_s(const elem& e, const limits& L) {
  const double r = L.rnd(1 / e.s);
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * r)), "x / s == x * (1 / s)");
  TAD_FUZZ_EXPECT(is(e.gx, r) && is(e.gs, L.rnd(-L.rnd(e.x * r) * r)), "d(x / s)");
  return nullptr;
}
const char* closed_where(const elem& e, const limits& L) {
  const bool m = e.x > e.y;
  TAD_FUZZ_EXPECT(is(e.v, m ? L.rnd(e.x * e.s) : L.rnd(e.y - e.s)), "where(x > y, x s, y - s)");
  // The branch not taken gets adjoint 0, which the product's rule multiplies by the other
  // factor as IEEE arithmetic does (0 * inf is NaN, as in PyTorch's where).
  const double a = m ? 1 : 0, b = m ? 0 : 1;
  TAD_FUZZ_EXPECT(is(e.gx, a * e.s) && is(e.gy, b) && is(e.gs, L.rnd(a * e.x - b)),
                  "the gradient of where goes to the chosen branch only");
  return nullptr;
}
const char* closed_clamp(const elem& e, const limits&) {
  const double lo = e.y, hi = e.s, x = e.x;
  TAD_FUZZ_EXPECT(is(e.v, min_(max_(x, lo), hi)), "clamp(x, lo, hi) == min(max(x, lo), hi), NaN from any");
  TAD_FUZZ_EXPECT(is(e.gx, (x >= lo && x <= hi) ? 1 : 0) && is(e.gy, (x < lo && lo <= hi) ? 1 : 0) &&
                      is(e.gs, (x > hi || (x < lo && lo > hi)) ? 1 : 0),
                  "d clamp: x on [lo, hi] incl. the bounds (not at NaN), lo where x < lo <= hi, hi where "
                  "the result is hi by the upper clamp");
  return nullptr;
}
const char* closed_stop(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)) && is(e.gx, 0, true) && is(e.gy, e.x), "stop_gradient(x) * y");
  return nullptr;
}
const char* closed_scale(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)), "value of scale_gradient(x * y, k)");
  TAD_FUZZ_EXPECT(is(e.gx, L.rnd(e.k * e.y)) && is(e.gy, L.rnd(e.k * e.x)), "scale_gradient: backward k dy");
  return nullptr;
}
double clip_(double d, double lo, double hi) { return d < lo ? lo : d > hi ? hi : d; }
const char* closed_clip(const elem& e, const limits& L) {
  const double c = clip_(1, e.lo, e.hi);
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)), "value of clip_gradient(x * y, lo, hi)");
  TAD_FUZZ_EXPECT(is(e.gx, L.rnd(c * e.y)) && is(e.gy, L.rnd(c * e.x)), "clip_gradient: backward clip(dy, lo, hi)");
  return nullptr;
}
const char* closed_st_round(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, nearbyint_(e.x, L), true), "straight-through round: the value round(x) exactly");
  TAD_FUZZ_EXPECT(is(e.gx, 1), "straight-through round: gradient 1");
  return nullptr;
}
const char* closed_st_sign(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.v, sign_(e.x), true), "straight_through(sign(x), clamp(x, -1, 1)): value sign(x)");
  TAD_FUZZ_EXPECT(is(e.gx, (e.x >= -1 && e.x <= 1) ? 1 : 0), "straight_through(sign(x), clamp(x, -1, 1)): gradient of clamp");
  return nullptr;
}
const char* closed_cg_log1pexp(const elem& e, const limits&) {
  TAD_FUZZ_EXPECT(is(e.gy, 0, true) && is(e.gs, 0, true), "custom gradient of x only");
  return nullptr;
}
const char* closed_cg_product(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)) && is(e.gx, e.y) && is(e.gy, 0, true),
                  "custom_gradient(a * b; {dy b, zero}): gradient y and a structural zero");
  return nullptr;
}
const char* closed_override_identity(const elem& e, const limits& L) {
  TAD_FUZZ_EXPECT(is(e.v, L.rnd(e.x * e.y)) && is(e.gx, L.rnd(3 * e.y)) && is(e.gy, e.x),
                  "override_gradients(identity(x) * y, identity -> 3 dy)");
  return nullptr;
}

#undef TAD_FUZZ_EXPECT

bool dom_any(double, double, double) { return true; }
bool dom_pos(double x, double, double) { return x > 0; }
bool dom_log1p(double x, double, double) { return x > -0.99; }
bool dom_tan(double x, double, double) { return std::abs(std::cos(x)) > 0.1; }
/// Away from a kink at x == y (the central differences' steps stay below 4e-4 |x|).
bool apart(double a, double b) { return std::abs(a - b) > 1e-3 * std::max({std::abs(a), std::abs(b), 1e-2}); }
bool dom_apart(double x, double y, double) { return apart(x, y); }
bool dom_pow_s(double x, double, double) { return x > 0; }
// The bounds apart too: a central difference in y (or s) by h must not cross the other bound
// (y = 0.001953125, s = y + 6e-8 with h = 1e-6 did, corpus/clamp-close-bounds-f2).
bool dom_clamp(double x, double y, double s) { return y < s && apart(x, y) && apart(x, s) && apart(y, s); }

// ---- reductions and multi-pass expressions: references in double ---------------------------

/// Everything a reference check sees.
struct ctx {
  limits L;
  std::vector<double> x, y;
  double s, k, lo, hi;
  std::size_t n;
};
using ref_fn = void (*)(const ctx&, const result&);
/// The whole-array domain where central differences apply.
using array_domain_fn = bool (*)(const ctx&);

void expect_value(bool ok, const result& r, const char* what, double want) {
  if (!ok) fail("%s: tad %.17g, reference %.17g", what, r.value, want);
}
/// The tolerance each reference check allowed for d/dx[i] and d/dy[i]: its model of T's rounding.
/// Central differences allow at least twice that (float layer norm of nearly equal values: the
/// gradient's rounding error is amplified by |x| / sd, beyond grad_tol).
struct recorded_tolerances {
  const std::vector<double>* gx = nullptr;
  const std::vector<double>* gy = nullptr;
  std::vector<double> x, y;
} g_tols;

void expect_grad(const char* what, const std::vector<double>& got, std::size_t i, double want, double tol) {
  if (&got == g_tols.gx) g_tols.x[i] = std::max(g_tols.x[i], tol);
  if (&got == g_tols.gy) g_tols.y[i] = std::max(g_tols.y[i], tol);
  const double g = got[i];
  const bool ok = std::isnan(want) ? std::isnan(g) : (std::isfinite(g) && std::abs(g - want) <= tol) || g == want;
  if (!ok) fail("%s[%zu]: tad %.17g, reference %.17g (tolerance %.3g)", what, i, g, want, tol);
}
void expect_zero_grad(const char* what, const std::vector<double>& g) {
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!is(g[i], 0)) fail("%s[%zu] = %.17g: the expression does not contain the variable", what, i, g[i]);
}

/// The T-rounded terms of a sum of products a_i * b_i (squares when b is a), as a sum_ref.
/// A finite product that overflows, or a term near overflow, makes the sum `overflow`. An
/// FMA-contracted accumulation keeps the product unrounded: an absolute denorm_min per term.
sum_ref products(const ctx& c, const std::vector<double>& a, const std::vector<double>& b) {
  sum_ref s;
  for (std::size_t i = 0; i < c.n; ++i) {
    const double p = c.L.rnd(a[i] * b[i]);
    const bool overflowed = std::isinf(p) && std::isfinite(a[i]) && std::isfinite(b[i]);
    s.add(p, c.L.eps * std::abs(p) + c.L.denorm, !overflowed);
  }
  return s;
}

void ref_sum(const ctx& c, const result& r) {
  sum_ref s;
  for (double v : c.x) s.add(v);
  expect_value(s.agrees(r.value, c.L), r, "sum(x)", s.fin);
  for (std::size_t i = 0; i < c.n; ++i) expect_grad("d sum(x)/dx", r.gx, i, 1, 0);
}
void ref_mean(const ctx& c, const result& r) {
  if (c.n == 0) {
    if (!std::isnan(r.value)) fail("mean of an empty array must be NaN, got %.17g", r.value);
    return;
  }
  sum_ref s;
  for (double v : c.x) s.add(v);
  expect_value(s.agrees(r.value, c.L, 1.0 / double(c.n)), r, "mean(x)", s.fin / double(c.n));
  const double g = c.L.rnd(1.0 / c.L.rnd(double(c.n)));
  for (std::size_t i = 0; i < c.n; ++i) expect_grad("d mean(x)/dx", r.gx, i, g, 0);
}
template <bool Max>
void ref_extremum(const ctx& c, const result& r) {
  const char* name = Max ? "max(x)" : "min(x)";
  if (c.n == 0) {
    if (!r.threw_domain) fail("%s of an empty array must throw std::domain_error", name);
    return;
  }
  if (r.threw_domain) fail("%s threw std::domain_error on a non-empty array", name);
  if (any_nan(c.x)) {  // the NaNs share the gradient (PyTorch's evenly_distribute_backward)
    if (!std::isnan(r.value)) fail("%s with a NaN must be NaN, got %.17g", name, r.value);
    std::size_t nans = 0;
    for (double v : c.x) nans += std::isnan(v);
    const double g = c.L.rnd(1.0 / double(nans));
    for (std::size_t i = 0; i < c.n; ++i)
      expect_grad(Max ? "d max(x)/dx with NaNs" : "d min(x)/dx with NaNs", r.gx, i, std::isnan(c.x[i]) ? g : 0, 0);
    return;
  }
  double m = c.x[0];
  for (double v : c.x) m = Max ? std::max(m, v) : std::min(m, v);
  if (r.value != m) fail("%s: tad %.17g, reference %.17g", name, r.value, m);
  std::size_t count = 0;
  for (double v : c.x) count += v == m;
  const double g = c.L.rnd(1.0 / double(count));
  for (std::size_t i = 0; i < c.n; ++i) expect_grad(Max ? "d max(x)/dx" : "d min(x)/dx", r.gx, i, c.x[i] == m ? g : 0, 0);
}

/// sqrt of a T sum with reference s: got within the rounding of the sum and of sqrt.
bool sqrt_of_sum_ok(double got, const sum_ref& s, const limits& L) {
  if (s.expect_nan()) return std::isnan(got);
  if (s.overflow(L)) return true;
  if (s.pinf) return std::isinf(got) && got > 0;
  const double t = (double(s.n) + 8) * L.eps * s.absfin + s.tol + (double(s.n) + 4) * L.denorm;
  const double lo = std::sqrt(std::max(0.0, s.fin - t)), hi = std::sqrt(s.fin + t);
  return got >= lo * (1 - 2 * L.eps) && got <= hi * (1 + 2 * L.eps);
}

void ref_norm(const ctx& c, const result& r) {
  const sum_ref s = products(c, c.x, c.x);
  if (!sqrt_of_sum_ok(r.value, s, c.L)) fail("norm(x): tad %.17g, reference sqrt(%.17g)", r.value, s.fin);
  if (!finite_all(c.x) || s.overflow(c.L)) return;
  if (s.absfin == 0) {  // every square is 0 in T: the value is 0 and the gradient 0 (PyTorch)
    for (std::size_t i = 0; i < c.n; ++i) expect_grad("d norm(x)/dx at 0", r.gx, i, 0, 0);
    return;
  }
  if (s.fin < c.L.min * 1e6) return;  // subnormal squares: no relative accuracy
  const double nrm = std::sqrt(s.fin);
  const double rel = (double(c.n) + 8) * c.L.eps + s.tol / s.fin + 4 * c.L.eps;
  for (std::size_t i = 0; i < c.n; ++i) {
    const double w = c.x[i] / nrm;
    expect_grad("d norm(x)/dx", r.gx, i, w, std::abs(w) * rel + 4 * c.L.denorm);
  }
}
void ref_squared_norm(const ctx& c, const result& r) {
  const sum_ref s = products(c, c.x, c.x);
  expect_value(s.agrees(r.value, c.L), r, "squared_norm(x)", s.fin);
  for (std::size_t i = 0; i < c.n; ++i) expect_grad("d squared_norm(x)/dx", r.gx, i, c.L.rnd(2 * c.x[i]), 0);
}
void ref_dot(const ctx& c, const result& r) {
  const sum_ref s = products(c, c.x, c.y);
  expect_value(s.agrees(r.value, c.L), r, "dot(x, y)", s.fin);
  for (std::size_t i = 0; i < c.n; ++i) {
    expect_grad("d dot/dx", r.gx, i, c.y[i], 0);
    expect_grad("d dot/dy", r.gy, i, c.x[i], 0);
  }
}

/// logsumexp of v as tad computes it: m + log(sum(exp(v - m))), m the maximum (0 if not finite).
struct lse_ref {
  bool valid = false;  // finite maximum and no NaN: value and softmax below are meaningful
  double value = 0, tol = 0;
  std::vector<double> softmax, softmax_tol;
};
lse_ref make_lse(const std::vector<double>& v, const limits& L) {
  lse_ref r;
  const std::size_t n = v.size();
  if (n == 0) {
    r.value = -std::numeric_limits<double>::infinity();
    return r;
  }
  if (any_nan(v)) {
    r.value = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const double m = *std::max_element(v.begin(), v.end());
  if (std::isinf(m)) {  // +inf gives +inf; all -inf gives -inf (semantics.md)
    r.value = m;
    return r;
  }
  double S = 0, dS = 0;
  std::vector<double> t(n), rel(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = v[i] - m;  // <= 0
    t[i] = std::exp(d);
    // v - m rounded in T: absolute eps |d|; exp: 4 ulps
    rel[i] = L.eps * (std::abs(d) + std::abs(m)) + (fn_ulps + 1) * L.eps;
    S += t[i];
    dS += (t[i] > 0 ? t[i] * rel[i] : 0) + L.denorm;  // t = 0 for x = -inf
  }
  dS += (double(n) + 8) * L.eps * S;
  const double lse = m + std::log(S);
  r.valid = true;
  r.value = lse;
  r.tol = dS / S + L.eps * std::abs(m) + (fn_ulps + 1) * L.eps * (std::abs(std::log(S)) + std::abs(lse)) + L.denorm;
  r.softmax.resize(n);
  r.softmax_tol.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    r.softmax[i] = t[i] / S;
    r.softmax_tol[i] = (t[i] > 0 ? r.softmax[i] * (rel[i] + dS / S + 3 * L.eps) : 0) + 4 * L.denorm;
  }
  return r;
}
void expect_lse_value(const lse_ref& l, const result& r, const char* what) {
  if (l.valid) {
    if (!(std::abs(r.value - l.value) <= l.tol)) fail("%s: tad %.17g, reference %.17g (tolerance %.3g)", what, r.value, l.value, l.tol);
  } else if (!same_bits_or_nan(r.value, l.value) && !(r.value == l.value)) {
    fail("%s: tad %.17g, expected %.17g", what, r.value, l.value);
  }
}
void ref_logsumexp(const ctx& c, const result& r) {
  const lse_ref l = make_lse(c.x, c.L);
  expect_lse_value(l, r, "logsumexp(x)");
  if (!l.valid) return;
  for (std::size_t i = 0; i < c.n; ++i) expect_grad("d logsumexp(x)/dx (softmax)", r.gx, i, l.softmax[i], l.softmax_tol[i]);
}
void ref_lse_clip(const ctx& c, const result& r) {
  const lse_ref l = make_lse(c.x, c.L);
  expect_lse_value(l, r, "logsumexp(clip_gradient(x, lo, hi))");
  if (!l.valid) return;
  // each softmax element clipped (gradient-surgery.md); clipping is 1-Lipschitz
  for (std::size_t i = 0; i < c.n; ++i)
    expect_grad("d logsumexp(clip_gradient(x))/dx", r.gx, i, clip_(l.softmax[i], c.lo, c.hi), l.softmax_tol[i]);
}
void ref_lse_cg(const ctx& c, const result& r) {
  const lse_ref l = make_lse(c.x, c.L);
  expect_lse_value(l, r, "logsumexp(times3(x))");
  if (!l.valid) return;
  for (std::size_t i = 0; i < c.n; ++i)
    expect_grad("d logsumexp(times3(x))/dx", r.gx, i, 3 * l.softmax[i], 3 * l.softmax_tol[i] + c.L.eps * 3 * l.softmax[i]);
}
void ref_sce(const ctx& c, const result& r) {
  if (c.n == 0) {
    if (!std::isnan(r.value)) fail("softmax_cross_entropy of empty arrays must be NaN, got %.17g", r.value);
    return;
  }
  if (any_nan(c.x) || any_nan(c.y)) {
    if (!std::isnan(r.value)) fail("softmax_cross_entropy with a NaN must be NaN, got %.17g", r.value);
    return;
  }
  if (!tame_all(c.x) || !tame_all(c.y)) return;
  const lse_ref l = make_lse(c.x, c.L);
  double St = 0, aSt = 0, D = 0, aD = 0;
  for (std::size_t i = 0; i < c.n; ++i) {
    St += c.y[i];
    aSt += std::abs(c.y[i]);
    D += c.y[i] * c.x[i];
    aD += std::abs(c.y[i] * c.x[i]);
  }
  const double nn = double(c.n) + 8;
  const double dSt = nn * c.L.eps * aSt, dD = nn * c.L.eps * aD;
  const double want = St * l.value - D;
  // Each product y x and the final St lse - D may round into the subnormal range (float
  // targets of 1e-45: the loss is a few denorm_min): an absolute denorm_min per rounding.
  const double tol = std::abs(St) * l.tol + std::abs(l.value) * dSt + dD + 4 * c.L.eps * (std::abs(St * l.value) + std::abs(D)) +
                     (nn + 4) * c.L.denorm;
  if (!(std::abs(r.value - want) <= tol)) fail("softmax_cross_entropy: tad %.17g, reference %.17g (tolerance %.3g)", r.value, want, tol);
  for (std::size_t i = 0; i < c.n; ++i) {
    const double p = l.softmax[i];
    const double gz = St * p - c.y[i];
    const double tz = std::abs(St) * l.softmax_tol[i] + p * dSt + 4 * c.L.eps * (std::abs(St * p) + std::abs(c.y[i])) +
                      4 * c.L.denorm;
    expect_grad("d sce/dz (sum(t) softmax - t)", r.gx, i, gz, tz);
    const double gt = l.value - c.x[i];
    expect_grad("d sce/dt (logsumexp - z)", r.gy, i, gt, l.tol + 4 * c.L.eps * (std::abs(l.value) + std::abs(c.x[i])));
  }
}

/// mean(v) in double with the T rounding of its computation, for tame v.
struct mean_ref {
  double m = 0, tol = 0, abs_mean = 0;
};
mean_ref make_mean(const std::vector<double>& v, const limits& L) {
  mean_ref r;
  if (v.empty()) return r;
  double s = 0, a = 0;
  for (double e : v) s += e, a += std::abs(e);
  const double n = double(v.size());
  r.m = s / n;
  r.abs_mean = a / n;
  r.tol = (n + 8) * L.eps * a / n + 2 * L.eps * std::abs(r.m) + 2 * L.denorm;
  return r;
}

/// Array values of a multi-pass expression: NaN everywhere when x has a NaN.
bool nan_everywhere_if_nan(const ctx& c, const result& r, const char* what) {
  if (!any_nan(c.x)) return false;
  for (std::size_t i = 0; i < c.n; ++i)
    if (!std::isnan(r.val[i])) fail("%s[%zu]: x has a NaN, so every element must be NaN; got %.17g", what, i, r.val[i]);
  return true;
}
void expect_elem(const char* what, const std::vector<double>& got, std::size_t i, double want, double tol) {
  expect_grad(what, got, i, want, tol);
}

void ref_center(const ctx& c, const result& r) {
  if (nan_everywhere_if_nan(c, r, "x - mean(x)") || !tame_all(c.x)) return;
  const mean_ref m = make_mean(c.x, c.L);
  for (std::size_t i = 0; i < c.n; ++i) {
    const double t = m.tol + 2 * c.L.eps * (std::abs(c.x[i]) + std::abs(m.m));
    expect_elem("x - mean(x)", r.val, i, c.x[i] - m.m, t);
    expect_grad("d sum(y (x - mean(x)))/dy", r.gy, i, c.x[i] - m.m, t);
  }
  if (!tame_all(c.y)) return;
  const mean_ref my = make_mean(c.y, c.L);
  for (std::size_t i = 0; i < c.n; ++i)
    expect_grad("d sum(y (x - mean(x)))/dx", r.gx, i, c.y[i] - my.m, my.tol + 2 * c.L.eps * (std::abs(c.y[i]) + std::abs(my.m)));
}

/// Centered values d, their T rounding errors, and the variance.
struct centered {
  mean_ref m;
  std::vector<double> d, dd;
  double var = 0, dvar = 0;
};
centered make_centered(const ctx& c) {
  centered r;
  r.m = make_mean(c.x, c.L);
  const double n = double(c.n);
  r.d.resize(c.n);
  r.dd.resize(c.n);
  double sq = 0, dsq = 0;
  for (std::size_t i = 0; i < c.n; ++i) {
    r.d[i] = c.x[i] - r.m.m;
    r.dd[i] = r.m.tol + 2 * c.L.eps * (std::abs(c.x[i]) + std::abs(r.m.m));
    sq += r.d[i] * r.d[i];
    dsq += 2 * std::abs(r.d[i]) * r.dd[i] + r.dd[i] * r.dd[i];
  }
  if (c.n) {
    r.var = sq / n;
    r.dvar = dsq / n + (n + 8) * c.L.eps * r.var + n * c.L.denorm;
  }
  return r;
}

void ref_variance(const ctx& c, const result& r) {
  if (c.n == 0) {
    if (!std::isnan(r.value)) fail("variance of an empty array must be NaN, got %.17g", r.value);
    return;
  }
  if (any_nan(c.x)) {
    if (!std::isnan(r.value)) fail("variance with a NaN must be NaN, got %.17g", r.value);
    return;
  }
  if (!tame_all(c.x)) return;
  const centered z = make_centered(c);
  if (!(std::abs(r.value - z.var) <= 2 * z.dvar)) fail("mean(square(x - mean(x))): tad %.17g, reference %.17g (tolerance %.3g)", r.value, z.var, 2 * z.dvar);
  const double n = double(c.n);
  double sum_abs_d = 0;
  for (double d : z.d) sum_abs_d += std::abs(d);
  for (std::size_t i = 0; i < c.n; ++i) {
    // 2 d_i / n, plus the rounding of sum(d) (exactly 0 in exact arithmetic) times 2 / n
    const double t = 2 * (z.dd[i] + (n + 8) * c.L.eps * sum_abs_d / n + 2 * c.L.eps * std::abs(z.d[i])) / n + 4 * c.L.denorm;
    expect_grad("d variance/dx (2 (x - mean) / n)", r.gx, i, 2 * z.d[i] / n, 4 * t);
  }
}

void ref_layer_norm(const ctx& c, const result& r) {
  if (nan_everywhere_if_nan(c, r, "layer norm") || !tame_all(c.x)) return;
  const centered z = make_centered(c);
  const double epsilon = c.L.rnd(1e-5);
  const double v = z.var + epsilon, sd = std::sqrt(v);
  const double rel_sd = (2 * z.dvar + c.L.eps * v) / (2 * v) + 3 * c.L.eps;
  std::vector<double> e(c.n), de(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    e[i] = z.d[i] / sd;
    de[i] = (z.dd[i] + 2 * c.L.denorm) / sd + std::abs(e[i]) * (rel_sd + 2 * c.L.eps) + 4 * c.L.denorm;
    expect_elem("(x - mean) / sqrt(var + 1e-5)", r.val, i, e[i], 2 * de[i]);
    expect_grad("d sum(y layer_norm(x))/dy", r.gy, i, e[i], 2 * de[i]);
  }
  if (!tame_all(c.y)) return;
  const mean_ref my = make_mean(c.y, c.L);
  double ye = 0, aye = 0, ayde = 0;
  for (std::size_t i = 0; i < c.n; ++i) ye += c.y[i] * e[i], aye += std::abs(c.y[i] * e[i]), ayde += std::abs(c.y[i]) * de[i];
  const double n = double(c.n), nn = n + 8;
  for (std::size_t i = 0; i < c.n; ++i) {
    const double inner = c.y[i] - my.m - e[i] * ye / n;
    const double g = inner / sd;
    const double t = (nn * c.L.eps * (std::abs(c.y[i]) + my.abs_mean + std::abs(e[i]) * aye / n) + my.tol +
                      std::abs(e[i]) * ayde / n + de[i] * std::abs(ye) / n + nn * c.L.denorm) / sd +
                     std::abs(g) * rel_sd;
    expect_grad("d sum(y layer_norm(x))/dx", r.gx, i, g, 4 * t + 4 * c.L.denorm);
  }
}

void ref_softmax(const ctx& c, const result& r) {
  if (nan_everywhere_if_nan(c, r, "exp(x - logsumexp(x))") || !tame_all(c.x)) return;
  const lse_ref l = make_lse(c.x, c.L);
  std::vector<double> p(c.n), dp(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    p[i] = std::exp(c.x[i] - l.value);
    dp[i] = p[i] * (2 * c.L.eps * (std::abs(c.x[i]) + std::abs(l.value)) + l.tol + (fn_ulps + 1) * c.L.eps) + 4 * c.L.denorm;
    expect_elem("exp(x - logsumexp(x))", r.val, i, p[i], dp[i]);
    expect_grad("d sum(y softmax(x))/dy", r.gy, i, p[i], dp[i]);
  }
  if (!tame_all(c.y)) return;
  double yp = 0, ayp = 0, aydp = 0;
  for (std::size_t i = 0; i < c.n; ++i) yp += c.y[i] * p[i], ayp += std::abs(c.y[i] * p[i]), aydp += std::abs(c.y[i]) * dp[i];
  const double nn = double(c.n) + 8;
  for (std::size_t i = 0; i < c.n; ++i) {
    const double g = p[i] * (c.y[i] - yp);
    const double t = dp[i] * (std::abs(c.y[i]) + std::abs(yp)) + p[i] * (aydp + nn * c.L.eps * (ayp + std::abs(c.y[i])));
    expect_grad("d sum(y softmax(x))/dx", r.gx, i, g, 2 * t + 4 * c.L.denorm);
  }
}

void ref_normalize(const ctx& c, const result& r) {
  if (nan_everywhere_if_nan(c, r, "x / norm(x)") || !tame_all(c.x)) return;
  const sum_ref s = products(c, c.x, c.x);
  if (s.absfin == 0) {  // norm 0: x * (1 / 0), NaN for the zeros, +-inf elsewhere
    for (std::size_t i = 0; i < c.n; ++i) {
      const double w = c.x[i] == 0 ? std::numeric_limits<double>::quiet_NaN()
                                    : std::copysign(std::numeric_limits<double>::infinity(), c.x[i]);
      if (!is(r.val[i], w)) fail("x / norm(x) at norm 0, [%zu]: tad %.17g, expected %.17g", i, r.val[i], w);
    }
    return;
  }
  if (s.fin < c.L.min * 1e6) return;  // subnormal squares: no relative accuracy
  const double N = std::sqrt(s.fin);
  const double rel = ((double(c.n) + 8) * c.L.eps + s.tol / s.fin) / 2 + 4 * c.L.eps;
  std::vector<double> e(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    e[i] = c.x[i] / N;
    expect_elem("x / norm(x)", r.val, i, e[i], std::abs(e[i]) * rel + 4 * c.L.denorm);
    expect_grad("d sum(y x / norm(x))/dy", r.gy, i, e[i], std::abs(e[i]) * rel + 4 * c.L.denorm);
  }
  if (!tame_all(c.y)) return;
  double ye = 0, aye = 0;
  for (std::size_t i = 0; i < c.n; ++i) ye += c.y[i] * e[i], aye += std::abs(c.y[i] * e[i]);
  const double nn = double(c.n) + 8;
  for (std::size_t i = 0; i < c.n; ++i) {
    const double g = (c.y[i] - e[i] * ye) / N;
    // subnormal products in the numerator round by half a denorm_min each; 1 / N amplifies them.
    // tad's dot(y, x) rounds its products x_j y_j so too, and reaches dx_i times x_i / N^3 =
    // e_i / N^2 (x = (0.0024, denorm_min, ...): 1e5 times a denorm_min per product).
    const double t = (std::abs(c.y[i]) * rel + std::abs(e[i]) * aye * (2 * rel + nn * c.L.eps) + nn * c.L.denorm) / N +
                     std::abs(e[i]) * nn * c.L.denorm / (N * N) + std::abs(g) * rel;
    expect_grad("d sum(y x / norm(x))/dx", r.gx, i, g, 4 * t + 4 * c.L.denorm);
  }
}

void ref_scale_mean(const ctx& c, const result& r) {
  if (c.n == 0 || !tame_all(c.x) || !tame(c.k)) return;
  const mean_ref m = make_mean(c.x, c.L);
  double sx = 0, a = 0;
  for (double v : c.x) sx += v, a += std::abs(v);
  const double want = m.m * sx;
  const double tol = std::abs(sx) * m.tol + std::abs(m.m) * (double(c.n) + 8) * c.L.eps * a + 4 * c.L.eps * std::abs(want) + c.L.denorm;
  if (!(std::abs(r.value - want) <= 2 * tol)) fail("sum(scale_gradient(x, k) * mean(x)): tad %.17g, reference %.17g", r.value, want);
  // k mean(x) through the scaled factor, plus sum(x) / n through the mean
  const double g = (c.k + 1) * m.m;
  const double t = (std::abs(c.k) + 1) * (m.tol + 2 * c.L.eps * std::abs(m.m) + 2 * c.L.denorm);
  for (std::size_t i = 0; i < c.n; ++i) expect_grad("d sum(scale_gradient(x, k) * mean(x))/dx ((k + 1) mean)", r.gx, i, g, 2 * t);
}
void ref_reverse_mean(const ctx& c, const result& r) {
  if (c.n == 0 || !tame_all(c.x) || !tame(c.k)) return;
  const sum_ref s = products(c, c.x, c.x);
  expect_value(s.agrees(r.value, c.L, 1.0 / double(c.n)), r, "mean(reverse_gradient(x, k) * x)", s.fin / double(c.n));
  const double n = double(c.n);
  for (std::size_t i = 0; i < c.n; ++i) {
    const double g = (1 - c.k) * c.x[i] / n;
    // plus subnormal products: half a denorm_min each, the second one scaled by k
    const double t = 4 * c.L.eps * (1 + std::abs(c.k)) * std::abs(c.x[i]) / n + (4 + 2 * std::abs(c.k)) * c.L.denorm;
    expect_grad("d mean(reverse_gradient(x, k) * x)/dx ((1 - k) x / n)", r.gx, i, g, t);
  }
}

bool adom_any(const ctx&) { return true; }
bool adom_extremum(const ctx& c) {
  // a unique extremum, apart from the others (central differences do not move it)
  if (c.n == 0) return false;
  std::vector<double> v = c.x;
  std::sort(v.begin(), v.end());
  return c.n == 1 || (apart(v[c.n - 1], v[c.n - 2]) && apart(v[0], v[1]));
}
bool adom_nonempty(const ctx& c) { return c.n > 0; }

// ---- the family ----------------------------------------------------------------------------

enum flags : unsigned {
  uses_y = 1,
  uses_s = 2,
  /// sum(e) pulls a loop-free factor or term out of the loop (decisions.md 8): the summed
  /// value and scalar gradient are compared only for tame inputs.
  pulls = 4,
  /// clip_gradient bounds read through constant_ref
  bounds = 8,
};

struct entry {
  const char* name;
  kind k;
  void (*run_f)(inputs<float>&, result&, mode, std::size_t);
  void (*run_d)(inputs<double>&, result&, mode, std::size_t);
  void (*invalid_f)(inputs<float>&, result&, std::size_t);   // bounds entries only
  void (*invalid_d)(inputs<double>&, result&, std::size_t);
  tol_fn tol;               // elementwise: SIMD against scalar
  closed_fn closed;         // elementwise: exact closed form (may be null)
  domain_fn domain;         // elementwise: smooth here (null: not checked by central differences)
  ref_fn ref;               // reductions, multi-pass: reference check
  array_domain_fn adomain;  // reductions, multi-pass: smooth here (null: not checked)
  unsigned fl;
  bool scaled;              // the gradient's schedule has a scaled pass (float and double alike)
};

template <class B, kind K, unsigned Fl>
constexpr entry make(const char* name, tol_fn tol, closed_fn closed, domain_fn domain) {
  static_assert(scaled_plan<float, B, K>() == scaled_plan<double, B, K>());
  entry e{name, K, &run<float, B, K>, &run<double, B, K>, nullptr, nullptr, tol, closed, domain, nullptr, nullptr, Fl,
          scaled_plan<double, B, K>()};
  if constexpr ((Fl & bounds) != 0) {
    e.invalid_f = &run_invalid<float, B, K>;
    e.invalid_d = &run_invalid<double, B, K>;
  }
  return e;
}
template <class B, unsigned Fl = 0>
constexpr entry ew(const char* name, tol_fn tol, closed_fn closed, domain_fn domain) {
  return make<B, kind::elementwise, Fl>(name, tol, closed, domain);
}
template <class B, kind K, unsigned Fl = 0>
constexpr entry red(const char* name, ref_fn ref, array_domain_fn adomain) {
  entry e = make<B, K, Fl>(name, nullptr, nullptr, nullptr);
  e.ref = ref;
  e.adomain = adomain;
  return e;
}

const entry family[] = {
    ew<e_exp>("exp(x)", tol_exp, nullptr, dom_any),
    ew<e_log>("log(x)", tol_log, nullptr, dom_pos),
    ew<e_log1p>("log1p(x)", tol_log, nullptr, dom_log1p),
    ew<e_expm1>("expm1(x)", tol_expm1, nullptr, dom_any),
    ew<e_sin>("sin(x)", tol_sincos, nullptr, dom_any),
    ew<e_cos>("cos(x)", tol_sincos, nullptr, dom_any),
    ew<e_tan>("tan(x)", tol_tan, nullptr, dom_tan),
    ew<e_tanh>("tanh(x)", tol_tanh, nullptr, dom_any),
    ew<e_sigmoid>("sigmoid(x)", tol_sigmoid, nullptr, dom_any),
    ew<e_softplus>("softplus(x)", tol_softplus, nullptr, dom_any),
    ew<e_sqrt>("sqrt(x)", tol_exact, closed_sqrt, dom_pos),
    ew<e_square>("square(x)", tol_exact, closed_square, dom_any),
    ew<e_abs>("abs(x)", tol_exact, closed_abs, dom_any),
    ew<e_relu>("relu(x)", tol_exact, closed_relu, dom_any),
    ew<e_sign>("sign(x)", tol_exact, closed_sign, nullptr),
    ew<e_round>("round(x)", tol_exact, closed_round, nullptr),
    ew<e_floor>("floor(x)", tol_exact, closed_floor, nullptr),
    ew<e_ceil>("ceil(x)", tol_exact, closed_ceil, nullptr),
    ew<e_add, uses_y>("x + y", tol_exact, closed_add, dom_any),
    ew<e_sub, uses_y>("x - y", tol_exact, closed_sub, dom_any),
    ew<e_mul, uses_y>("x * y", tol_exact, closed_mul, dom_any),
    ew<e_div, uses_y>("x / y", tol_exact, closed_div, dom_any),
    ew<e_pow, uses_y>("pow(x, y)", tol_pow, nullptr, dom_pos),
    ew<e_min, uses_y>("min(x, y)", tol_exact, closed_min, dom_apart),
    ew<e_max, uses_y>("max(x, y)", tol_exact, closed_max, dom_apart),
    ew<e_fma, uses_y | uses_s>("x * s + y", tol_fma, closed_fma, dom_any),
    ew<e_div_s, uses_s | pulls>("x / s", tol_exact, closed_div_s, dom_any),
    ew<e_pow_s, uses_s>("pow(x, s)", tol_pow_s, nullptr, dom_pow_s),
    ew<e_where, uses_y | uses_s>("where(x > y, x * s, y - s)", tol_exact, closed_where, dom_apart),
    ew<e_clamp, uses_y | uses_s>("clamp(x, y, s)", tol_exact, closed_clamp, dom_clamp),
    ew<e_stop, uses_y>("stop_gradient(x) * y", tol_exact, closed_stop, nullptr),
    ew<e_scale, uses_y>("scale_gradient(x * y, k)", tol_exact, closed_scale, nullptr),
    ew<e_reverse>("reverse_gradient(sin(x), k)", tol_reverse, nullptr, nullptr),
    ew<e_clip, uses_y | bounds>("clip_gradient(x * y, lo, hi)", tol_exact, closed_clip, nullptr),
    ew<e_st_round>("straight_through(round(x), x)", tol_exact, closed_st_round, nullptr),
    ew<e_st_trick>("x + stop_gradient(round(x) - x)", tol_exact, closed_st_round, nullptr),
    ew<e_st_sign>("straight_through(sign(x), clamp(x, -1, 1))", tol_exact, closed_st_sign, nullptr),
    ew<e_cg_log1pexp>("custom_gradient log1p(exp(x)), sigmoid", tol_log1pexp, closed_cg_log1pexp, dom_any),
    ew<e_cg_product, uses_y>("custom_gradient x * y, {dy y, zero}", tol_exact, closed_cg_product, nullptr),
    ew<e_override_identity, uses_y>("override_gradients(identity(x) * y, 3 dy)", tol_exact,
                                    closed_override_identity, nullptr),
    ew<e_override_round>("override_gradients(round(x), dy)", tol_exact, closed_st_round, nullptr),
    red<r_sum, kind::reduction>("sum(x)", ref_sum, adom_any),
    red<r_mean, kind::reduction>("mean(x)", ref_mean, adom_nonempty),
    red<r_max, kind::reduction>("max(x)", ref_extremum<true>, adom_extremum),
    red<r_min, kind::reduction>("min(x)", ref_extremum<false>, adom_extremum),
    red<r_norm, kind::reduction>("norm(x)", ref_norm, adom_any),
    red<r_squared_norm, kind::reduction>("squared_norm(x)", ref_squared_norm, adom_any),
    red<r_dot, kind::reduction, uses_y>("dot(x, y)", ref_dot, adom_any),
    red<r_logsumexp, kind::reduction>("logsumexp(x)", ref_logsumexp, adom_any),
    red<r_sce, kind::reduction, uses_y>("softmax_cross_entropy(x, y)", ref_sce, adom_nonempty),
    red<m_center, kind::multipass_array, uses_y>("x - mean(x)", ref_center, adom_any),
    red<m_layer_norm, kind::multipass_array, uses_y>("(x - mean(x)) / sqrt(var(x) + 1e-5)", ref_layer_norm, adom_any),
    red<m_softmax, kind::multipass_array, uses_y>("exp(x - logsumexp(x))", ref_softmax, adom_any),
    red<m_normalize, kind::multipass_array, uses_y>("x / norm(x)", ref_normalize, adom_any),
    red<m_variance, kind::multipass_scalar>("mean(square(x - mean(x)))", ref_variance, adom_nonempty),
    red<m_lse_clip, kind::multipass_scalar, bounds>("logsumexp(clip_gradient(x, lo, hi))", ref_lse_clip, nullptr),
    red<m_scale_mean, kind::multipass_scalar>("sum(scale_gradient(x, k) * mean(x))", ref_scale_mean, nullptr),
    red<m_reverse_mean, kind::multipass_scalar>("mean(reverse_gradient(x, k) * x)", ref_reverse_mean, nullptr),
    red<m_lse_cg, kind::multipass_scalar>("logsumexp(custom_gradient 3 dy (x))", ref_lse_cg, nullptr),
};
constexpr std::size_t family_size = sizeof(family) / sizeof(family[0]);

// ---- decoding the input --------------------------------------------------------------------

/// Input format (README.md):
///   byte 0   expression (modulo the family size)
///   byte 1   bit 0: double (else float); bit 1: long array (1000 + byte 3 % 64 elements);
///            bit 2: padding values positive only
///   byte 2   bits 0-2: misalignment of x in elements; bits 3-5: of y
///   byte 3   length (modulo 71), unless bit 1 of byte 1
///   then     values of s, k, lo, hi, x[0..n), y[0..n), 3 bytes each (selector, 16-bit payload);
///            past the end of the input, a deterministic pattern of moderate values.
struct header {
  std::size_t expr, n, offx, offy;
  bool dbl, pad_positive;
};

header decode_header(const std::uint8_t* data, std::size_t size) {
  const input_head c = decode_head(data, size, family_size);
  const unsigned b3 = byte_at(data, size, 3);
  header h{c.expr, (byte_at(data, size, 1) & 2u) ? 1000 + b3 % 64 : b3 % 71, c.offx, c.offy, c.dbl, c.pad_positive};
  return h;
}


// ---- checks --------------------------------------------------------------------------------

void check_same(const char* what, const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) fail("%s: lengths %zu and %zu", what, a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits_or_nan(a[i], b[i]) && !(a[i] == b[i]))
      fail("%s[%zu]: %.17g and %.17g differ", what, i, a[i], b[i]);
}

/// The same run through tad::value / tad::grad_into must give the same numbers.
void check_entry_points(const entry& E, const result& r) {
  const bool array = E.k == kind::elementwise || E.k == kind::multipass_array;
  if (array) check_same("tad::value(e) against tad::evaluate(e, out)", r.val2, r.val);
  if (!same_bits_or_nan(r.value_into, r.value) && r.value_into != r.value)
    fail("grad_into's value %.17g, grad's %.17g", r.value_into, r.value);
  check_same("grad_into's d/dx against grad's", r.gx_into, r.gx);
  check_same("grad_into's d/dy against grad's", r.gy_into, r.gy);
  if (!same_bits_or_nan(r.gs_into, r.gs) && r.gs_into != r.gs) fail("grad_into's d/ds %.17g, grad's %.17g", r.gs_into, r.gs);
  if (!(E.fl & uses_y)) expect_zero_grad("d/dy", r.gy);
  if (!(E.fl & uses_s) && !is(r.gs, 0)) {
    fail("d/ds = %.17g: the expression does not contain s (semantics.md: its gradient is zero)", r.gs);
  }
}

/// Central differences of f at t, Richardson-extrapolated, with an estimate of their error:
/// truncation (how c(h), c(2h), c(h/2) differ) plus the rounding of f itself, a few ulps of |f|
/// per evaluation divided by the step. The differences between c(h), c(2h), c(h/2) need not show
/// the latter (they can round alike): softmax_cross_entropy of 1000 elements has |f| ~ 1.6e4,
/// and at x = 0.008 (h = 1e-6) its differences are off by 1.3e-6 while c(h) = c(2h) = c(h/2)
/// (corpus/sce-long-rounding).
struct central {
  double value, err;
};
template <class F>
central central_difference(F&& f, double t) {
  const double h = 1e-4 * std::max(std::abs(t), 1e-2);
  double fmax = 0;
  auto cd = [&](double hh) {
    const double a = f(t + hh), b = f(t - hh);
    fmax = std::max({fmax, std::abs(a), std::abs(b)});
    return (a - b) / (2 * hh);
  };
  const double c1 = cd(h), c2 = cd(2 * h), c05 = cd(h / 2);
  const double rounding = 8 * std::numeric_limits<double>::epsilon() * fmax / h;
  return {(4 * c1 - c2) / 3, 2 * std::max(std::abs(c1 - c2), std::abs(c05 - c1)) + rounding};
}

/// The test suite's tolerance for a gradient in T against double central differences
/// (test/support/check.hpp grad_tol), relative with floor 1, plus the differences' own error.
/// `rounding`: the reference check's own tolerance for this gradient, if any (g_tols).
bool grad_close(double got, const central& want, const limits& L, double rounding = 0) {
  if (!std::isfinite(got) || !std::isfinite(want.value)) return false;
  const double tol = std::max((L.dbl ? 1e-6 : 2e-3) * std::max(1.0, std::abs(want.value)), 2 * rounding) + want.err;
  return std::abs(got - want.value) <= tol;
}

/// Moderate inputs can still overflow T (pow(0.002, -15.5) in float): central differences in
/// double are compared only where T's results are finite and far from overflow.
bool far_from_overflow(double v, const limits& L) { return std::isfinite(v) && std::abs(v) < L.max * 1e-6; }

/// Indices at which central differences are taken (all for short arrays, 8 spread ones else).
std::vector<std::size_t> sample_indices(std::size_t n, std::size_t most) {
  std::vector<std::size_t> r;
  if (n <= most) {
    for (std::size_t i = 0; i < n; ++i) r.push_back(i);
  } else {
    for (std::size_t j = 0; j < most; ++j) r.push_back(j * (n - 1) / (most - 1));
  }
  return r;
}

template <class T>
void fuzz(const entry& E, const header& h, value_stream& vs) {
  const limits L = limits_of<T>();
  const std::size_t n = h.n;
  buffer<T> bx(n, h.offx), by(n, h.offy);
  inputs<T> in{bx.span(), by.span(), T(0), {T(0), T(0), T(0)}};
  in.s = vs.next<T>(T(1));
  in.p.k = vs.next<T>(T(1));
  in.p.lo = vs.next<T>(T(1));
  in.p.hi = vs.next<T>(T(1));
  for (std::size_t i = 0; i < n; ++i) in.x[i] = vs.next<T>(T(1));
  for (std::size_t i = 0; i < n; ++i) in.y[i] = vs.next<T>(in.x[i]);

  ctx c{L, {in.x.begin(), in.x.end()}, {in.y.begin(), in.y.end()}, double(in.s), double(in.p.k), 0, 0, n};
  g_cur = current_input{};
  g_cur.expr = E.name;
  g_cur.type = L.dbl ? "double" : "float";
  g_cur.n = n, g_cur.offx = h.offx, g_cur.offy = h.offy;
  g_cur.x = &c.x, g_cur.y = &c.y;
  g_cur.s = c.s, g_cur.k = c.k, g_cur.lo = double(in.p.lo), g_cur.hi = double(in.p.hi);
  auto go = [&](inputs<T>& i, result& r, mode m) {
    if constexpr (std::is_same_v<T, float>) E.run_f(i, r, m, (h.offx + 5) % 8); else E.run_d(i, r, m, (h.offx + 5) % 8);
  };

  if (E.fl & bounds) {
    // NaN or reversed bounds: every entry point throws std::invalid_argument and writes nothing.
    // Then the bounds are repaired (NaN lo -> -inf, NaN hi -> +inf, reversed -> swapped).
    if (!(in.p.lo <= in.p.hi)) {
      result r;
      if constexpr (std::is_same_v<T, float>) E.invalid_f(in, r, h.offx); else E.invalid_d(in, r, h.offx);
      if (!r.invalid_ok) fail("clip_gradient bounds lo = %g, hi = %g: %s did not throw std::invalid_argument before writing",
                              double(in.p.lo), double(in.p.hi), r.invalid_what);
      if (std::isnan(in.p.lo)) in.p.lo = -std::numeric_limits<T>::infinity();
      if (std::isnan(in.p.hi)) in.p.hi = std::numeric_limits<T>::infinity();
      if (in.p.lo > in.p.hi) std::swap(in.p.lo, in.p.hi);
    }
  }
  c.lo = double(in.p.lo);
  c.hi = double(in.p.hi);
  g_cur.lo = c.lo;
  g_cur.hi = c.hi;

  result full;
  go(in, full, mode::full);
  if (full.threw_domain && E.ref != static_cast<ref_fn>(ref_extremum<true>) && E.ref != static_cast<ref_fn>(ref_extremum<false>))
    fail("std::domain_error from an expression without max/min");
  if (!full.threw_domain) check_entry_points(E, full);

  // Double copies for central differences.
  std::vector<double> xd(c.x), yd(c.y);
  double sd = c.s;
  params<double> pd{c.k, c.lo, c.hi};
  auto loss_d = [&](std::span<double> xs, std::span<double> ys) {
    inputs<double> i{xs, ys, sd, pd};
    result r;
    E.run_d(i, r, mode::loss_only, 0);
    return r.value;
  };

  if (E.k == kind::elementwise) {
    // (a) SIMD (whole array) against scalar (each length-1 array), values and gradients.
    sum_ref sum_v, sum_gs;
    bool soft = false;
    const bool exact_path = n < L.width;  // the whole array is a scalar tail too: same code
    for (std::size_t i = 0; i < n; ++i) {
      inputs<T> oi{in.x.subspan(i, 1), in.y.subspan(i, 1), in.s, in.p};
      result r;
      go(oi, r, mode::per_element);
      const elem es{c.x[i], c.y[i], c.s, c.k, c.lo, c.hi, r.val[0], r.gx[0], r.gy[0], r.gs};
      // d/ds exists only summed over the elements: the closed form checks the scalar path's
      const elem ef{c.x[i], c.y[i], c.s, c.k, c.lo, c.hi, full.val[i], full.gx[i], full.gy[i], r.gs};
      if (!same_bits_or_nan(r.value, r.val[0]) && r.value != r.val[0] && !(E.fl & pulls) && E.tol == tol_exact)
        fail("length 1, [%zu]: sum(e) = %.17g but e = %.17g", i, r.value, r.val[0]);
      const elem_tol t = exact_path ? elem_tol{} : E.tol(es, L);
      if (!agree(ef.v, es.v, t.v, L)) fail("value [%zu]: SIMD %.17g, scalar %.17g", i, ef.v, es.v);
      if (!agree(ef.gx, es.gx, t.gx, L)) fail("d/dx [%zu]: SIMD %.17g, scalar %.17g", i, ef.gx, es.gx);
      if (!agree(ef.gy, es.gy, t.gy, L)) fail("d/dy [%zu]: SIMD %.17g, scalar %.17g", i, ef.gy, es.gy);
      if (E.closed) {
        if (const char* what = E.closed(ef, L)) fail("[%zu], SIMD path: %s (value %.17g, d/dx %.17g, d/dy %.17g)", i, what, ef.v, ef.gx, ef.gy);
        if (const char* what = E.closed(es, L))
          fail("[%zu], scalar path: %s (value %.17g, d/dx %.17g, d/dy %.17g, d/ds %.17g)", i, what, es.v, es.gx, es.gy, es.gs);
      }
      auto abs_tol = [&](const tolerance& tt, double v) {
        return tt.ulps * L.eps * std::abs(v) + tt.abs + tt.ulps * L.denorm;
      };
      soft = soft || t.v.skip || t.gs.skip;
      // An infinite term is the same infinity in every path when it is exact and comes from an
      // infinite input; a finite product that overflows may be kept by an FMA in another.
      const bool inf_input = std::isinf(es.x) || std::isinf(es.y) || std::isinf(es.s);
      sum_v.add(es.v, abs_tol(t.v, es.v), t.v.ulps == 0 && t.v.abs == 0 && inf_input);
      sum_gs.add(es.gs, abs_tol(t.gs, es.gs), t.gs.ulps == 0 && t.gs.abs == 0 && inf_input);
    }
    // The sums (loss value, d/ds) against the sums of the scalar path's terms.
    // A pulled-out factor (x / s: sum(x) * (1 / s)) reassociates: compared for inputs that
    // keep every intermediate finite and normal (a subnormal product's absolute rounding error
    // would be scaled up by the factor).
    auto normal = [](double v) { return tame(v) && (v == 0 || std::abs(v) >= 0x1p-20); };
    const bool tame_inputs = std::all_of(c.x.begin(), c.x.end(), normal) && std::all_of(c.y.begin(), c.y.end(), normal) &&
                             normal(c.s) && c.s != 0;
    if (!soft && (!(E.fl & pulls) || tame_inputs)) {
      if (!sum_v.agrees(full.value, L)) fail("sum(e): SIMD %.17g, sum of the scalar path's elements %.17g", full.value, sum_v.fin);
      if (!sum_gs.agrees(full.gs, L)) fail("d sum(e)/ds: SIMD %.17g, sum of the scalar path's %.17g", full.gs, sum_gs.fin);
    }
    // (b) central differences, element by element, at moderate inputs in the smooth domain.
    if (E.domain && moderate_all(c.x) && moderate(c.s) && (!(E.fl & uses_y) || moderate_all(c.y)) &&
        far_from_overflow(full.value, L)) {
      for (std::size_t i : sample_indices(n, 64)) {
        if (!E.domain(c.x[i], c.y[i], c.s) || !far_from_overflow(full.val[i], L)) continue;
        double xi = c.x[i], yi = c.y[i];
        auto f1 = [&](double a, double b) {
          double xa = a, yb = b;
          return loss_d(std::span<double>(&xa, 1), std::span<double>(&yb, 1));
        };
        const central dx = central_difference([&](double t) { return f1(t, yi); }, xi);
        if (!grad_close(full.gx[i], dx, L))
          fail("d/dx [%zu] = %.17g, central differences %.17g (+- %.3g)", i, full.gx[i], dx.value, dx.err);
        if (E.fl & uses_y) {
          const central dy = central_difference([&](double t) { return f1(xi, t); }, yi);
          if (!grad_close(full.gy[i], dy, L))
            fail("d/dy [%zu] = %.17g, central differences %.17g (+- %.3g)", i, full.gy[i], dy.value, dy.err);
        }
      }
      if ((E.fl & uses_s) && n > 0) {
        bool ok = true;
        for (std::size_t i = 0; i < n; ++i) ok = ok && E.domain(c.x[i], c.y[i], c.s);
        const double s0 = sd;
        const central ds = central_difference(
            [&](double t) {
              sd = t;
              return loss_d(xd, yd);
            },
            s0);
        sd = s0;
        if (ok && !grad_close(full.gs, ds, L)) fail("d/ds = %.17g, central differences %.17g (+- %.3g)", full.gs, ds.value, ds.err);
      }
    }
  } else {
    g_tols = {&full.gx, &full.gy, std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    if (!full.threw_domain || E.ref == static_cast<ref_fn>(ref_extremum<true>) || E.ref == static_cast<ref_fn>(ref_extremum<false>))
      E.ref(c, full);
    g_tols.gx = g_tols.gy = nullptr;
    if (full.threw_domain) return;
    // (b) central differences of the whole expression in double, at up to 8 indices.
    if (E.adomain && moderate_all(c.x) && ((!(E.fl & uses_y) && E.k != kind::multipass_array) || moderate_all(c.y)) &&
        E.adomain(c) && far_from_overflow(full.value, L)) {
      // d/dv[i] (v = xd or yd) against central differences of the whole loss in v[i].
      auto check_at = [&](const char* what, std::vector<double>& v, std::size_t i, double got, double rounding) {
        const double v0 = v[i];
        const central d = central_difference(
            [&](double t) {
              v[i] = t;
              return loss_d(xd, yd);
            },
            v0);
        v[i] = v0;
        if (!grad_close(got, d, L, rounding))
          fail("%s [%zu] = %.17g, central differences %.17g (+- %.3g)", what, i, got, d.value, d.err);
      };
      for (std::size_t i : sample_indices(n, 8)) {
        check_at("d/dx", xd, i, full.gx[i], g_tols.x[i]);
        if ((E.fl & uses_y)) check_at("d/dy", yd, i, full.gy[i], g_tols.y[i]);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 && (data[1] & 8u)) {  // the matrix family (shapes.cpp)
    try {
      fuzz_shapes(data, size);
    } catch (const std::exception& ex) {
      fail("unexpected exception: %s", ex.what());
    }
    return 0;
  }
  const header h = decode_header(data, size);
  const entry& E = family[h.expr];
  value_stream vs(data, size, h.pad_positive);
  try {
    if (h.dbl) fuzz<double>(E, h, vs); else fuzz<float>(E, h, vs);
  } catch (const std::exception& ex) {
    fail("unexpected exception: %s", ex.what());
  }
  return 0;
}

#ifdef TAD_FUZZ_REPLAY_MAIN
// A corpus replayer: runs every regular file of the given directories (not recursively), and
// every given file, through LLVMFuzzerTestOneInput, in name order.
#include <filesystem>
#include <fstream>
#include <iterator>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (std::size_t i = 0; i < family_size; ++i)
      std::printf("%2zu  %-18s %s%s\n", i,
                  family[i].k == kind::elementwise       ? "elementwise"
                  : family[i].k == kind::reduction       ? "reduction"
                  : family[i].k == kind::multipass_array ? "multi-pass array"
                                                         : "multi-pass scalar",
                  family[i].name, family[i].scaled ? "  [scaled pass]" : "");
    list_shapes();
    return 0;
  }
  for (int a = 1; a < argc; ++a) {
    const fs::path p(argv[a]);
    if (fs::is_directory(p)) {
      for (const auto& d : fs::directory_iterator(p))
        if (d.is_regular_file()) files.push_back(d.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[a]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s corpus-dir-or-file...: no inputs\n", argv[0]);
    return 2;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs (%zu of the matrix family) over %zu + %zu expressions: no failure\n", files.size(),
              g_shapes_runs, family_size, shapes_family_size());
  return 0;
}
#endif
