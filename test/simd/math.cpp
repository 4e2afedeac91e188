// tad/simd/math.hpp: (a) constant evaluation against closed forms, (b) the constexpr fallbacks
// (tad::math::detail, run at run time) against std:: over wide ranges, (c) the batch versions
// against std:: lane by lane. Run with --log_level=message to print the measured worst ulps.

#include <tad/simd/math.hpp>

#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace m = tad::math;
namespace md = tad::math::detail;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr float nanf = std::numeric_limits<float>::quiet_NaN();

template <class T>
using uint_of = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
template <class T>
using int_of = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;

template <class T>
constexpr bool sign_bit(T x) {
  return (std::bit_cast<uint_of<T>>(x) >> (8 * sizeof(T) - 1)) != 0;
}
/// Same value and same sign bit (so -0 differs from +0); NaNs match each other.
template <class T>
constexpr bool same(T a, T b) {
  return (a != a && b != b) || (a == b && sign_bit(a) == sign_bit(b));
}

// ---- (a) constant evaluation ---------------------------------------------------------------

static_assert(m::exp(0.0) == 1.0 && m::exp(0.0f) == 1.0f);
static_assert(m::exp(1.0) == 0x1.5bf0a8b145769p+1);  // e, correctly rounded
static_assert(m::exp(-inf) == 0.0 && m::exp(inf) == inf && m::exp(1000.0) == inf);
static_assert(m::exp(-1000.0) == 0.0 && m::exp(-745.0) == 0x1p-1074 && m::isnan(m::exp(nan)));
static_assert(m::log(1.0) == 0.0 && m::log(1.0f) == 0.0f &&
              m::log(0x1p-1074) == -1074 * m::log(2.0));
static_assert(m::log(2.0) == 0x1.62e42fefa39efp-1);  // ln 2, correctly rounded
static_assert(m::log(0.0) == -inf && m::log(inf) == inf && m::isnan(m::log(-1.0)));
static_assert(m::log1p(0.0) == 0.0 && same(m::log1p(-0.0), -0.0) && m::log1p(-1.0) == -inf);
static_assert(m::log1p(1e-300) == 1e-300 && m::log1p(1.0) == m::log(2.0));
static_assert(m::isnan(m::log1p(-2.0)) && m::log1p(inf) == inf);
static_assert(m::expm1(0.0) == 0.0 && m::expm1(-inf) == -1.0 && m::expm1(1e-300) == 1e-300);
static_assert(m::expm1(1.0) == 0x1.b7e151628aed3p+0);  // e - 1
static_assert(m::sqrt(4.0) == 2.0 && m::sqrt(0.25f) == 0.5f &&
              m::sqrt(2.0) == 0x1.6a09e667f3bcdp+0);
static_assert(same(m::sqrt(-0.0), -0.0) && m::isnan(m::sqrt(-1.0)) && m::sqrt(inf) == inf);
static_assert(m::sqrt(0x1p-1074) == 0x1p-537 && m::sqrt(9.0f) == 3.0f);
static_assert(m::sin(0.0) == 0.0 && same(m::sin(-0.0), -0.0) && m::cos(0.0) == 1.0);
static_assert(m::tan(0.0) == 0.0 && m::isnan(m::sin(inf)) && m::isnan(m::cos(-inf)));
static_assert(m::sin(1.0) == 0x1.aed548f090ceep-1 && m::cos(1.0) == 0x1.14a280fb5068cp-1);
static_assert(m::tan(1.0) == 0x1.8eb245cbee3a6p+0);
static_assert(m::sin(1e22) == -0x1.b453ab76bf397p-1);  // needs Payne-Hanek reduction
static_assert(m::tan(1e5) == -0x1.250a9d503313dp-5 && m::cos(1e300) == -0x1.2699022adc4c1p-1);
static_assert(m::tanh(0.0) == 0.0 && m::tanh(inf) == 1.0 && m::tanh(-inf) == -1.0);
static_assert(m::tanh(1e-300) == 1e-300 && m::tanh(-30.0f) == -1.0f && m::isnan(m::tanh(nan)));
static_assert(m::sigmoid(0.0) == 0.5 && m::sigmoid(inf) == 1.0 && m::sigmoid(-inf) == 0.0);
static_assert(m::sigmoid(-1000.0) == 0.0 && m::sigmoid(0.0f) == 0.5f && m::isnan(m::sigmoid(nan)));
static_assert(m::softplus(0.0) == m::log(2.0) && m::softplus(-inf) == 0.0);
static_assert(m::softplus(inf) == inf && m::softplus(1000.0) == 1000.0 &&
              m::isnan(m::softplus(nan)));
