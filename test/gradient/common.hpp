#pragma once
// Helpers shared by the gradient-modifier tests: data at every length and one assertion per
// array comparison. Expected gradients are derived by hand (formulas), not from tad.
#include <support/check.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace grad_test {

template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-12;
}

/// Every got[i] is close to want[i] (NaN matches NaN, inf matches the same inf).
template <class G>
void expect_all(const G& got, const std::vector<double>& want, double tol, const std::string& what) {
  BOOST_TEST_REQUIRE(std::size(got) == want.size(), what << ": length " << std::size(got));
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!tad_test::close(double(got[i]), want[i], tol) && bad++ == 0) first = i;
  BOOST_TEST(bad == 0u, what << " (n = " << want.size() << "): " << bad << " elements differ; first [" << first
                             << "]: tad " << (bad ? double(got[first]) : 0.0) << ", expected "
                             << (bad ? want[first] : 0.0));
}

inline void expect(double got, double want, double tol, const std::string& what) {
  BOOST_TEST(tad_test::close(got, want, tol), what << ": tad " << got << ", expected " << want);
}

/// An unaligned buffer of n values uniform in [lo, hi).
template <class T>
tad_test::buffer<T> data(std::size_t n, double lo, double hi, unsigned seed = 7) {
  tad_test::buffer<T> b(n);
  tad_test::fill_uniform(b, lo, hi, seed);
  return b;
}

template <class B, class F>
std::vector<double> map(const B& b, F f) {
  std::vector<double> r(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) r[i] = f(double(b[i]));
  return r;
}

template <class B>
double total(const B& b) {
  double s = 0;
  for (std::size_t i = 0; i < b.size(); ++i) s += double(b[i]);
  return s;
}

inline double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/// The identity whose backward rule is dy * dy: not linear in dy, so sharing shows.
inline constexpr auto squared_rule =
    tad::custom_gradient([](auto x) { return x; }, [](auto dy, auto, auto) { return dy * dy; });
/// A rule clip(dy, -0.1, 0.1), and the rule map that overrides identity's rule with it.
inline constexpr auto clip01 = [](auto dy, auto, auto) {
  using D = decltype(dy);
  const D c = D(1) / D(10);
  return tad::simd::select(dy < -c, -c, tad::simd::select(dy > c, c, dy));
};
inline constexpr auto identity_clip =
    boost::hana::make_map(boost::hana::make_pair(boost::hana::type_c<tad::identity_op>, clip01));

}  // namespace grad_test
