// The expression fuzzer's matrix family (issue 15: matrices, broadcasting, axis reductions and
// shared nodes). Linked into fuzz.expressions and fuzz.replay with expressions.cpp, whose
// LLVMFuzzerTestOneInput hands it every input with bit 3 of byte 1 set (doc/testing.md,
// "Fuzzing"; input format below).
//
// Each expression is written once, as a builder over (form, x, y, b, column, v, s, params), and
// run in two forms:
//   - the matrix form: x and y are rows x cols matrices whose rows are `ld` elements apart (ld >
//     cols: a strided view; the padding holds NaN, so a read of it shows), b a row vector of cols,
//     `column` is as_column(v) and v a vector of rows, s a scalar; reductions run along axis 1;
//   - the reference form, on tad's 1-D engine (which the 1-D family checks against closed forms,
//     references in double and central differences): elementwise expressions on length-1 arrays
//     {x[r][c]}, {y[r][c]}, {b[c]} with v[r] a scalar variable (tad's scalar path, element by
//     element), reductions on each row (x[r], y[r], b: length cols; v[r] a scalar) with the 1-D
//     reduction.
// Checks, for every input:
//   (a) elementwise: each value and each element of dX, dY agree with the element's reference
//       (exact ops exactly, NaN with NaN; exp within 4 ulps: SIMD against scalar); db, dv, ds and
//       the loss against the sums of the references' terms (sum_ref: any order's rounding), for
//       inputs that keep every term tame (a loop-invariant factor may be pulled out of a sum:
//       decisions.md 8);
//   (b) along axis 1: each row's value, dX and dY of the row, dv[r], and the sums over rows (db,
//       the loss) against the row's reference, within a rounding model per reduction (the point's
//       sweeps and the 1-D reduction sum in different orders); a row holding NaN or an infinity
//       must give the reference's NaN or infinity;
//   (c) grad_into (into misaligned buffers of our own) and value give grad's and evaluate's
//       numbers bit for bit; max/min along rows of no columns throw std::domain_error; no crash,
//       no sanitizer report (arrays at the end of their heap blocks), no other exception.

#include "common.hpp"

#include <tad/tad.hpp>

#include <exception>
#include <stdexcept>

namespace {

using namespace tad_fuzz;

// ---- forms and builders --------------------------------------------------------------------

struct matrix_form {};
struct reference_form {};

// The reductions of the family in either form: along axis 1, or of the whole (1-D) array.
#define TAD_FUZZ_AXIS(fn)                                                             \
  template <class E>                                                                  \
  auto ax_##fn(matrix_form, const E& e) {                                             \
    return tad::fn(e, tad::axis<1>);                                                  \
  }                                                                                   \
  template <class E>                                                                  \
  auto ax_##fn(reference_form, const E& e) {                                          \
    return tad::fn(e);                                                                \
  }
TAD_FUZZ_AXIS(sum)
TAD_FUZZ_AXIS(mean)
TAD_FUZZ_AXIS(max)
TAD_FUZZ_AXIS(min)
TAD_FUZZ_AXIS(norm)
TAD_FUZZ_AXIS(squared_norm)
TAD_FUZZ_AXIS(logsumexp)
#undef TAD_FUZZ_AXIS
// Row-wise for two matrices (decisions.md 28), of the whole arrays for two vectors.
template <class Z, class T>
auto ax_sce(matrix_form, const Z& z, const T& t) {
  return tad::softmax_cross_entropy(z, t);
}
template <class Z, class T>
auto ax_sce(reference_form, const Z& z, const T& t) {
  return tad::softmax_cross_entropy(z, t);
}

template <class T>
struct params {
  T k, lo, hi;
};

inline constexpr auto first_only_product = tad::custom_gradient(
    [](auto a, auto c) { return a * c; },
    [](auto dy, auto /*a*/, auto c, auto /*out*/) { return tad::adjoints{dy * c, tad::zero{}}; });
struct identity_times3 {
  auto operator()(auto dy, auto /*v*/, auto /*out*/) const { return 3 * dy; }
};

// `F` is matrix_form or reference_form; `col` is as_column(v) in the matrix form and v (a scalar
// variable) in the reference form; `v` is v in both (a vector of rows, or the row's scalar).
#define TAD_FUZZ_SHAPED(name, body)                                                              \
  struct name {                                                                                  \
    template <class F, class X, class Y, class B, class Col, class V, class S, class P>          \
    auto operator()(F f, const X& x, const Y& y, const B& b, const Col& col, const V& v, const S& s, \
                    const P& p) const {                                                          \
      (void)f, (void)x, (void)y, (void)b, (void)col, (void)v, (void)s, (void)p;                  \
      return body;                                                                               \
    }                                                                                            \
  };