static_assert(m::pow(2.0, 10.0) == 1024.0 && m::pow(-2.0, 3.0) == -8.0 && m::pow(-2.0, 2.0) == 4.0);
static_assert(m::pow(nan, 0.0) == 1.0 && m::pow(1.0, nan) == 1.0 && m::pow(-1.0, inf) == 1.0);
static_assert(m::pow(0.0, -1.0) == inf && m::pow(-0.0, -1.0) == -inf && m::pow(0.0, 2.0) == 0.0);
static_assert(same(m::pow(-0.0, 3.0), -0.0) && m::isnan(m::pow(-2.0, 0.5)));
static_assert(m::pow(4.0, 0.5) == 2.0 && m::pow(10.0, -2.0) == 0.01 &&
              m::pow(2.0, -1074.0) == 0x1p-1074);
static_assert(m::pow(2.0, 1024.0) == inf && m::pow(-inf, 3.0) == -inf &&
              m::pow(3.0f, 2.0f) == 9.0f);
static_assert(m::abs(-3.0) == 3.0 && same(m::abs(-0.0), 0.0) && m::abs(-2.5f) == 2.5f);
static_assert(m::floor(-2.5) == -3.0 && m::ceil(-2.5) == -2.0 && m::floor(2.5) == 2.0);
static_assert(m::ceil(2.5) == 3.0 && m::floor(-0.5) == -1.0 && same(m::ceil(-0.5), -0.0));
static_assert(same(m::floor(-0.0), -0.0) && m::floor(-3.0f) == -3.0f && m::ceil(-3.5f) == -3.0f);
static_assert(m::round_even(2.5) == 2.0 && m::round_even(3.5) == 4.0 &&
              m::round_even(-2.5) == -2.0);
static_assert(m::round_even(0.5) == 0.0 && same(m::round_even(-0.5), -0.0));
static_assert(m::round_even(0.49999999999999994) == 0.0 &&
              m::round_even(4503599627370497.0) == 4503599627370497.0);
static_assert(m::round_even(2.5f) == 2.0f && m::round_even(-1.5f) == -2.0f);
static_assert(m::sign(-3.0) == -1.0 && m::sign(2.0f) == 1.0f && m::sign(0.0) == 0.0);
static_assert(same(m::sign(-0.0), 0.0) && same(m::sign(nan), 0.0) && m::sign(-inf) == -1.0);  // sign(NaN) = +0
static_assert(m::isnan(m::max(1.0, nan)) && m::isnan(m::max(nan, 1.0)) && m::max(1.0, 2.0) == 2.0);
static_assert(m::isnan(m::min(1.0f, nanf)) && m::isnan(m::min(nanf, 1.0f)) &&
              m::min(1.0, 2.0) == 1.0);
static_assert(m::isnan(nan) && !m::isnan(inf) && !m::isnan(1.0f));

// ---- helpers ---------------------------------------------------------------------------------

/// Distance in units in the last place: 0 for equal values (+0 == -0) and for two NaNs.
template <class T>
double ulp_distance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0.0 : inf;
  if (a == b) return 0.0;
  auto ordered = [](T x) {
    const int_of<T> i = std::bit_cast<int_of<T>>(x);
    return i < 0 ? std::numeric_limits<int_of<T>>::min() - i : i;
  };
  const int_of<T> ia = ordered(a), ib = ordered(b);
  if ((ia < 0) != (ib < 0)) return std::fabs(static_cast<double>(ia) - static_cast<double>(ib));
  return static_cast<double>(ia > ib ? ia - ib : ib - ia);
}

/// The worst point of one comparison.
struct worst {
  double ulp = 0;
  double x = 0;
  double y = 0;
  std::size_t points = 0;
};

template <class T>
std::string type_name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

void report(const std::string& what, const worst& w) {
  BOOST_TEST_MESSAGE(what << ": worst " << w.ulp << " ulp at x = " << w.x << " (y = " << w.y
                          << "), " << w.points << " points");
}

/// Reproducible sample points.
template <class T>
struct sampler {
  std::mt19937_64 rng{20240607};

  T uniform(double lo, double hi) {
    return static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
  }
  /// Magnitude 2^e * [1, 2) with e uniform in [e_lo, e_hi]; random sign if `both`.
  T log_uniform(int e_lo, int e_hi, bool both = true) {
    const int e = std::uniform_int_distribution<int>(e_lo, e_hi)(rng);
    const double v = std::ldexp(std::uniform_real_distribution<double>(1.0, 2.0)(rng), e);
    const T t = static_cast<T>(v);
    return both && (rng() & 1) ? -t : t;
  }
  /// A uniformly random finite bit pattern.
  T any_finite() {
    for (;;) {
      const T t = std::bit_cast<T>(static_cast<uint_of<T>>(rng()));
      if (std::isfinite(t)) return t;
    }
  }
  template <class F>
  void add(std::vector<T>& v, std::size_t n, F f) {
    for (std::size_t i = 0; i < n; ++i) v.push_back(f());
  }
};

