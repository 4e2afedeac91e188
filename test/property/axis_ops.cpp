// Every reduction along axis 1 and axis 0 (issue 15; doc/shapes.md "Reductions along an axis")
// at the matrix shapes around the SIMD widths, float and double, unaligned rows: the loss
// L = sum(c * sin(red(X * w, axis<1>))) over a matrix variable X and a row vector variable w,
// c a constant per row (axis<0>: per column, each reduction of a column). Value against the
// reduction computed here in double; gradients against the analytic derivative
// dL/dX_rj = c_r cos(m_r) d(red)/dz_rj w_j (sum: 1, mean: 1/D, max and min: 1 at the extremum,
// norm: z/|z|, logsumexp: softmax(z), squared_norm: 2z; pick(X * w, labels): 1 at the row's
// label; axis<0>: c_j cos(m_j), the derivative within column j) and, at a few
// elements per shape, against central differences of the double loss. In test/property (the gcc
// stage only, for the CI budget); test/eval/axis.cpp keeps ties, empty rows, errors and the
// rules' special values for the other stages.
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

using tad_test::buffer;
using tad_test::reals;

namespace {

struct shape {
  std::size_t rows, cols;
};
const std::vector<shape> shapes{{0, 5}, {5, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {300, 257}};

enum class red { sum, mean, max, min, norm, logsumexp, squared_norm, pick };

/// pick's class index of row r (cols > 0).
std::size_t label_of(std::size_t r, std::size_t cols) { return (r * 7 + 3) % cols; }

/// The reduction of one row z (n values) and its derivative with respect to each z_j; pick's
/// is z[label].
double reduce(red k, const std::vector<double>& z, std::vector<double>& dz, std::size_t label) {
  const std::size_t n = z.size();
  dz.assign(n, 0.0);
  double v = 0;
  switch (k) {
    case red::sum:
      for (double x : z) v += x;
      std::fill(dz.begin(), dz.end(), 1.0);
      return v;
    case red::mean:
      for (double x : z) v += x;
      std::fill(dz.begin(), dz.end(), 1.0 / double(n));
      return v / double(n);
    case red::max:
    case red::min: {
      // Ties (products rounded to float can tie) share the gradient equally, as tad's rule does.
      const double m = *(k == red::max ? std::max_element(z.begin(), z.end()) : std::min_element(z.begin(), z.end()));
      const auto ties = static_cast<double>(std::count(z.begin(), z.end(), m));
      for (std::size_t j = 0; j < n; ++j) dz[j] = z[j] == m ? 1 / ties : 0.0;
      return m;
    }
    case red::norm:
      for (double x : z) v += x * x;
      v = std::sqrt(v);
      for (std::size_t j = 0; j < n; ++j) dz[j] = v == 0 ? 0 : z[j] / v;
      return v;
    case red::logsumexp: {
      double m = -std::numeric_limits<double>::infinity();
      for (double x : z) m = std::max(m, x);
      if (!std::isfinite(m)) m = 0;
      for (double x : z) v += std::exp(x - m);
      const double lse = m + std::log(v);
      for (std::size_t j = 0; j < n; ++j) dz[j] = std::exp(z[j] - lse);
      return lse;
    }
    case red::squared_norm:
      for (std::size_t j = 0; j < n; ++j) v += z[j] * z[j], dz[j] = 2 * z[j];
      return v;
    case red::pick:
      dz[label] = 1;
      return z[label];
  }
  return v;
}

template <red K, int Axis>
auto build(auto X, const std::vector<int>& labels) {
  constexpr auto ax = tad::axis<Axis>;
  if constexpr (K == red::sum) return tad::sum(X, ax);
  else if constexpr (K == red::mean) return tad::mean(X, ax);
  else if constexpr (K == red::max) return tad::max(X, ax);
  else if constexpr (K == red::min) return tad::min(X, ax);
  else if constexpr (K == red::norm) return tad::norm(X, ax);
  else if constexpr (K == red::logsumexp) return tad::logsumexp(X, ax);
  else if constexpr (K == red::squared_norm) return tad::squared_norm(X, ax);
  else return tad::pick(X, labels);
}

const char* name_of(red k) {
  constexpr const char* names[] = {"sum", "mean", "max", "min", "norm", "logsumexp", "squared_norm", "pick"};
  return names[static_cast<int>(k)];
}

/// The loss in double along axis 1, and (if gX, gw are given) its analytic gradient.
template <class T>
double loss(red k, const T* X, const std::vector<double>& w, const std::vector<double>& c, shape s,
            std::vector<double>* gX = nullptr, std::vector<double>* gw = nullptr) {
  double L = 0;
  std::vector<double> z(s.cols), dz;
  if (gX) gX->assign(s.rows * s.cols, 0.0), gw->assign(s.cols, 0.0);
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t j = 0; j < s.cols; ++j) z[j] = double(X[r * s.cols + j] * T(w[j]));  // rounded as tad's
    const double m = reduce(k, z, dz, k == red::pick ? label_of(r, s.cols) : 0);
    L += c[r] * std::sin(m);
    if (gX) {
      for (std::size_t j = 0; j < s.cols; ++j) {
        const double dzj = c[r] * std::cos(m) * dz[j];
        (*gX)[r * s.cols + j] = dzj * w[j];
        (*gw)[j] += dzj * double(X[r * s.cols + j]);
      }
    }
  }
  return L;
}