// elementwise: the loss is sum(e)
TAD_FUZZ_SHAPED(s_add_row, x + b)
TAD_FUZZ_SHAPED(s_mul_col, x * col)
TAD_FUZZ_SHAPED(s_where, tad::where(x > b, x * s, y))
TAD_FUZZ_SHAPED(s_clip, tad::clip_gradient(x * y, tad::constant_ref(p.lo), tad::constant_ref(p.hi)))
TAD_FUZZ_SHAPED(s_max_row, tad::max(x, b))
TAD_FUZZ_SHAPED(s_exp_col, tad::exp(x - col))
TAD_FUZZ_SHAPED(s_st_round, tad::straight_through(tad::round(x * b), x))
TAD_FUZZ_SHAPED(s_cg_col, first_only_product(x, col))
TAD_FUZZ_SHAPED(s_override,
                tad::override_gradients(tad::identity(x) * y,
                                        boost::hana::make_map(boost::hana::make_pair(
                                            boost::hana::type_c<tad::identity_op>, identity_times3{}))))
TAD_FUZZ_SHAPED(s_reverse, tad::reverse_gradient(x * y, tad::constant_ref(p.k)))
struct s_let_clip {
  template <class F, class X, class Y, class B, class Col, class V, class S, class P>
  auto operator()(F, const X& x, const Y&, const B& b, const Col&, const V&, const S&, const P& p) const {
    const auto c = tad::let<"c">(tad::clip_gradient(x * b, tad::constant_ref(p.lo), tad::constant_ref(p.hi)));
    return tad::abs(c) + c;
  }
};
struct s_let_custom {
  template <class F, class X, class Y, class B, class Col, class V, class S, class P>
  auto operator()(F, const X& x, const Y& y, const B& b, const Col&, const V&, const S&, const P&) const {
    const auto c = tad::let<"c">(first_only_product(x, y));
    return tad::max(c, b) + c;
  }
};
// along axis 1: one value per row (the loss is its sum)
TAD_FUZZ_SHAPED(a_sum, v * ax_sum(f, x))
TAD_FUZZ_SHAPED(a_mean, v * ax_mean(f, x))
TAD_FUZZ_SHAPED(a_max, v * ax_max(f, x))
TAD_FUZZ_SHAPED(a_min, v * ax_min(f, x))
TAD_FUZZ_SHAPED(a_squared_norm, v * ax_squared_norm(f, x))
TAD_FUZZ_SHAPED(a_norm, v * ax_norm(f, x))
TAD_FUZZ_SHAPED(a_logsumexp, v * ax_logsumexp(f, x))
TAD_FUZZ_SHAPED(a_lse_row, v * ax_logsumexp(f, x + b))
TAD_FUZZ_SHAPED(a_sce, v * ax_sce(f, x, y))
struct a_logistic {
  template <class F, class X, class Y, class B, class Col, class V, class S, class P>
  auto operator()(F f, const X& x, const Y&, const B& b, const Col&, const V& v, const S&, const P&) const {
    const auto z = tad::let<"z">(ax_sum(f, x * b));
    return tad::softplus(z) - v * z;
  }
};

#undef TAD_FUZZ_SHAPED

// ---- running one form ----------------------------------------------------------------------

/// A run's inputs: x and y (`rows` x `cols`, rows `ld` apart, or 1-D of `cols` when rows is 0
/// in the reference form), b (cols), v (rows; one scalar in the reference form), s, params.
template <class T>
struct inputs {
  T* x;
  T* y;
  std::size_t rows, cols, ld;
  std::span<T> b, v;
  T s;
  params<T> p;
};

/// One run's results, in double.
struct result {
  std::vector<double> val;  // evaluate(e, out)
  std::vector<double> val2; // value(e) (matrix form)
  double value = 0;         // the loss, from grad
  std::vector<double> gx, gy, gb, gv;
  double gs = 0;
  double value_into = 0;  // grad_into into misaligned buffers of our own (matrix form)
  std::vector<double> gx_into, gy_into, gb_into, gv_into;
  double gs_into = 0;
  bool threw_domain = false;
};

/// A std::vector or tad::matrix, in double.
template <class Range>
std::vector<double> to_double(const Range& v) {
  return {v.begin(), v.end()};
}
template <class T>
std::vector<double> to_double(const T* p, std::size_t n) {
  return {p, p + n};
}