template <class T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  return {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::min(), -L::min(),
          L::denorm_min(), -L::denorm_min(), L::max(), -L::max(), T(1), T(-1), T(0.5), T(-0.5),
          T(2), T(-2), L::epsilon(), -L::epsilon(), T(1) + L::epsilon(), T(1) - L::epsilon() / 2};
}

template <class T>
constexpr int max_exp2 = std::numeric_limits<T>::max_exponent - 1;  // 1023 or 127
template <class T>
constexpr int min_exp2 =
    std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;  // -1074 or -149
template <class T>
const double log_max =
    std::log(static_cast<double>(std::numeric_limits<T>::max()));  // 709.78 or 88.72
template <class T>
const double log_denorm = std::log(static_cast<double>(std::numeric_limits<T>::denorm_min()));

// Plain function pointers, not templates on the callable: each function is compiled once.
template <class T>
using unary = T (*)(T);
template <class T>
using binary = T (*)(T, T);

template <class T>
worst compare(const std::vector<T>& xs, unary<T> mine, unary<T> ref) {
  worst w;
  for (T x : xs) {
    const double d = ulp_distance(static_cast<T>(mine(x)), static_cast<T>(ref(x)));
    if (d > w.ulp) w = {d, static_cast<double>(x), 0.0, 0};
  }
  w.points = xs.size();
  return w;
}

/// Compares `mine` with `ref` on `xs`, reports, and checks the worst distance.
template <class T>
void check(const std::string& what, const std::vector<T>& xs, unary<T> mine, unary<T> ref,
           double tolerance) {
  const worst w = compare(xs, mine, ref);
  report(what + " (" + type_name<T>() + ")", w);
  BOOST_TEST(w.ulp <= tolerance,
             what << " (" << type_name<T>() << "): " << w.ulp << " ulp at x = " << w.x);
}

// Domains -----------------------------------------------------------------------------------

template <class T>
std::vector<T> exp_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 20000, [&] { return s.uniform(log_denorm<T> - 1, log_max<T> + 1); });
  s.add(v, 5000, [&] { return s.uniform(-1, 1); });
  s.add(v, 5000, [&] { return s.log_uniform(min_exp2<T>, 3); });
  return v;
}
template <class T>
std::vector<T> expm1_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 10000, [&] { return s.uniform(-60, log_max<T> + 1); });
  s.add(v, 10000, [&] { return s.uniform(-1, 1); });
  s.add(v, 10000, [&] { return s.log_uniform(min_exp2<T>, 2); });
  return v;
}
template <class T>
std::vector<T> log_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 20000, [&] { return std::fabs(s.any_finite()); });
  s.add(v, 10000, [&] { return s.uniform(0.5, 2.0); });
  s.add(v, 2000, [&] { return s.any_finite(); });  // negatives: NaN
  T x = 1;
  for (int i = 0; i < 200; ++i) v.push_back(x = std::nextafter(x, T(2)));
  x = 1;
  for (int i = 0; i < 200; ++i) v.push_back(x = std::nextafter(x, T(0)));
  return v;
}
template <class T>
std::vector<T> log1p_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 10000, [&] { return s.log_uniform(min_exp2<T>, max_exp2<T>, false); });
  s.add(v, 10000, [&] { return -s.log_uniform(min_exp2<T>, -1, false); });
  s.add(v, 10000, [&] { return s.uniform(-1, 1); });
  s.add(v, 1000, [&] { return s.uniform(-1e6, -1); });  // NaN
  return v;
}
template <class T>
std::vector<T> sqrt_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 30000, [&] { return s.any_finite(); });
  s.add(v, 5000, [&] { return s.uniform(0, 4); });
  return v;
}
/// |x| <= 1e5, random.
template <class T>
std::vector<T> trig_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 20000, [&] { return s.uniform(-1e5, 1e5); });
  s.add(v, 10000, [&] { return s.uniform(-10, 10); });
  s.add(v, 10000, [&] { return s.log_uniform(min_exp2<T>, 16); });
  return v;
}
/// |x| <= 1e5, as close to multiples of pi/2 (zeros of sin, cos, tan, poles of tan) as the type
/// allows: where the argument reduction matters.
template <class T>
std::vector<T> trig_near_multiples() {
  std::vector<T> v;
  const long double pio2 = 1.570796326794896619231321691639751442L;
  for (int k = 1; k < 63000; k += 7) {
    const T x = static_cast<T>(k * pio2);
    v.push_back(x);
    v.push_back(std::nextafter(x, T(0)));
    v.push_back(-std::nextafter(x, T(1e6)));
  }
  return v;
}
/// 2^17 <= |x| <= max: the Payne-Hanek range (and a margin below it).
template <class T>
std::vector<T> huge_trig_domain() {
  sampler<T> s;
  std::vector<T> v;
  s.add(v, 20000, [&] { return s.log_uniform(17, max_exp2<T>); });
  return v;
}
template <class T>
std::vector<T> tanh_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 20000, [&] { return s.uniform(-25, 25); });
  s.add(v, 10000, [&] { return s.log_uniform(min_exp2<T>, 2); });
  return v;
}
template <class T>
std::vector<T> sigmoid_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 10000, [&] { return s.uniform(log_denorm<T> - 5, -log_denorm<T> + 5); });
  s.add(v, 10000, [&] { return s.uniform(-40, 40); });
  s.add(v, 10000, [&] { return s.log_uniform(min_exp2<T>, 2); });
  return v;
}
template <class T>
std::vector<T> rounding_domain() {
  sampler<T> s;
  std::vector<T> v = specials<T>();
  s.add(v, 20000, [&] { return s.any_finite(); });
  s.add(v, 10000, [&] { return s.uniform(-100, 100); });
  s.add(v, 10000, [&] { return static_cast<T>(std::floor(s.uniform(-1e6, 1e6))) + T(0.5); });
  for (T x : {T(0.49999999999999994), T(0.5), T(1.5), T(2.5), T(-2.5), T(-0.5), T(-0.4),
              T(8388608.5), T(4503599627370495.5), T(4503599627370497.0)})
    v.push_back(x);
  return v;
}

