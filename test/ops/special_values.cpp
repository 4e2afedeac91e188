// Special values, op by op (doc/semantics.md, "Special values, op by op"): the value and the
// gradient of every op, reduction and modifier at NaN, +-inf, +-0, kinks and bounds, and for
// empty arrays. Each row's expected numbers are the rule of the table (PyTorch 1.13's
// derivative formulas, evaluated by hand in IEEE arithmetic), never tad's output.
//
// Every row runs in float and double through three paths: an unaligned array long enough for
// the unrolled SIMD body, single batches and a scalar tail on every target (each element holds
// the row's input, so every path sees it), and scalar variables (the scalar expression path).
// Values must match exactly where the rule's result is exact (NaN with NaN, infinities with
// their sign, zeros with their sign where the row says so), else to a relative tolerance.
#include <support/gradient_check.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace hana = boost::hana;
using tad_test::reals;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double ln2 = std::numbers::ln2;

/// Does got match want: NaN with NaN, infinities and zeros exactly (a zero's sign too when
/// `zero_sign`), other numbers to a relative tolerance?
bool matches(double got, double want, double tol, bool zero_sign) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || want == 0) {
    return got == want && (!zero_sign || std::signbit(got) == std::signbit(want));
  }
  return std::abs(got - want) <= tol * std::abs(want);
}

template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 1e-6 : 1e-14;
}

/// A length that runs the unrolled SIMD body, a single batch and a scalar tail.
template <class T>
std::size_t body_and_tail() {
  constexpr std::size_t w = tad::simd::width<T>;
  return (2 * TAD_UNROLL + 1) * w + (w > 1 ? w - 1 : 1);
}

std::string show(double v) {
  std::ostringstream s;
  s << v;
  if (v == 0 && std::signbit(v)) return "-0";
  return s.str();
}

template <class T>
void expect(double got, double want, bool zero_sign, const std::string& what) {
  BOOST_TEST(matches(got, want, tol<T>(), zero_sign),
             what << ": got " << show(got) << ", want " << show(want) << " (" << (sizeof(T) == 4 ? "float" : "double") << ")");
}

// ---- one input ----------------------------------------------------------------------------

struct row1 {
  double x;
  double value;
  double d;               // d value / dx
  bool zero_sign = true;  // the sign of a zero value is part of the rule
};