template <class E>
auto loss_of(const E& e) {
  if constexpr (tad::rank_v<E> == 0) return e;
  else return tad::sum(e);
}

template <class T>
void fill(buffer<T>& b, std::size_t n, T v) {
  std::fill(b.data(), b.data() + n, v);
}

/// The matrix form: evaluate, value, grad and grad_into.
template <class T, class B>
void run_matrix(inputs<T>& in, result& r, std::size_t buf_off) {
  const auto x = tad::var<"x">(in.x, in.rows, in.cols, in.ld);
  const auto y = tad::var<"y">(in.y, in.rows, in.cols, in.ld);
  const auto b = tad::var<"b">(in.b);
  const auto v = tad::var<"v">(in.v);
  const auto s = tad::var<"s">(in.s);
  const auto e = B{}(matrix_form{}, x, y, b, tad::as_column(v), v, s, in.p);
  const auto loss = loss_of(e);
  constexpr bool per_row = tad::rank_v<decltype(e)> == 1;
  const std::size_t n = in.rows * in.cols, m = per_row ? in.rows : n;
  const T sentinel = T(1234.5);
  try {
    std::vector<T> out(m, sentinel);
    tad::evaluate(e, out);
    r.val = to_double(out);
    r.val2 = to_double(tad::value(e));
    const auto [val, gx, gy, gb, gv, gs] = tad::grad(loss, x, y, b, v, s);
    r.value = val;
    r.gx = to_double(gx);
    r.gy = to_double(gy);
    r.gb = to_double(gb);
    r.gv = to_double(gv);
    r.gs = gs;
  } catch (const std::domain_error&) {
    r.threw_domain = true;
    return;
  }
  buffer<T> gx(n, buf_off), gy(n, (buf_off + 3) % 8), gb(in.cols, (buf_off + 5) % 8), gv(in.rows, (buf_off + 6) % 8);
  fill(gx, n, sentinel), fill(gy, n, sentinel), fill(gb, in.cols, sentinel), fill(gv, in.rows, sentinel);
  T gs = sentinel;
  r.value_into = tad::grad_into(loss, tad::wrt(x, gx.span()), tad::wrt(y, gy.span()), tad::wrt(b, gb.span()),
                                tad::wrt(v, gv.span()), tad::wrt(s, gs));
  r.gx_into = to_double(gx.data(), n);
  r.gy_into = to_double(gy.data(), n);
  r.gb_into = to_double(gb.data(), in.cols);
  r.gv_into = to_double(gv.data(), in.rows);
  r.gs_into = gs;
}

/// The reference form on x[0..cols), y[0..cols), b[0..cols) and the scalar v[0]: grad, and
/// evaluate of an array-valued e.
template <class T, class B>
void run_reference(inputs<T>& in, result& r) {
  const auto x = tad::var<"x">(std::span<T>(in.x, in.cols));
  const auto y = tad::var<"y">(std::span<T>(in.y, in.cols));
  const auto b = tad::var<"b">(in.b);
  const auto v = tad::var<"v">(in.v[0]);
  const auto s = tad::var<"s">(in.s);
  const auto e = B{}(reference_form{}, x, y, b, v, v, s, in.p);
  const auto loss = loss_of(e);
  if constexpr (tad::rank_v<decltype(e)> == 1) {
    std::vector<T> out(in.cols);
    tad::evaluate(e, out);
    r.val = to_double(out);
  }
  const auto [val, gx, gy, gb, gv, gs] = tad::grad(loss, x, y, b, v, s);
  r.value = val;
  r.gx = to_double(gx);
  r.gy = to_double(gy);
  r.gb = to_double(gb);
  r.gv = {double(gv)};
  r.gs = gs;
}

// ---- tolerances along axis 1 ---------------------------------------------------------------

/// One row of the inputs, in double, and its reference results.
struct row {
  const limits& L;
  std::vector<double> x, y, b;
  double v;
  const result& ref;
};
/// Absolute tolerances of one row's results against the reference: its value, dv, and dx, dy,
/// db per element.
struct row_tol {
  double val = 0, gv = 0;
  std::vector<double> gx, gy, gb;
};
using row_tol_fn = row_tol (*)(const row&);

row_tol sized(const row& w) {
  row_tol t;
  t.gx.assign(w.x.size(), 0.0);
  t.gy.assign(w.x.size(), 0.0);
  t.gb.assign(w.x.size(), 0.0);
  return t;
}
/// (cols + 8) eps: the rounding of a sum of cols terms in either order, relative to the sum of
/// their magnitudes.
double k_sum(const row& w) { return (double(w.x.size()) + 8) * w.L.eps; }
double dn(const row& w) { return (double(w.x.size()) + 8) * w.L.denorm; }