/// All pairs of special values for pow (a subnormal x only if `subnormal`).
template <class T>
std::vector<std::array<T, 2>> pow_grid(bool subnormal) {
  std::vector<T> sp = {T(0), -T(0), T(0.5), T(-0.5), T(1), T(-1), T(2), T(-2), T(2.5), T(-2.5),
                       T(3), T(-3), T(inf), T(-inf), T(nan), T(1e30), T(-1e30), T(1e-30),
                       T(0x1p60), T(-0x1p60), T(0x1p70), T(-0x1p70)};
  std::vector<std::array<T, 2>> v;
  for (T x : sp)
    for (T y : sp) v.push_back({x, y});
  if (subnormal)
    for (T y : sp) v.push_back({std::numeric_limits<T>::denorm_min(), y});
  return v;
}
/// Sampled pairs (x, y) for pow.
template <class T>
std::vector<std::array<T, 2>> pow_samples() {
  sampler<T> s;
  std::vector<std::array<T, 2>> v;
  for (int i = 0; i < 20000; ++i) {  // x > 0, |y log x| up to the overflow threshold
    const T x = s.log_uniform(min_exp2<T> / 2, max_exp2<T> / 2, false);
    const double l = std::log(static_cast<double>(x));
    const T y = static_cast<T>(s.uniform(log_denorm<T>, log_max<T>) / (l == 0 ? 1 : l));
    v.push_back({x, y});
  }
  for (int i = 0; i < 5000; ++i) v.push_back({s.uniform(0.5, 2), s.uniform(-200, 200)});
  for (int i = 0; i < 5000; ++i)  // negative x, integer y
    v.push_back({s.uniform(-10, 0), static_cast<T>(std::floor(s.uniform(-40, 40)))});
  return v;
}

template <class T>
void check_pow(const std::string& what, const std::vector<std::array<T, 2>>& xys, binary<T> mine,
               binary<T> ref, double tolerance) {
  worst w;
  bool specials_same = true;
  for (auto [x, y] : xys) {
    const T a = mine(x, y), b = ref(x, y);
    const double d = ulp_distance(a, b);
    if (d > w.ulp) w = {d, static_cast<double>(x), static_cast<double>(y), 0};
    if ((a == 0 || std::isinf(a) || std::isnan(b)) && !same(a, b)) {
      specials_same = false;
      BOOST_TEST_MESSAGE(what << ": pow(" << x << ", " << y << ") = " << a << ", std: " << b);
    }
  }
  w.points = xys.size();
  report(what + " (" + type_name<T>() + ")", w);
  BOOST_TEST(w.ulp <= tolerance, what << ": " << w.ulp << " ulp at " << w.x << ", " << w.y);
  BOOST_TEST(specials_same, what << ": zeros, infinities and NaNs as std::pow");
}