/// f(x) for array and scalar x; f must accept a tad variable and return an expression.
template <class T, class F>
void check1(const std::string& name, F f, std::initializer_list<row1> rows) {
  const std::size_t n = body_and_tail<T>();
  for (const row1& r : rows) {
    const std::string at = name + " at " + show(r.x);
    tad_test::buffer<T> in(n);
    for (auto& v : in) v = T(r.x);
    const auto x = tad::var<"x">(in.span());
    std::vector<T> out(n);
    tad::evaluate(f(x), out);
    const auto [total, gx] = tad::grad(tad::sum(f(x)), x);
    for (std::size_t i = 0; i < n; i += (i + 1 < n && i > 2 ? n - 1 - i : 1)) {  // 0, 1, 2, 3, n-1
      expect<T>(out[i], r.value, r.zero_sign, at + ": value[" + std::to_string(i) + "]");
      expect<T>(gx[i], r.d, false, at + ": gradient[" + std::to_string(i) + "]");
    }
    T s = T(r.x);
    const auto sx = tad::var<"x">(s);
    const auto [v, g] = tad::grad(f(sx), sx);
    expect<T>(v, r.value, r.zero_sign, at + ", scalar: value");
    expect<T>(g, r.d, false, at + ", scalar: gradient");
  }
  // An empty array: nothing is evaluated, the sum is 0, the gradient empty.
  tad_test::buffer<T> none(0);
  const auto x = tad::var<"x">(none.span());
  const auto [total, gx] = tad::grad(tad::sum(f(x)), x);
  BOOST_TEST(total == T(0), name << ": sum over an empty array");
  BOOST_TEST(gx.empty(), name << ": gradient of an empty array");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(exp_log_family, T, reals) {
  check1<T>("exp", [](auto x) { return tad::exp(x); },
            {{nan, nan, nan}, {inf, inf, inf}, {-inf, 0, 0}, {0, 1, 1}, {-0.0, 1, 1}});
  check1<T>("log", [](auto x) { return tad::log(x); },  // d = 1 / x
            {{nan, nan, nan}, {inf, inf, 0}, {-inf, nan, -0.0}, {0, -inf, inf}, {-0.0, -inf, -inf}, {-1, nan, -1}});
  check1<T>("log1p", [](auto x) { return tad::log1p(x); },  // d = 1 / (1 + x)
            {{nan, nan, nan}, {inf, inf, 0}, {-inf, nan, -0.0}, {0, 0, 1}, {-0.0, -0.0, 1}, {-1, -inf, inf}, {-2, nan, -1}});
  check1<T>("expm1", [](auto x) { return tad::expm1(x); },  // d = y + 1
            {{nan, nan, nan}, {inf, inf, inf}, {-inf, -1, 0}, {0, 0, 1}, {-0.0, -0.0, 1}});
  check1<T>("sqrt", [](auto x) { return tad::sqrt(x); },  // d = 1 / (2 y)
            {{nan, nan, nan}, {inf, inf, 0}, {-inf, nan, nan}, {0, 0, inf}, {-0.0, -0.0, -inf}, {-1, nan, nan}});
  check1<T>("square", [](auto x) { return tad::square(x); },  // d = 2 x
            {{nan, nan, nan}, {inf, inf, inf}, {-inf, inf, -inf}, {0, 0, 0}, {-0.0, 0, -0.0}});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(trigonometric_and_squashing, T, reals) {
  check1<T>("sin", [](auto x) { return tad::sin(x); },  // d = cos x
            {{nan, nan, nan}, {inf, nan, nan}, {-inf, nan, nan}, {0, 0, 1}, {-0.0, -0.0, 1}});
  check1<T>("cos", [](auto x) { return tad::cos(x); },  // d = -sin x
            {{nan, nan, nan}, {inf, nan, nan}, {-inf, nan, nan}, {0, 1, -0.0}, {-0.0, 1, 0}});
  check1<T>("tan", [](auto x) { return tad::tan(x); },  // d = 1 + y^2
            {{nan, nan, nan}, {inf, nan, nan}, {-inf, nan, nan}, {0, 0, 1}, {-0.0, -0.0, 1}});
  check1<T>("tanh", [](auto x) { return tad::tanh(x); },  // d = 1 - y^2
            {{nan, nan, nan}, {inf, 1, 0}, {-inf, -1, 0}, {0, 0, 1}, {-0.0, -0.0, 1}});
  check1<T>("sigmoid", [](auto x) { return tad::sigmoid(x); },  // d = y (1 - y)
            {{nan, nan, nan}, {inf, 1, 0}, {-inf, 0, 0}, {0, 0.5, 0.25}, {-0.0, 0.5, 0.25}});
  check1<T>("softplus", [](auto x) { return tad::softplus(x); },  // d = sigmoid(x)
            {{nan, nan, nan}, {inf, inf, 1}, {-inf, 0, 0}, {0, ln2, 0.5}, {-0.0, ln2, 0.5}});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(kinks_and_piecewise_constant, T, reals) {
  check1<T>("abs", [](auto x) { return tad::abs(x); },  // d = sign(x), sign(NaN) = 0
            {{nan, nan, 0}, {inf, inf, 1}, {-inf, inf, -1}, {0, 0, 0}, {-0.0, 0, 0}, {-2, 2, -1}});
  // relu masks on its result: d = 0 where relu(x) <= 0, so 1 at NaN. relu(-0) is a zero of
  // either sign (PyTorch leaves it to the kernel).
  check1<T>("relu", [](auto x) { return tad::relu(x); },
            {{nan, nan, 1}, {inf, inf, 1}, {-inf, 0, 0}, {0, 0, 0}, {-0.0, 0, 0, false}, {-1, 0, 0}, {2, 2, 1}});
  check1<T>("sign", [](auto x) { return tad::sign(x); },  // no gradient (structural zero)
            {{nan, 0, 0}, {inf, 1, 0}, {-inf, -1, 0}, {0, 0, 0}, {-0.0, 0, 0}, {-3, -1, 0}});
  check1<T>("round", [](auto x) { return tad::round(x); },  // half to even
            {{nan, nan, 0}, {inf, inf, 0}, {-inf, -inf, 0}, {0, 0, 0}, {-0.0, -0.0, 0},
             {2.5, 2, 0}, {-2.5, -2, 0}, {0.5, 0, 0}, {-0.5, -0.0, 0}});
  check1<T>("floor", [](auto x) { return tad::floor(x); },
            {{nan, nan, 0}, {inf, inf, 0}, {-inf, -inf, 0}, {0, 0, 0}, {-0.0, -0.0, 0}, {-0.5, -1, 0}});
  check1<T>("ceil", [](auto x) { return tad::ceil(x); },
            {{nan, nan, 0}, {inf, inf, 0}, {-inf, -inf, 0}, {0, 0, 0}, {-0.0, -0.0, 0}, {-0.5, -0.0, 0}});
  check1<T>("-x", [](auto x) { return -x; },
            {{nan, nan, -1}, {inf, -inf, -1}, {-inf, inf, -1}, {0, -0.0, -1}, {-0.0, 0, -1}});
  check1<T>("identity", [](auto x) { return tad::identity(x); },
            {{nan, nan, 1}, {inf, inf, 1}, {-inf, -inf, 1}, {-0.0, -0.0, 1}});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_with_number_bounds, T, reals) {
  // x gets the gradient on [lo, hi] including the bounds, none at NaN.
  check1<T>("clamp(x, -1, 1)", [](auto x) { return tad::clamp(x, -1.0, 1.0); },
            {{nan, nan, 0}, {inf, 1, 0}, {-inf, -1, 0}, {-1, -1, 1}, {1, 1, 1}, {0.5, 0.5, 1}, {-0.0, -0.0, 1}});
  check1<T>("clamp(x, 1, 1)", [](auto x) { return tad::clamp(x, 1.0, 1.0); },
            {{nan, nan, 0}, {2, 1, 0}, {1, 1, 1}, {0, 1, 0}});
  // lo > hi or a NaN bound: an error, as clip_gradient and clip_by_value, when the expression
  // is built (numbers) or evaluated (constant_ref), before anything is written.
  std::vector<T> d{T(0.5), T(2)};
  const auto x = tad::var<"x">(d);
  BOOST_CHECK_THROW(tad::clamp(x, 1.0, -1.0), std::invalid_argument);
  BOOST_CHECK_THROW(tad::clamp(x, nan, 1.0), std::invalid_argument);
  BOOST_CHECK_THROW(tad::clamp(x, -1.0, nan), std::invalid_argument);
  T lo = -1, hi = 1;
  const auto e = tad::sum(tad::clamp(x, tad::constant_ref(lo), tad::constant_ref(hi)));
  BOOST_TEST(tad::value(e) == T(1.5));
  lo = 2;
  std::vector<T> g(2, T(7));
  BOOST_CHECK_THROW(tad::grad_into(e, tad::wrt(x, g)), std::invalid_argument);
  BOOST_TEST((g[0] == T(7) && g[1] == T(7)), "nothing written before the error");
  BOOST_CHECK_THROW(tad::value(e), std::invalid_argument);
}

// ---- two inputs ---------------------------------------------------------------------------

struct row2 {
  double a, b;
  double value;
  double da, db;
  bool zero_sign = true;
};

template <class T, class F>
void check2(const std::string& name, F f, std::initializer_list<row2> rows) {
  const std::size_t n = body_and_tail<T>();
  for (const row2& r : rows) {
    const std::string at = name + " at (" + show(r.a) + ", " + show(r.b) + ")";
    tad_test::buffer<T> ina(n), inb(n, 3);
    for (auto& v : ina) v = T(r.a);
    for (auto& v : inb) v = T(r.b);
    const auto x = tad::var<"x">(ina.span());
    const auto y = tad::var<"y">(inb.span());
    std::vector<T> out(n);
    tad::evaluate(f(x, y), out);
    const auto [total, gx, gy] = tad::grad(tad::sum(f(x, y)), x, y);
    for (std::size_t i = 0; i < n; i += (i + 1 < n && i > 2 ? n - 1 - i : 1)) {
      std::string k = "[";  // appended, not `"[" + ...`: g++ 12's -Wstringop-overflow misfires on that
      k += std::to_string(i);
      k += ']';
      expect<T>(out[i], r.value, r.zero_sign, at + ": value" + k);
      expect<T>(gx[i], r.da, false, at + ": d/dx" + k);
      expect<T>(gy[i], r.db, false, at + ": d/dy" + k);
    }
    T sa = T(r.a), sb = T(r.b);
    const auto s = tad::var<"x">(sa);
    const auto t = tad::var<"y">(sb);
    const auto [v, ga, gb] = tad::grad(f(s, t), s, t);
    expect<T>(v, r.value, r.zero_sign, at + ", scalars: value");
    expect<T>(ga, r.da, false, at + ", scalars: d/dx");
    expect<T>(gb, r.db, false, at + ", scalars: d/dy");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(arithmetic, T, reals) {
  check2<T>("x + y", [](auto x, auto y) { return x + y; },
            {{inf, -inf, nan, 1, 1}, {nan, 1, nan, 1, 1}, {0, -0.0, 0, 1, 1}, {-0.0, -0.0, -0.0, 1, 1}});
  check2<T>("x - y", [](auto x, auto y) { return x - y; },
            {{inf, inf, nan, 1, -1}, {nan, 1, nan, 1, -1}, {0, 0, 0, 1, -1}, {-0.0, 0, -0.0, 1, -1}});
  check2<T>("x * y", [](auto x, auto y) { return x * y; },  // d/dx = y, d/dy = x
            {{0, inf, nan, inf, 0}, {inf, -inf, -inf, -inf, inf}, {-0.0, 1, -0.0, 1, -0.0}, {nan, 2, nan, 2, nan}});
  check2<T>("x / y", [](auto x, auto y) { return x / y; },  // d/dx = 1 / y, d/dy = -x / y^2
            {{1, 0, inf, inf, -inf}, {0, 0, nan, inf, nan}, {1, inf, 0, 0, -0.0}, {inf, inf, nan, 0, nan},
             {-1, -0.0, inf, -inf, inf}, {nan, 1, nan, 1, nan}});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_max_min, T, reals) {
  // d/dx = 0 where y == 0, else y x^(y-1); d/dy = 0 where x == 0 and y >= 0, else x^y log x.
  check2<T>("pow(x, y)", [](auto x, auto y) { return tad::pow(x, y); },
            {{0, 0, 1, 0, 0}, {0, 2, 0, 0, 0}, {0, 0.5, 0, inf, 0}, {0, -1, inf, -inf, -inf},
             {-2, 2, 4, -4, nan}, {nan, 0, 1, 0, nan}, {1, nan, 1, nan, 0}, {inf, 2, inf, inf, inf},
             {2, inf, inf, inf, inf}, {2, -inf, 0, nan, 0}, {-8, 1.0 / 3, nan, nan, nan}});
  // PyTorch's maximum/minimum: all to the winner, half each at a tie, all to both at a NaN.
  check2<T>("max(x, y)", [](auto x, auto y) { return tad::max(x, y); },
            {{nan, 1, nan, 1, 1}, {1, nan, nan, 1, 1}, {1, 1, 1, 0.5, 0.5}, {inf, inf, inf, 0.5, 0.5},
             {0, -0.0, 0, 0.5, 0.5, false}, {-inf, 1, 1, 0, 1}, {2, 1, 2, 1, 0}});
  check2<T>("min(x, y)", [](auto x, auto y) { return tad::min(x, y); },
            {{nan, 1, nan, 1, 1}, {1, nan, nan, 1, 1}, {1, 1, 1, 0.5, 0.5}, {-inf, -inf, -inf, 0.5, 0.5},
             {0, -0.0, 0, 0.5, 0.5, false}, {-inf, 1, -inf, 1, 0}, {2, 1, 1, 0, 1}});
}

// ---- clamp with computed bounds, where ------------------------------------------------------

struct row3 {
  double x, lo, hi;
  double value;
  double dx, dlo, dhi;
};

BOOST_AUTO_TEST_CASE_TEMPLATE(clamp_with_computed_bounds, T, reals) {
  // min(max(x, lo), hi) and its derivative: x on [lo, hi], lo where x < lo <= hi, hi where the
  // result is hi by the upper clamp (x > hi, or x < lo when lo > hi: then it is hi everywhere).
  const std::size_t n = body_and_tail<T>();
  for (const row3& r : std::initializer_list<row3>{
           {nan, -1, 1, nan, 0, 0, 0}, {inf, -1, 1, 1, 0, 0, 1}, {-inf, -1, 1, -1, 0, 1, 0},
           {-1, -1, 1, -1, 1, 0, 0}, {1, -1, 1, 1, 1, 0, 0}, {0.5, -1, 1, 0.5, 1, 0, 0},
           {0, 1, -1, -1, 0, 0, 1}, {2, 1, -1, -1, 0, 0, 1}, {-2, 1, -1, -1, 0, 0, 1},
           {0, nan, 1, nan, 0, 0, 0}, {0, -1, nan, nan, 0, 0, 0}, {2, 1, 1, 1, 0, 0, 1}}) {
    const std::string at = "clamp at (" + show(r.x) + ", " + show(r.lo) + ", " + show(r.hi) + ")";
    tad_test::buffer<T> bx(n), bl(n, 2), bh(n, 3);
    for (std::size_t i = 0; i < n; ++i) bx[i] = T(r.x), bl[i] = T(r.lo), bh[i] = T(r.hi);
    const auto x = tad::var<"x">(bx.span());
    const auto lo = tad::var<"lo">(bl.span());
    const auto hi = tad::var<"hi">(bh.span());
    std::vector<T> out(n);
    tad::evaluate(tad::clamp(x, lo, hi), out);
    const auto [total, gx, gl, gh] = tad::grad(tad::sum(tad::clamp(x, lo, hi)), x, lo, hi);
    for (const std::size_t i : {std::size_t{0}, std::size_t{1}, n - 1}) {
      expect<T>(out[i], r.value, true, at + ": value");
      expect<T>(gx[i], r.dx, false, at + ": d/dx");
      expect<T>(gl[i], r.dlo, false, at + ": d/dlo");
      expect<T>(gh[i], r.dhi, false, at + ": d/dhi");
    }
    T a = T(r.x), b = T(r.lo), c = T(r.hi);
    const auto sx = tad::var<"x">(a);
    const auto sl = tad::var<"lo">(b);
    const auto sh = tad::var<"hi">(c);
    const auto [v, g1, g2, g3] = tad::grad(tad::clamp(sx, sl, sh), sx, sl, sh);
    expect<T>(v, r.value, true, at + ", scalars: value");
    expect<T>(g1, r.dx, false, at + ", scalars: d/dx");
    expect<T>(g2, r.dlo, false, at + ", scalars: d/dlo");
    expect<T>(g3, r.dhi, false, at + ", scalars: d/dhi");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(where_and_the_double_where_trap, T, reals) {
  // The unchosen branch gets adjoint 0, which its own rule multiplies by its local derivative:
  // sqrt'(x) = 1 / (2 sqrt x) is inf at 0 and NaN below, so 0 * that is NaN (PyTorch, JAX).
  check1<T>("where(x > 0, sqrt(x), 0)", [](auto x) { return tad::where(x > 0, tad::sqrt(x), 0); },
            {{4, 2, 0.25}, {0, 0, nan}, {-1, 0, nan}, {nan, 0, nan}, {inf, inf, 0}});
  // The double where: the inner where keeps sqrt's input where its derivative is finite.
  check1<T>("where(x > 0, sqrt(where(x > 0, x, 1)), 0)",
            [](auto x) { return tad::where(x > 0, tad::sqrt(tad::where(x > 0, x, 1)), 0); },
            {{4, 2, 0.25}, {0, 0, 0}, {-1, 0, 0}, {nan, 0, 0}, {inf, inf, 0}});
  // A masked sentinel: square's adjoint is 0 at the largest finite x, and (0 + 0) x is 0 in the
  // loop's body, its tail and a scalar expression alike (0 (x + x) would be NaN: decisions.md 70).
  const double big = static_cast<double>(std::numeric_limits<T>::max());
  check1<T>("where(x < 1e30, square(x), 0)", [](auto x) { return tad::where(x < 1e30, tad::square(x), 0); },
            {{3, 9, 6}, {big, 0, 0}});
}

// ---- reductions -----------------------------------------------------------------------------

/// n copies of `fill` with `special` at positions 1 and n - 1 (a SIMD lane and the tail).
template <class T>
tad_test::buffer<T> with_specials(std::size_t n, double fill, double special) {
  tad_test::buffer<T> b(n);
  for (auto& v : b) v = T(fill);
  b[1] = T(special);
  b[n - 1] = T(special);
  return b;
}

template <class T, class R>
void check_reduction(const std::string& name, R reduce, double fill, double special, double value, double d_fill,
                     double d_special) {
  const std::size_t n = body_and_tail<T>();
  auto b = with_specials<T>(n, fill, special);
  const auto x = tad::var<"x">(b.span());
  const auto [v, g] = tad::grad(reduce(x), x);
  const std::string at = name + " of " + show(fill) + "s with " + show(special) + " at 1 and n-1";
  expect<T>(v, value, false, at + ": value");
  expect<T>(g[0], d_fill, false, at + ": d/dx[0]");
  expect<T>(g[1], d_special, false, at + ": d/dx[1]");
  expect<T>(g[n - 2], d_fill, false, at + ": d/dx[n-2]");
  expect<T>(g[n - 1], d_special, false, at + ": d/dx[n-1]");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions, T, reals) {
  const double n = double(body_and_tail<T>());
  auto sum = [](auto x) { return tad::sum(x); };
  auto mean = [](auto x) { return tad::mean(x); };
  auto max = [](auto x) { return tad::max(x); };
  auto min = [](auto x) { return tad::min(x); };
  auto norm = [](auto x) { return tad::norm(x); };
  auto sq = [](auto x) { return tad::squared_norm(x); };
  auto lse = [](auto x) { return tad::logsumexp(x); };
  check_reduction<T>("sum", sum, 1, nan, nan, 1, 1);
  check_reduction<T>("sum", sum, 1, inf, inf, 1, 1);
  check_reduction<T>("sum", sum, -inf, inf, nan, 1, 1);
  check_reduction<T>("mean", mean, 1, inf, inf, 1 / n, 1 / n);
  // max/min: the elements equal to the result share the gradient; with a NaN the NaNs do.
  check_reduction<T>("max", max, 1, nan, nan, 0, 0.5);
  check_reduction<T>("max", max, 1, inf, inf, 0, 0.5);
  check_reduction<T>("max", max, -inf, 1, 1, 0, 0.5);
  check_reduction<T>("max", max, 1, 1, 1, 1 / n, 1 / n);
  check_reduction<T>("min", min, 1, nan, nan, 0, 0.5);
  check_reduction<T>("min", min, 1, -inf, -inf, 0, 0.5);
  check_reduction<T>("min", min, 0, -0.0, 0, 1 / n, 1 / n);
  // norm: x / norm(x), 0 at the zero vector; inf * (1 / inf) is NaN.
  check_reduction<T>("norm", norm, 0, 0, 0, 0, 0);
  check_reduction<T>("norm", norm, 1, inf, inf, 0, nan);
  check_reduction<T>("norm", norm, 1, nan, nan, nan, nan);
  check_reduction<T>("squared_norm", sq, 1, inf, inf, 2, inf);
  check_reduction<T>("squared_norm", sq, 1, nan, nan, 2, nan);
  // logsumexp: d = exp(x - result); exp(-inf - -inf) and exp(inf - inf) are NaN.
  check_reduction<T>("logsumexp", lse, -inf, -inf, -inf, nan, nan);
  check_reduction<T>("logsumexp", lse, 1, inf, inf, 0, nan);
  check_reduction<T>("logsumexp", lse, 1, nan, nan, nan, nan);
  check_reduction<T>("logsumexp", lse, -inf, 0, std::log(2.0), 0, 0.5);

  // dot(x, y) = sum(x * y): 0 * inf is NaN; d/dx = y, d/dy = x.
  const std::size_t m = body_and_tail<T>();
  auto a = with_specials<T>(m, 1, 0);
  auto b = with_specials<T>(m, 1, inf);
  const auto x = tad::var<"x">(a.span());
  const auto y = tad::var<"y">(b.span());
  const auto [v, gx, gy] = tad::grad(tad::dot(x, y), x, y);
  expect<T>(v, nan, false, "dot with 0 * inf: value");
  expect<T>(gx[1], inf, false, "dot: d/dx at the inf");
  expect<T>(gy[1], 0, false, "dot: d/dy at the 0");
  expect<T>(gx[0], 1, false, "dot: d/dx elsewhere");

  // softmax_cross_entropy(z, t) = sum(t) logsumexp(z) - dot(t, z): a -inf logit with target 0
  // gives 0 * -inf = NaN (as -sum(t * log_softmax(z))); d/dz = sum(t) softmax(z) - t.
  std::vector<T> z{-T(inf), T(0)}, t{T(0), T(1)};
  const auto zv = tad::var<"z">(z);
  const auto tv = tad::var<"t">(t);
  const auto [ce, gz, gt] = tad::grad(tad::softmax_cross_entropy(zv, tv), zv, tv);
  expect<T>(ce, nan, false, "softmax_cross_entropy([-inf, 0], [0, 1])");
  expect<T>(gz[0], 0, false, "d/dz[0]");
  expect<T>(gz[1], 0, false, "d/dz[1]");
  expect<T>(gt[0], inf, false, "d/dt[0] = logsumexp(z) - z[0]");
  expect<T>(gt[1], 0, false, "d/dt[1]");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(empty_reductions, T, reals) {
  tad_test::buffer<T> none(0);
  const auto x = tad::var<"x">(none.span());
  expect<T>(tad::value(tad::sum(x)), 0, false, "sum of empty");
  expect<T>(tad::value(tad::mean(x)), nan, false, "mean of empty");
  expect<T>(tad::value(tad::norm(x)), 0, false, "norm of empty");
  expect<T>(tad::value(tad::squared_norm(x)), 0, false, "squared_norm of empty");
  expect<T>(tad::value(tad::dot(x, x)), 0, false, "dot of empty");
  expect<T>(tad::value(tad::logsumexp(x)), -inf, false, "logsumexp of empty");
  expect<T>(tad::value(tad::softmax_cross_entropy(x, x)), nan, false, "softmax_cross_entropy of empty");
  BOOST_CHECK_THROW(tad::value(tad::max(x)), std::domain_error);
  BOOST_CHECK_THROW(tad::value(tad::min(x)), std::domain_error);
  const auto [v, g] = tad::grad(tad::mean(x), x);
  expect<T>(v, nan, false, "grad of mean of empty: value");
  BOOST_TEST(g.empty());
}

// ---- modifiers ------------------------------------------------------------------------------

// log(1 + e^x) with the rule 1 - 1 / (1 + e^x): 1 at +inf, where e^x / (1 + e^x) is inf / inf.
constexpr auto log1pexp = tad::custom_gradient(
    [](auto x) { return tad::log(1 + tad::exp(x)); },
    [](auto dy, auto x, auto) {
      using V = decltype(x);
      return dy * (V(1) - V(1) / (V(1) + tad::math::exp(x)));
    });
constexpr auto pass_relu = [](auto dy, auto, auto) { return dy; };

BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers, T, reals) {
  // stop_gradient is a structural zero: no 0 * inf or 0 * NaN is ever computed below it.
  check1<T>("stop_gradient(sqrt(x))", [](auto x) { return tad::stop_gradient(tad::sqrt(x)); },
            {{-1, nan, 0}, {0, 0, 0}, {nan, nan, 0}, {inf, inf, 0}});
  // A scale of 0 is not stop_gradient: the adjoint 0 still meets sqrt'(0) = inf.
  check1<T>("scale_gradient(sqrt(x), 0)", [](auto x) { return tad::scale_gradient(tad::sqrt(x), 0.0); },
            {{0, 0, nan}, {4, 2, 0}, {nan, nan, nan}});
  check1<T>("scale_gradient(x, 2)", [](auto x) { return tad::scale_gradient(x, 2.0); },
            {{nan, nan, 2}, {inf, inf, 2}, {-0.0, -0.0, 2}});
  check1<T>("reverse_gradient(x, 0.5)", [](auto x) { return tad::reverse_gradient(x, 0.5); },
            {{nan, nan, -0.5}, {-inf, -inf, -0.5}, {0, 0, -0.5}});
  check1<T>("reverse_gradient(x, 0)", [](auto x) { return tad::reverse_gradient(x, 0.0); },
            {{nan, nan, 0}, {2, 2, 0}});
  check1<T>("straight_through(round(x), x)", [](auto x) { return tad::straight_through(tad::round(x), x); },
            {{nan, nan, 1}, {inf, inf, 1}, {2.5, 2, 1}, {-0.5, -0.0, 1}});
  check1<T>("log1pexp (custom_gradient)", [](auto x) { return log1pexp(x); },
            {{inf, inf, 1}, {-inf, 0, 0}, {0, ln2, 0.5}, {nan, nan, nan}});
  check1<T>("override_gradients(relu(x), relu -> dy)",
            [](auto x) {
              return tad::override_gradients(tad::relu(x), hana::make_map(hana::make_pair(hana::type_c<tad::relu_op>, pass_relu)));
            },
            {{-1, 0, 1}, {nan, nan, 1}, {-inf, 0, 1}, {2, 2, 1}});
  // clip_gradient clips the adjoint, which y makes special here: NaN stays NaN, +-inf is clipped.
  check2<T>("clip_gradient(x, -0.5, 0.5) * y", [](auto x, auto y) { return tad::clip_gradient(x, -0.5, 0.5) * y; },
            {{1, nan, nan, nan, 1}, {1, inf, inf, 0.5, 1}, {1, -inf, -inf, -0.5, 1}, {1, 0.25, 0.25, 0.25, 1},
             {nan, 1, nan, 0.5, nan}});
  check2<T>("clip_gradient(x, 0.5, 0.5) * y", [](auto x, auto y) { return tad::clip_gradient(x, 0.5, 0.5) * y; },
            {{1, -3, -3, 0.5, 1}, {1, nan, nan, nan, 1}});
}

}  // namespace