row_tol tol_sum(const row& w) {
  row_tol t = sized(w);
  double a = 0;
  for (double e : w.x) a += std::abs(e);
  t.gv = k_sum(w) * a + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  return t;  // dx = v exactly
}
row_tol tol_mean(const row& w) {
  row_tol t = sized(w);
  const double c = std::max<double>(1, double(w.x.size()));
  double a = 0;
  for (double e : w.x) a += std::abs(e);
  t.gv = k_sum(w) * a / c + 2 * w.L.eps * std::abs(w.ref.gv[0]) + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  for (auto& g : t.gx) g = 4 * w.L.eps * std::abs(w.v) / c + w.L.denorm;  // v / cols or v * (1 / cols)
  return t;
}
row_tol tol_exact(const row& w) { return sized(w); }
row_tol tol_squared_norm(const row& w) {
  row_tol t = sized(w);
  double a = 0;
  for (double e : w.x) a += e * e;
  t.gv = k_sum(w) * a + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  for (std::size_t j = 0; j < w.x.size(); ++j) t.gx[j] = 4 * w.L.eps * std::abs(2 * w.x[j] * w.v) + w.L.denorm;
  return t;
}
row_tol tol_norm(const row& w) {
  row_tol t = sized(w);
  double a = 0;
  for (double e : w.x) a += e * e;
  const double nrm = std::sqrt(a);
  t.gv = k_sum(w) * nrm + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  for (std::size_t j = 0; j < w.x.size(); ++j)
    t.gx[j] = nrm > 0 ? (k_sum(w) + 4 * w.L.eps) * std::abs(w.v * w.x[j]) / nrm + dn(w) : 0;
  return t;
}
/// logsumexp of the row z (x, or x + b): m + log(sum(exp(z - m))); its gradient v softmax(z).
row_tol lse_tol(const row& w, const std::vector<double>& z) {
  row_tol t = sized(w);
  double m = -std::numeric_limits<double>::infinity();
  for (double e : z) m = std::max(m, e);
  if (z.empty()) return t;
  double s = 0;
  for (double e : z) s += std::exp(e - m);
  const double lse = m + std::log(s);
  // z's own rounding (x + b) moves each exponent by an ulp of z; the sum's and the shift's
  // rounding move the result by (cols + 8) eps (|m| + 1).
  double zmax = 0;
  for (double e : z) zmax = std::max(zmax, std::abs(e));
  const double rel = k_sum(w) * (std::abs(m) + 1) + 4 * w.L.eps * (zmax + 1);
  t.gv = rel + 2 * w.L.eps * std::abs(lse) + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double p = std::exp(z[j] - lse);
    t.gx[j] = t.gb[j] = std::abs(w.v) * p * (2 * rel + 8 * w.L.eps) + dn(w);
  }
  return t;
}
row_tol tol_lse(const row& w) { return lse_tol(w, w.x); }
row_tol tol_lse_row(const row& w) {
  std::vector<double> z(w.x.size());
  for (std::size_t j = 0; j < z.size(); ++j) z[j] = w.L.rnd(w.x[j] + w.b[j]);
  row_tol t = lse_tol(w, z);
  t.gb.assign(z.size(), 0.0);  // db sums over rows: compared as a sum below, with t.gx as terms
  return t;
}
/// softmax_cross_entropy(x, y) of the row: lse(x) sum(y) - sum(y x); dx = v (softmax(x) sum(y)
/// - y), dy = v (lse(x) - x).
row_tol tol_sce(const row& w) {
  row_tol t = lse_tol(w, w.x);
  double sy = 0, syx = 0, m = 0;
  for (std::size_t j = 0; j < w.x.size(); ++j) sy += std::abs(w.y[j]), syx += std::abs(w.y[j] * w.x[j]);
  for (double e : w.x) m = std::max(m, std::abs(e));
  const double lse_tol_abs = k_sum(w) * (m + 1) + dn(w);
  t.gv = lse_tol_abs * (sy + 1) + k_sum(w) * (syx + (m + 2) * sy) + dn(w);
  t.val = std::abs(w.v) * t.gv + 2 * w.L.eps * std::abs(w.ref.value) + w.L.denorm;
  for (std::size_t j = 0; j < w.x.size(); ++j) {
    t.gx[j] = t.gx[j] * (sy + 1) + std::abs(w.v) * (k_sum(w) * (sy + std::abs(w.y[j])) + dn(w));
    t.gy[j] = std::abs(w.v) * (lse_tol_abs + 4 * w.L.eps * (m + std::abs(w.x[j]))) + dn(w);
  }
  return t;
}
/// softplus(z) - v z with z = x . b: z's rounding is (cols + 8) eps sum |x b|; the loss moves by
/// that times |sigmoid(z) - v|, dx = (sigmoid(z) - v) b by a quarter of it times |b| (sigmoid'
/// <= 1/4) plus the products' rounding.
row_tol tol_logistic(const row& w) {
  row_tol t = sized(w);
  double a = 0, z = 0;
  for (std::size_t j = 0; j < w.x.size(); ++j) a += std::abs(w.x[j] * w.b[j]), z += w.x[j] * w.b[j];
  const double dz = k_sum(w) * a + dn(w);
  const double sg = 1 / (1 + std::exp(-z));
  const double q = std::abs(sg - w.v) + 8 * w.L.eps * (1 + std::abs(w.v));
  t.val = dz * (1 + std::abs(w.v)) + 8 * w.L.eps * (std::abs(w.ref.value) + std::abs(w.v * z) + 1) + w.L.denorm;
  t.gv = dz + 2 * w.L.eps * std::abs(z) + dn(w);
  for (std::size_t j = 0; j < w.x.size(); ++j) {
    t.gx[j] = (dz / 4 + q * 4 * w.L.eps) * std::abs(w.b[j]) + dn(w);
    t.gb[j] = (dz / 4 + q * 4 * w.L.eps) * std::abs(w.x[j]) + dn(w);
  }
  return t;
}