/// Exact (bitwise, sign of zero included) agreement.
template <class T>
void check_exact(const std::string& what, const std::vector<T>& xs, unary<T> mine, unary<T> ref) {
  std::size_t bad = 0;
  for (T x : xs)
    if (!same(static_cast<T>(mine(x)), static_cast<T>(ref(x)))) {
      if (++bad <= 5) BOOST_TEST_MESSAGE(what << ": differs at x = " << x);
    }
  BOOST_TEST(bad == 0u, what << " (" << type_name<T>() << "): " << bad << " points differ");
}

// The standard library's functions may not have their address taken: wrappers.
template <class T> T std_ceil(T x) { return std::ceil(x); }
template <class T> T std_cos(T x) { return std::cos(x); }
template <class T> T std_exp(T x) { return std::exp(x); }
template <class T> T std_expm1(T x) { return std::expm1(x); }
template <class T> T std_fabs(T x) { return std::fabs(x); }
template <class T> T std_floor(T x) { return std::floor(x); }
template <class T> T std_log(T x) { return std::log(x); }
template <class T> T std_log1p(T x) { return std::log1p(x); }
template <class T> T std_nearbyint(T x) { return std::nearbyint(x); }
template <class T> T std_pow(T x, T y) { return std::pow(x, y); }
template <class T> T std_sin(T x) { return std::sin(x); }
template <class T> T std_sqrt(T x) { return std::sqrt(x); }
template <class T> T std_tan(T x) { return std::tan(x); }
template <class T> T std_tanh(T x) { return std::tanh(x); }
template <class T>
T std_sign(T x) {  // PyTorch's and TensorFlow's: +0 for both zeros and for NaN
  return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
}

using float_types = boost::mpl::list<float, double>;

}  // namespace

BOOST_AUTO_TEST_SUITE(simd_math)

// ---- (b) the constexpr fallbacks, at run time, against std:: -------------------------------