/// The loss in double along axis 0 (c per column), and (if gX, gw are given) its analytic gradient.
template <class T>
double loss0(red k, const T* X, const std::vector<double>& w, const std::vector<double>& c, shape s,
             std::vector<double>* gX = nullptr, std::vector<double>* gw = nullptr) {
  double L = 0;
  std::vector<double> z(s.rows), dz;
  if (gX) gX->assign(s.rows * s.cols, 0.0), gw->assign(s.cols, 0.0);
  for (std::size_t j = 0; j < s.cols; ++j) {
    for (std::size_t r = 0; r < s.rows; ++r) z[r] = double(X[r * s.cols + j] * T(w[j]));  // rounded as tad's
    const double m = reduce(k, z, dz, 0);
    L += c[j] * std::sin(m);
    if (gX) {
      for (std::size_t r = 0; r < s.rows; ++r) {
        const double dzr = c[j] * std::cos(m) * dz[r];
        (*gX)[r * s.cols + j] = dzr * w[j];
        (*gw)[j] += dzr * double(X[r * s.cols + j]);
      }
    }
  }
  return L;
}

template <class T, red K, int Axis = 1>
void check_reduction() {
  for (const shape& s : shapes) {
    // Rows (axis 0: columns) of no elements: max and min raise, mean and logsumexp give NaN and
    // -inf (sin of them is NaN), pick has no column to pick: test/eval/axis.cpp, axis0.cpp.
    const bool empty_lines = Axis == 1 ? s.rows > 0 && s.cols == 0 : s.cols > 0 && s.rows == 0;
    if (K != red::sum && K != red::norm && K != red::squared_norm && empty_lines) continue;
    const unsigned seed = static_cast<unsigned>(s.rows * 31 + s.cols + 7 * static_cast<unsigned>(K));
    buffer<T> Xb(s.rows * s.cols, 1);  // unaligned rows
    tad_test::fill_uniform(Xb, -2, 2, seed);
    std::vector<T> wt(s.cols), ct(Axis == 1 ? s.rows : s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) wt[j] = T(0.5 + 0.4 * std::sin(double(j) + seed));
    for (std::size_t r = 0; r < ct.size(); ++r) ct[r] = T(std::cos(0.7 * double(r) + 1.0));
    const std::vector<double> w(wt.begin(), wt.end()), c(ct.begin(), ct.end());
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto wv = tad::var<"w">(wt);
    std::vector<int> labels(s.rows);
    for (std::size_t r = 0; r < s.rows && s.cols > 0; ++r) labels[r] = static_cast<int>(label_of(r, s.cols));
    const auto L = tad::sum(tad::constant(ct) * tad::sin(build<K, Axis>(X * wv, labels)));
    static_assert(tad::passes_v<decltype(L), decltype(X), decltype(wv)> == 1);
    const auto [value, gX, gw] = tad::grad(L, X, wv);
    std::vector<double> wX, ww;
    auto f = [&](const auto* x, std::vector<double>* out_x, std::vector<double>* out_w) {
      return Axis == 1 ? loss(K, x, w, c, s, out_x, out_w) : loss0(K, x, w, c, s, out_x, out_w);
    };
    const double want = f(Xb.data(), &wX, &ww);
    const double tol = tad_test::grad_tol<T>();
    const double lines = double(Axis == 1 ? s.rows : s.cols), along = double(Axis == 1 ? s.cols : s.rows);
    const double scale = lines * (K == red::squared_norm ? 4.0 * along : 1.0);
    const double w_scale = double(s.rows) * (K == red::squared_norm ? 4.0 * along : 1.0);  // dL/dw sums rows
    BOOST_TEST(std::abs(double(value) - want) <= tol * std::max(1.0, scale),
               name_of(K) << " axis " << Axis << " value at " << s.rows << " x " << s.cols << ": " << double(value)
                          << " vs " << want);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < wX.size(); ++i)
      if (!tad_test::close(double(gX.data()[i]), wX[i], tol * (K == red::squared_norm ? 4.0 : 1.0))) ++bad;
    for (std::size_t j = 0; j < ww.size(); ++j)
      if (std::abs(double(gw[j]) - ww[j]) > tol * std::max(1.0, w_scale)) ++bad;
    BOOST_TEST(bad == 0u, name_of(K) << " axis " << Axis << " gradient at " << s.rows << " x " << s.cols << ": " << bad
                                     << " elements differ");
    // The analytic gradient itself against central differences of the double loss, at a few
    // elements of X.
    std::vector<double> Xd(Xb.begin(), Xb.end());
    for (std::size_t i = 0; i < Xd.size(); i += std::max<std::size_t>(1, Xd.size() / 5)) {
      const double d = tad_test::central(
          [&](double t) {
            std::vector<double> Xp = Xd;
            Xp[i] = t;
            return f(Xp.data(), nullptr, nullptr);
          },
          Xd[i]);
      BOOST_TEST(std::abs(d - wX[i]) <= 1e-5 * std::max(1.0, std::abs(d)),
                 name_of(K) << " axis " << Axis << " analytic dL/dX[" << i << "] at " << s.rows << " x " << s.cols << ": " << wX[i]
                            << " vs central " << d);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(axis_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(sum_mean_squared_norm, T, reals) {
  check_reduction<T, red::sum>();
  check_reduction<T, red::mean>();
  check_reduction<T, red::squared_norm>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(max_and_min, T, reals) {
  check_reduction<T, red::max>();
  check_reduction<T, red::min>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(norm_and_logsumexp, T, reals) {
  check_reduction<T, red::norm>();
  check_reduction<T, red::logsumexp>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(pick, T, reals) { check_reduction<T, red::pick>(); }

BOOST_AUTO_TEST_CASE_TEMPLATE(axis0_sum_mean_squared_norm, T, reals) {
  check_reduction<T, red::sum, 0>();
  check_reduction<T, red::mean, 0>();
  check_reduction<T, red::squared_norm, 0>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(axis0_max_and_min, T, reals) {
  check_reduction<T, red::max, 0>();
  check_reduction<T, red::min, 0>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(axis0_norm_and_logsumexp, T, reals) {
  check_reduction<T, red::norm, 0>();
  check_reduction<T, red::logsumexp, 0>();
}

BOOST_AUTO_TEST_SUITE_END()