// ---- the family ----------------------------------------------------------------------------

enum class kind { elementwise, rows };

struct entry {
  const char* name;
  kind k;
  void (*matrix_f)(inputs<float>&, result&, std::size_t);
  void (*matrix_d)(inputs<double>&, result&, std::size_t);
  void (*reference_f)(inputs<float>&, result&);
  void (*reference_d)(inputs<double>&, result&);
  double ulps;         // elementwise: values and dX, dY against the scalar path
  row_tol_fn row_tol;  // along rows
  bool extremum;       // max or min along rows: rows of no columns throw std::domain_error
};

template <class B>
constexpr entry ew(const char* name, double u) {
  return {name, kind::elementwise, &run_matrix<float, B>, &run_matrix<double, B>, &run_reference<float, B>,
          &run_reference<double, B>, u, nullptr, false};
}
template <class B>
constexpr entry ax(const char* name, row_tol_fn t, bool extremum = false) {
  return {name, kind::rows, &run_matrix<float, B>, &run_matrix<double, B>, &run_reference<float, B>,
          &run_reference<double, B>, 0, t, extremum};
}

const entry family[] = {
    ew<s_add_row>("X + b", 0),
    ew<s_mul_col>("X * as_column(v)", 0),
    ew<s_where>("where(X > b, X * s, Y)", 0),
    ew<s_clip>("clip_gradient(X * Y, lo, hi)", 0),
    ew<s_max_row>("max(X, b)", 0),
    ew<s_exp_col>("exp(X - as_column(v))", fn_ulps),
    ew<s_st_round>("straight_through(round(X * b), X)", 0),
    ew<s_cg_col>("custom_gradient X * as_column(v), {dy v, zero}", 0),
    ew<s_override>("override_gradients(identity(X) * Y, 3 dy)", 0),
    ew<s_reverse>("reverse_gradient(X * Y, k)", 0),
    ew<s_let_clip>("let c = clip_gradient(X * b, lo, hi): abs(c) + c", 0),
    ew<s_let_custom>("let c = custom_gradient X * Y, {dy Y, zero}: max(c, b) + c", 0),
    ax<a_sum>("v * sum(X, axis<1>)", tol_sum),
    ax<a_mean>("v * mean(X, axis<1>)", tol_mean),
    ax<a_max>("v * max(X, axis<1>)", tol_exact, true),
    ax<a_min>("v * min(X, axis<1>)", tol_exact, true),
    ax<a_squared_norm>("v * squared_norm(X, axis<1>)", tol_squared_norm),
    ax<a_norm>("v * norm(X, axis<1>)", tol_norm),
    ax<a_logsumexp>("v * logsumexp(X, axis<1>)", tol_lse),
    ax<a_lse_row>("v * logsumexp(X + b, axis<1>)", tol_lse_row),
    ax<a_sce>("v * softmax_cross_entropy(X, Y) (rows)", tol_sce),
    ax<a_logistic>("let z = sum(X * b, axis<1>): softplus(z) - v * z", tol_logistic),
};
constexpr std::size_t family_size = sizeof(family) / sizeof(family[0]);