/// Tolerances: double 4 ulp (pow 16), float 2 ulp.
template <class T>
constexpr double tol(double for_double) {
  return std::is_same_v<T, float> ? 2.0 : for_double;
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fallback_exp_log, T, float_types) {
  check<T>("fallback exp", exp_domain<T>(), md::exp<T>, std_exp<T>, tol<T>(4));
  check<T>("fallback expm1", expm1_domain<T>(), md::expm1<T>, std_expm1<T>, tol<T>(4));
  check<T>("fallback log", log_domain<T>(), md::log<T>, std_log<T>, tol<T>(4));
  check<T>("fallback log1p", log1p_domain<T>(), md::log1p<T>, std_log1p<T>, tol<T>(4));
  check<T>("fallback sqrt", sqrt_domain<T>(), md::sqrt<T>, std_sqrt<T>, tol<T>(4));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fallback_trig, T, float_types) {
  auto xs = trig_domain<T>();
  const auto near = trig_near_multiples<T>();
  xs.insert(xs.end(), near.begin(), near.end());
  check<T>("fallback sin |x|<=1e5", xs, md::sin<T>, std_sin<T>, tol<T>(4));
  check<T>("fallback cos |x|<=1e5", xs, md::cos<T>, std_cos<T>, tol<T>(4));
  check<T>("fallback tan |x|<=1e5", xs, md::tan<T>, std_tan<T>, tol<T>(4));
  const auto big = huge_trig_domain<T>();
  check<T>("fallback sin |x|>=2^17", big, md::sin<T>, std_sin<T>, tol<T>(4));
  check<T>("fallback cos |x|>=2^17", big, md::cos<T>, std_cos<T>, tol<T>(4));
  check<T>("fallback tan |x|>=2^17", big, md::tan<T>, std_tan<T>, tol<T>(4));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fallback_activations, T, float_types) {
  check<T>("fallback tanh", tanh_domain<T>(), md::tanh<T>, std_tanh<T>, tol<T>(4));
  const auto xs = sigmoid_domain<T>();
  // reference: tad::math at run time, i.e. the stable formula over std::exp / std::log1p
  check<T>("fallback sigmoid", xs, md::sigmoid<T>, m::sigmoid<T>, tol<T>(4));
  check<T>("fallback softplus", xs, md::softplus<T>, m::softplus<T>, tol<T>(4));
  // both against a long double evaluation, for the record
  auto sigmoid_ld = [](T x) {
    const long double e = std::exp(-std::fabs(static_cast<long double>(x)));
    return static_cast<T>(x >= 0 ? 1 / (1 + e) : e / (1 + e));
  };
  auto softplus_ld = [](T x) {
    const long double l = x;
    return static_cast<T>(std::log1p(std::exp(-std::fabs(l))) + (l > 0 ? l : 0));
  };
  report("fallback sigmoid vs long double (" + type_name<T>() + ")",
         compare<T>(xs, md::sigmoid<T>, sigmoid_ld));
  report("std sigmoid vs long double (" + type_name<T>() + ")",
         compare<T>(xs, m::sigmoid<T>, sigmoid_ld));
  report("fallback softplus vs long double (" + type_name<T>() + ")",
         compare<T>(xs, md::softplus<T>, softplus_ld));
  report("std softplus vs long double (" + type_name<T>() + ")",
         compare<T>(xs, m::softplus<T>, softplus_ld));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fallback_pow, T, float_types) {
  auto pairs = pow_grid<T>(true);
  const auto samples = pow_samples<T>();
  pairs.insert(pairs.end(), samples.begin(), samples.end());
  check_pow<T>("fallback pow", pairs, md::pow<T>, std_pow<T>, tol<T>(16));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fallback_exact, T, float_types) {
  const auto xs = rounding_domain<T>();
  check_exact<T>("fallback floor", xs, md::floor<T>, std_floor<T>);
  check_exact<T>("fallback ceil", xs, md::ceil<T>, std_ceil<T>);
  check_exact<T>("fallback round_even", xs, md::round_even<T>, std_nearbyint<T>);
  check_exact<T>("fallback abs", xs, md::abs<T>, std_fabs<T>);
  check_exact<T>("sign", xs, m::sign<T>, std_sign<T>);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(scalar_max_min_propagate_nan, T, float_types) {
  const T n = std::numeric_limits<T>::quiet_NaN();
  for (T v : {T(0), T(-1), T(1), std::numeric_limits<T>::infinity(),
              -std::numeric_limits<T>::infinity()}) {
    BOOST_TEST(std::isnan(m::max(v, n)));
    BOOST_TEST(std::isnan(m::max(n, v)));
    BOOST_TEST(std::isnan(m::min(v, n)));
    BOOST_TEST(std::isnan(m::min(n, v)));
  }
  BOOST_TEST(m::max(T(1), T(2)) == T(2));
  BOOST_TEST(m::min(T(1), T(2)) == T(1));
  BOOST_TEST(m::max(-std::numeric_limits<T>::infinity(), T(-3)) == T(-3));
}

// Constant evaluation runs exactly the code measured above at run time.
namespace {
constexpr std::array<double, 12> probe_points{0.1, -0.7, 1.5, 3.0, -17.25, 100.0, 700.0,
                                              1e-9, 12345.678, -98765.4321, 3e7, 1e300};
template <class F>
constexpr std::array<double, 12> at_probes(F f) {
  std::array<double, 12> r{};
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = f(probe_points[i]);
  return r;
}
constexpr auto ce_exp = at_probes([](double x) { return m::exp(x < 700 ? x : -x); });
constexpr auto ce_log = at_probes([](double x) { return m::log(x < 0 ? -x : x); });
constexpr auto ce_log1p = at_probes([](double x) { return m::log1p(x < 0 ? -x / 1e6 : x); });
constexpr auto ce_expm1 = at_probes([](double x) { return m::expm1(x < 100 ? x : -x); });
constexpr auto ce_sin = at_probes([](double x) { return m::sin(x); });
constexpr auto ce_tan = at_probes([](double x) { return m::tan(x); });
constexpr auto ce_tanh = at_probes([](double x) { return m::tanh(x); });
constexpr auto ce_sqrt = at_probes([](double x) { return m::sqrt(x < 0 ? -x : x); });
constexpr auto ce_pow = at_probes([](double x) { return m::pow(x < 0 ? -x : x, 0.37); });
constexpr auto ce_softplus = at_probes([](double x) { return m::softplus(x); });
}  // namespace

BOOST_AUTO_TEST_CASE(constant_evaluation_matches_runtime_fallbacks) {
  for (std::size_t i = 0; i < probe_points.size(); ++i) {
    const double x = probe_points[i];
    BOOST_TEST(same(ce_exp[i], md::exp(x < 700 ? x : -x)));
    BOOST_TEST(same(ce_log[i], md::log(x < 0 ? -x : x)));
    BOOST_TEST(same(ce_log1p[i], md::log1p(x < 0 ? -x / 1e6 : x)));
    BOOST_TEST(same(ce_expm1[i], md::expm1(x < 100 ? x : -x)));
    BOOST_TEST(same(ce_sin[i], md::sin(x)));
    BOOST_TEST(same(ce_tan[i], md::tan(x)));
    BOOST_TEST(same(ce_tanh[i], md::tanh(x)));
    BOOST_TEST(same(ce_sqrt[i], md::sqrt(x < 0 ? -x : x)));
    BOOST_TEST(same(ce_pow[i], md::pow(x < 0 ? -x : x, 0.37)));
    BOOST_TEST(same(ce_softplus[i], md::softplus(x)));
  }
}

// ---- (c) batches against std:: lane by lane ------------------------------------------------

namespace {
namespace ts = tad::simd;

/// Runs `fb` on batches of `xs` (padded with 1) and compares each lane with `ref`.
template <class T>
using unary_batch = tad::simd::batch<T> (*)(tad::simd::batch<T>);

template <class T>
worst compare_batch(std::vector<T> xs, unary_batch<T> fb, unary<T> ref) {
  const std::size_t n = xs.size();
  while (xs.size() % ts::width<T> != 0) xs.push_back(T(1));
  std::vector<T> out(xs.size());
  for (std::size_t i = 0; i < xs.size(); i += ts::width<T>)
    ts::store(&out[i], fb(ts::load(&xs[i])));
  worst w;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = ulp_distance(out[i], static_cast<T>(ref(xs[i])));
    if (d > w.ulp) w = {d, static_cast<double>(xs[i]), 0.0, 0};
  }
  w.points = n;
  return w;
}
template <class T>
void check_batch(const std::string& what, const std::vector<T>& xs, unary_batch<T> fb, unary<T> ref,
                 double tolerance) {
  const worst w = compare_batch(xs, fb, ref);
  report(what + " (batch<" + type_name<T>() + ">)", w);
  BOOST_TEST(w.ulp <= tolerance,
             what << " (batch<" << type_name<T>() << ">): " << w.ulp << " ulp at x = " << w.x);
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(batch_agrees_with_std, T, float_types) {
  using B = ts::batch<T>;
  check_batch<T>("batch exp", exp_domain<T>(), m::exp<B>, std_exp<T>, 2);
  check_batch<T>("batch expm1", expm1_domain<T>(), m::expm1<B>, std_expm1<T>, 2);
  check_batch<T>("batch log", log_domain<T>(), m::log<B>, std_log<T>, 2);
  check_batch<T>("batch log1p", log1p_domain<T>(), m::log1p<B>, std_log1p<T>, 2);
  check_batch<T>("batch sqrt", sqrt_domain<T>(), m::sqrt<B>, std_sqrt<T>, 0);
  const auto xs = trig_domain<T>();
  check_batch<T>("batch sin |x|<=1e5", xs, m::sin<B>, std_sin<T>, 2);
  check_batch<T>("batch cos |x|<=1e5", xs, m::cos<B>, std_cos<T>, 2);
  check_batch<T>("batch tan |x|<=1e5", xs, m::tan<B>, std_tan<T>, 4);
  check_batch<T>("batch tanh", tanh_domain<T>(), m::tanh<B>, std_tanh<T>, 4);
  const auto ss = sigmoid_domain<T>();
  check_batch<T>("batch sigmoid", ss, m::sigmoid<B>, m::sigmoid<T>, 4);
  check_batch<T>("batch softplus", ss, m::softplus<B>, m::softplus<T>, 4);
  const auto rs = rounding_domain<T>();
  check_batch<T>("batch floor", rs, m::floor<B>, std_floor<T>, 0);
  check_batch<T>("batch ceil", rs, m::ceil<B>, std_ceil<T>, 0);
  check_batch<T>("batch round_even", rs, m::round_even<B>, std_nearbyint<T>, 0);
  check_batch<T>("batch abs", rs, m::abs<B>, std_fabs<T>, 0);
  check_batch<T>("batch sign", rs, m::sign<B>, std_sign<T>, 0);
}

// Near the zeros of sin and cos, xsimd 8.1's double results are accurate in absolute terms only
// (up to ~2.6e4 ulp relative): checked as absolute error (for tan, scaled by 1 + tan^2).
BOOST_AUTO_TEST_CASE_TEMPLATE(batch_trig_near_multiples_of_half_pi, T, float_types) {
  using B = ts::batch<T>;
  const auto xs = trig_near_multiples<T>();
  report("batch sin near k pi/2 (batch<" + type_name<T>() + ">)",
         compare_batch<T>(xs, m::sin<B>, std_sin<T>));
  report("batch cos near k pi/2 (batch<" + type_name<T>() + ">)",
         compare_batch<T>(xs, m::cos<B>, std_cos<T>));
  report("batch tan near k pi/2 (batch<" + type_name<T>() + ">)",
         compare_batch<T>(xs, m::tan<B>, std_tan<T>));
  const double eps = std::numeric_limits<T>::epsilon();
  double sin_err = 0, cos_err = 0, tan_err = 0;
  for (std::size_t i = 0; i + ts::width<T> <= xs.size(); i += ts::width<T>) {
    const B x = ts::load(&xs[i]);
    const B s = m::sin(x), c = m::cos(x), t = m::tan(x);
    for (std::size_t j = 0; j < ts::width<T>; ++j) {
      const double xj = xs[i + j], tj = std::tan(xj);
      sin_err = std::max(sin_err, std::fabs(s.get(j) - std::sin(xj)) / eps);
      cos_err = std::max(cos_err, std::fabs(c.get(j) - std::cos(xj)) / eps);
      tan_err = std::max(tan_err, std::fabs(t.get(j) - tj) / (eps * (1 + tj * tj)));
    }
  }
  BOOST_TEST_MESSAGE("batch<" << type_name<T>() << "> near k pi/2: absolute error " << sin_err * eps
                              << " (sin), " << cos_err * eps << " (cos); tan " << tan_err * eps
                              << " * (1 + tan^2)");
  BOOST_TEST(sin_err <= 4);
  BOOST_TEST(cos_err <= 4);
  BOOST_TEST(tan_err <= 4);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(batch_pow_agrees_with_std, T, float_types) {
  using B = ts::batch<T>;
  // pow of one pair per lane: broadcast x and y
  binary<T> batch_pow = [](T x, T y) { return m::pow(B(x), B(y)).get(0); };
  // zeros, infinities, NaN, +-1, negative bases: std::pow's results (patched in math.hpp)
  std::vector<std::array<T, 2>> grid;
  for (auto p : pow_grid<T>(false))
    if (p[0] == 0 || (std::fabs(p[0]) >= T(0.5) && std::fabs(p[0]) <= T(3)) || !std::isfinite(p[0]))
      grid.push_back(p);
  check_pow<T>("batch pow specials", grid, batch_pow, std_pow<T>, 16);
  // xsimd computes exp(y log x): the error grows with |y log x|, and results beyond xsimd's
  // exp range (|y log x| > ~708 double, ~87 float) become 0 or inf (see doc/math.md)
  const auto samples = pow_samples<T>();
  const double bounds[] = {1, 10, std::is_same_v<T, float> ? 50.0 : 100.0,
                           std::is_same_v<T, float> ? 87.0 : 708.0};
  worst bins[4];
  for (auto [x, y] : samples) {
    const double a =
        std::fabs(static_cast<double>(y) * std::log(std::fabs(static_cast<double>(x))));
    if (!(std::fabs(x) >= std::numeric_limits<T>::min()) || !(a < bounds[3])) continue;
    const T r = std_pow<T>(x, y);
    std::size_t b = 0;
    while (b < 3 && a >= bounds[b]) ++b;
    const double d = ulp_distance(batch_pow(x, y), r);
    if (d > bins[b].ulp)
      bins[b] = {d, static_cast<double>(x), static_cast<double>(y), bins[b].points};
    ++bins[b].points;
  }
  for (std::size_t b = 0; b < 4; ++b)
    report("batch pow, |y log x| < " + std::to_string(static_cast<int>(bounds[b])) + " (batch<" +
               type_name<T>() + ">)", bins[b]);
  BOOST_TEST(bins[0].ulp <= 4);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(batch_max_min_sign, T, float_types) {
  using B = ts::batch<T>;
  const T n = std::numeric_limits<T>::quiet_NaN();
  const B a = B(n), b = B(T(1));
  for (std::size_t i = 0; i < ts::width<T>; ++i) {
    BOOST_TEST(std::isnan(m::max(a, b).get(i)));
    BOOST_TEST(std::isnan(m::max(b, a).get(i)));
    BOOST_TEST(std::isnan(m::min(a, b).get(i)));
    BOOST_TEST(std::isnan(m::min(b, a).get(i)));
    BOOST_TEST(m::max(b, B(T(2))).get(i) == T(2));
    BOOST_TEST(m::min(b, B(T(2))).get(i) == T(1));
    BOOST_TEST(same(m::sign(B(-T(0))).get(i), T(0)));
    BOOST_TEST(same(m::sign(a).get(i), T(0)));
    BOOST_TEST(m::isnan(a).get(i));
    BOOST_TEST(!m::isnan(b).get(i));
  }
}

BOOST_AUTO_TEST_SUITE_END()