// ---- decoding ------------------------------------------------------------------------------

/// Input format (doc/testing.md, "Fuzzing"):
///   byte 0   expression (modulo the family size)
///   byte 1   bit 0: double (else float); bit 1: large (40 + byte 3 % 32 rows, 200 + byte 4 % 64
///            columns); bit 2: padding values positive only; bit 3: set (this family)
///   byte 2   bits 0-2: misalignment of x in elements; bits 3-5: of y; bits 6-7: row padding
///            (ld - cols: 0, 1, 3 or 8)
///   byte 3   rows (modulo 41), unless large
///   byte 4   columns (modulo 41), unless large
///   then     s, k, lo, hi, b[0..cols), v[0..rows), x and y row by row: 3 bytes each, as in the
///            1-D family; past the end, the same deterministic moderate values.
struct header {
  std::size_t expr, rows, cols, ld, offx, offy;
  bool dbl, pad_positive;
};

header decode(const std::uint8_t* data, std::size_t size) {
  const input_head c = decode_head(data, size, family_size);
  constexpr std::size_t pads[] = {0, 1, 3, 8};
  const bool large = byte_at(data, size, 1) & 2u;
  const unsigned b3 = byte_at(data, size, 3), b4 = byte_at(data, size, 4);
  header h{c.expr, large ? 40 + b3 % 32 : b3 % 41, large ? 200 + b4 % 64 : b4 % 41, 0, c.offx, c.offy, c.dbl, c.pad_positive};
  h.ld = h.cols + pads[(byte_at(data, size, 2) >> 6) & 3u];
  return h;
}

/// Elements of a rows x cols view with rows ld apart (the last row without padding).
std::size_t extent(std::size_t rows, std::size_t cols, std::size_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

// ---- checks --------------------------------------------------------------------------------

void same(const char* what, const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) fail("%s: lengths %zu and %zu", what, a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits_or_nan(a[i], b[i]) && !(a[i] == b[i])) fail("%s[%zu]: %.17g and %.17g differ", what, i, a[i], b[i]);
}

void check_entry_points(const result& r) {
  same("value(e) against evaluate(e, out)", r.val2, r.val);
  if (!same_bits_or_nan(r.value_into, r.value) && r.value_into != r.value)
    fail("grad_into's value %.17g, grad's %.17g", r.value_into, r.value);
  same("grad_into's dX against grad's", r.gx_into, r.gx);
  same("grad_into's dY against grad's", r.gy_into, r.gy);
  same("grad_into's db against grad's", r.gb_into, r.gb);
  same("grad_into's dv against grad's", r.gv_into, r.gv);
  if (!same_bits_or_nan(r.gs_into, r.gs) && r.gs_into != r.gs) fail("grad_into's ds %.17g, grad's %.17g", r.gs_into, r.gs);
}

bool close_abs(double got, double want, double tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::abs(got - want) <= tol;
}

template <class T>
void fuzz(const entry& E, const header& h, value_stream& vs) {
  const limits L = limits_of<T>();
  const std::size_t R = h.rows, C = h.cols, ld = h.ld, n = R * C, ext = extent(R, C, ld);
  buffer<T> bx(ext, h.offx), by(ext, h.offy), bb(C, (h.offx + 2) % 8), bv(R, (h.offy + 5) % 8);
  const T pad = std::numeric_limits<T>::quiet_NaN();  // between rows: must never be read
  std::fill(bx.data(), bx.data() + ext, pad);
  std::fill(by.data(), by.data() + ext, pad);
  inputs<T> in{bx.data(), by.data(), R, C, ld, bb.span(), bv.span(), T(0), {T(0), T(0), T(0)}};
  in.s = vs.next<T>(T(1));
  in.p.k = vs.next<T>(T(1));
  in.p.lo = vs.next<T>(T(1));
  in.p.hi = vs.next<T>(T(1));
  // Bounds that are NaN or reversed are the 1-D family's to check (they throw); repaired here.
  if (std::isnan(in.p.lo)) in.p.lo = -std::numeric_limits<T>::infinity();
  if (std::isnan(in.p.hi)) in.p.hi = std::numeric_limits<T>::infinity();
  if (in.p.lo > in.p.hi) std::swap(in.p.lo, in.p.hi);
  for (std::size_t j = 0; j < C; ++j) in.b[j] = vs.next<T>(T(1));
  for (std::size_t i = 0; i < R; ++i) in.v[i] = vs.next<T>(T(1));
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j) in.x[i * ld + j] = vs.next<T>(T(1));
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j) in.y[i * ld + j] = vs.next<T>(in.x[i * ld + j]);

  // Dense copies in double, for messages and tolerances.
  std::vector<double> xd(n), yd(n), bd(in.b.begin(), in.b.end()), vd(in.v.begin(), in.v.end());
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j) xd[i * C + j] = double(in.x[i * ld + j]), yd[i * C + j] = double(in.y[i * ld + j]);
  g_cur = current_input{};
  g_cur.expr = E.name;
  g_cur.type = L.dbl ? "double" : "float";
  g_cur.n = n, g_cur.offx = h.offx, g_cur.offy = h.offy;
  g_cur.rows = R, g_cur.cols = C, g_cur.ld = ld;
  g_cur.x = &xd, g_cur.y = &yd, g_cur.b = &bd, g_cur.v = &vd;
  g_cur.s = double(in.s), g_cur.k = double(in.p.k), g_cur.lo = double(in.p.lo), g_cur.hi = double(in.p.hi);

  result M;
  if constexpr (std::is_same_v<T, float>) E.matrix_f(in, M, (h.offx + 5) % 8); else E.matrix_d(in, M, (h.offx + 5) % 8);
  if (M.threw_domain) {
    if (!(E.extremum && R > 0 && C == 0)) fail("std::domain_error from a matrix that has columns, or no max/min");
    return;
  }
  if (E.extremum && R > 0 && C == 0) fail("max/min along rows of no columns did not throw std::domain_error");
  check_entry_points(M);
  auto reference = [&](inputs<T>& ri, result& r) {
    if constexpr (std::is_same_v<T, float>) E.reference_f(ri, r); else E.reference_d(ri, r);
  };
  const bool tame_inputs = tame_all(xd) && tame_all(yd) && tame_all(bd) && tame_all(vd) && tame(double(in.s));
  auto dn = [&](std::size_t terms) { return (double(terms) + 4) * L.denorm; };

  if (E.k == kind::elementwise) {
    // (a) each element against its scalar-path reference; the sums against the sums of terms.
    const tolerance t = E.ulps == 0 ? exact : ulps(E.ulps);
    sum_ref loss, gs;
    std::vector<sum_ref> gb(C), gv(R);
    for (std::size_t i = 0; i < R; ++i)
      for (std::size_t j = 0; j < C; ++j) {
        inputs<T> ri{in.x + i * ld + j, in.y + i * ld + j, 0, 1, 1, in.b.subspan(j, 1), in.v.subspan(i, 1), in.s, in.p};
        result r;
        reference(ri, r);
        const std::size_t k = i * C + j;
        if (!agree(M.val[k], r.val[0], t, L)) fail("value [%zu, %zu]: matrix %.17g, element %.17g", i, j, M.val[k], r.val[0]);
        if (!agree(M.gx[k], r.gx[0], t, L)) fail("dX [%zu, %zu]: matrix %.17g, element %.17g", i, j, M.gx[k], r.gx[0]);
        if (!agree(M.gy[k], r.gy[0], t, L)) fail("dY [%zu, %zu]: matrix %.17g, element %.17g", i, j, M.gy[k], r.gy[0]);
        auto term_tol = [&](double e) { return E.ulps * L.eps * std::abs(e) + E.ulps * L.denorm; };
        loss.add(r.val[0], term_tol(r.val[0]));
        gs.add(r.gs, term_tol(r.gs));
        gb[j].add(r.gb[0], term_tol(r.gb[0]));
        gv[i].add(r.gv[0], term_tol(r.gv[0]));
      }
    if (tame_inputs) {
      if (!loss.agrees(M.value, L)) fail("sum(e): matrix %.17g, sum of the elements' %.17g", M.value, loss.fin);
      if (!gs.agrees(M.gs, L)) fail("ds: matrix %.17g, sum of the elements' %.17g", M.gs, gs.fin);
      for (std::size_t j = 0; j < C; ++j)
        if (!gb[j].agrees(M.gb[j], L)) fail("db[%zu]: matrix %.17g, sum over the rows' elements %.17g", j, M.gb[j], gb[j].fin);
      for (std::size_t i = 0; i < R; ++i)
        if (!gv[i].agrees(M.gv[i], L)) fail("dv[%zu]: matrix %.17g, sum over the row's elements %.17g", i, M.gv[i], gv[i].fin);
    }
    return;
  }

  // (b) each row against the 1-D reduction of the row.
  sum_ref loss;
  std::vector<sum_ref> gb(C);
  for (std::size_t i = 0; i < R; ++i) {
    inputs<T> ri{in.x + i * ld, in.y + i * ld, 0, C, C, in.b, in.v.subspan(i, 1), in.s, in.p};
    result r;
    reference(ri, r);
    const row w{L,
                {xd.begin() + std::ptrdiff_t(i * C), xd.begin() + std::ptrdiff_t((i + 1) * C)},
                {yd.begin() + std::ptrdiff_t(i * C), yd.begin() + std::ptrdiff_t((i + 1) * C)},
                bd,
                vd[i],
                r};
    const bool special = !finite_all(w.x) || !finite_all(w.y) || !finite_all(bd) || !std::isfinite(vd[i]);
    const bool row_tame = tame_all(w.x) && tame_all(w.y) && tame_all(bd) && tame(vd[i]);
    // Whether a row holding NaN or an infinity gives NaN or an infinity does not depend on the
    // order of its sums when its finite values are tame (none of their partial sums overflows).
    auto tame_or_special = [](const std::vector<double>& a) {
      return std::all_of(a.begin(), a.end(), [](double e) { return !std::isfinite(e) || tame(e); });
    };
    if (special && tame_or_special(w.x) && tame_or_special(w.y) && tame_or_special(bd) &&
        (!std::isfinite(vd[i]) || tame(vd[i]))) {
      // NaN and infinities follow the 1-D rules (semantics.md): the same NaN or infinity.
      if (std::isnan(r.value) != std::isnan(M.val[i]) || (std::isinf(r.value) && r.value != M.val[i]))
        fail("row %zu holds NaN or an infinity: matrix %.17g, the row's reduction %.17g", i, M.val[i], r.value);
    }
    if (!row_tame) {
      loss.add(r.value);
      continue;
    }
    const row_tol t = E.row_tol(w);
    if (!close_abs(M.val[i], r.value, t.val))
      fail("row %zu: matrix %.17g, the row's reduction %.17g (tolerance %.3g)", i, M.val[i], r.value, t.val);
    if (!close_abs(M.gv[i], r.gv[0], t.gv))
      fail("dv[%zu]: matrix %.17g, the row's %.17g (tolerance %.3g)", i, M.gv[i], r.gv[0], t.gv);
    for (std::size_t j = 0; j < C; ++j) {
      const std::size_t k = i * C + j;
      if (!close_abs(M.gx[k], r.gx[j], t.gx[j]))
        fail("dX [%zu, %zu]: matrix %.17g, the row's %.17g (tolerance %.3g)", i, j, M.gx[k], r.gx[j], t.gx[j]);
      if (!close_abs(M.gy[k], r.gy[j], t.gy[j]))
        fail("dY [%zu, %zu]: matrix %.17g, the row's %.17g (tolerance %.3g)", i, j, M.gy[k], r.gy[j], t.gy[j]);
      gb[j].add(r.gb[j], t.gb[j] + t.gx[j]);
    }
    loss.add(r.value, t.val);
  }
  if (tame_inputs) {
    if (!loss.agrees(M.value, L, 1, dn(R))) fail("the loss: matrix %.17g, sum of the rows' %.17g", M.value, loss.fin);
    for (std::size_t j = 0; j < C; ++j)
      if (!gb[j].agrees(M.gb[j], L, 1, dn(R))) fail("db[%zu]: matrix %.17g, sum of the rows' %.17g", j, M.gb[j], gb[j].fin);
  }
  if (M.gs != 0) fail("ds = %.17g: no expression along rows contains s", M.gs);
}

}  // namespace

namespace tad_fuzz {

void fuzz_shapes(const std::uint8_t* data, std::size_t size) {
  const header h = decode(data, size);
  value_stream vs(data, size, h.pad_positive, 5);
  ++g_shapes_runs;
  if (h.dbl) fuzz<double>(family[h.expr], h, vs); else fuzz<float>(family[h.expr], h, vs);
}

std::size_t shapes_family_size() { return family_size; }

void list_shapes() {
  for (std::size_t i = 0; i < family_size; ++i)
    std::printf("%2zu  %-18s %s\n", i, family[i].k == kind::elementwise ? "matrix, elementwise" : "matrix, rows",
                family[i].name);
}

}  // namespace tad_fuzz
