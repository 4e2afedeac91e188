// A reduction along the rows met by a matrix as a column (issue 15; doc/shapes.md "Columns of
// reductions"): `as_column(red(e, axis<1>))`, `softmax(X, axis<1>)` and `log_softmax`. Each
// loss below is written a second time here as a plain loop in long double; tad's value is
// checked against it and tad's gradient (of a matrix X, a row vector w and a scalar s) against
// central differences of it, at matrix shapes around the SIMD widths, float and double, with
// unaligned rows; then strided rows, the closed-form softmax gradient, value/vjp of softmax as
// an array, pass counts, print, shape errors and allocations.
#include "support/alloc_counter.hpp"
#include "support/check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

using tad_test::buffer;
using tad_test::reals;

namespace {

using ld = long double;

struct shape {
  std::size_t rows, cols;
};
const std::vector<shape> shapes{{0, 5}, {5, 0}, {1, 1}, {3, 5}, {4, 8}, {7, 9}, {16, 17}, {33, 3}, {40, 300}};

/// The data every loss reads besides its variables: G (rows x cols), H (rows x 3), c (rows),
/// class indices, all derived from the shape.
template <class T>
struct fixture {
  shape s;
  std::vector<T> G, H, c;
  std::vector<int> labels;
  explicit fixture(shape sh) : s(sh), G(sh.rows * sh.cols), H(sh.rows * 3), c(sh.rows), labels(sh.rows) {
    for (std::size_t i = 0; i < G.size(); ++i) G[i] = T(0.2 + 0.8 * std::abs(std::sin(0.37 * double(i) + 0.1)));
    for (std::size_t i = 0; i < H.size(); ++i) H[i] = T(std::cos(0.9 * double(i)));
    for (std::size_t r = 0; r < sh.rows; ++r) {
      c[r] = T(0.3 * std::sin(double(r)));
      labels[r] = sh.cols == 0 ? 0 : static_cast<int>((r * 5 + 2) % sh.cols);
    }
  }
};

/// Row r of X * w (long double).
std::vector<ld> row_of(const std::vector<ld>& X, const std::vector<ld>& w, std::size_t r, std::size_t cols) {
  std::vector<ld> z(cols);
  for (std::size_t j = 0; j < cols; ++j) z[j] = X[r * cols + j] * w[j];
  return z;
}
ld lse(const std::vector<ld>& z) {
  ld m = -std::numeric_limits<ld>::infinity();
  for (ld v : z) m = std::max(m, v);
  if (!std::isfinite(m)) m = 0;
  ld t = 0;
  for (ld v : z) t += std::exp(v - m);
  return m + std::log(t);
}

enum class loss_kind { softmax, log_softmax_ce, other_nest, two_passes, means, invariant, pick, two_points };
const char* name_of(loss_kind k) {
  constexpr const char* names[] = {"softmax", "log_softmax_ce", "other_nest", "two_passes",
                                   "means",   "invariant",      "pick",       "two_points"};
  return names[static_cast<int>(k)];
}
/// Rows of no columns: max and min raise and pick has no column (test below), the others are
/// defined.
bool defined_without_columns(loss_kind k) {
  return k != loss_kind::two_passes && k != loss_kind::pick && k != loss_kind::two_points;
}

/// The losses in tad.
template <loss_kind K, class T>
auto build(auto X, auto w, auto s, const fixture<T>& f) {
  const std::size_t R = f.s.rows, C = f.s.cols;
  auto G = tad::constant(f.G.data(), R, C);
  if constexpr (K == loss_kind::softmax) {
    return tad::sum(G * tad::softmax(X * w, tad::axis<1>)) * s;
  } else if constexpr (K == loss_kind::log_softmax_ce) {
    // Cross-entropy against the (unnormalized) targets G, plus a penalty on w in its own nest.
    return -tad::sum(G * tad::log_softmax(X * s, tad::axis<1>)) + tad::squared_norm(w);
  } else if constexpr (K == loss_kind::other_nest) {
    // The point's argument (rows x cols) and its parent (rows x 3) are two nests.
    return tad::sum(tad::constant(f.H.data(), R, 3) * tad::as_column(tad::logsumexp(X * w, tad::axis<1>))) * s;
  } else if constexpr (K == loss_kind::two_passes) {
    // log of a sum needs the sum's value before its adjoint: a forward and a backward pass,
    // each sweeping the point.
    return tad::log(tad::sum(tad::exp(X * w - tad::as_column(tad::max(X * w, tad::axis<1>))))) + s;
  } else if constexpr (K == loss_kind::means) {
    return tad::mean(G * tad::square(X - tad::as_column(tad::mean(X * w, tad::axis<1>)))) * s;
  } else if constexpr (K == loss_kind::invariant) {
    // s * column point is a loop invariant per row; with a column leaf beside it.
    return tad::sum(tad::sin(X * w + tad::as_column(tad::constant(f.c))) * (s * tad::as_column(tad::norm(X, tad::axis<1>))));
  } else if constexpr (K == loss_kind::pick) {
    return tad::sum(G * tad::exp(X - tad::as_column(tad::pick(X * w, f.labels)) * s));
  } else {
    return tad::sum(G * (X - tad::as_column(tad::min(X * w, tad::axis<1>))) * tad::as_column(tad::sum(X * s, tad::axis<1>)));
  }
}

/// The same losses as plain loops.
template <class T>
ld reference(loss_kind k, const std::vector<ld>& X, const std::vector<ld>& w, ld s, const fixture<T>& f) {
  const std::size_t R = f.s.rows, C = f.s.cols;
  auto G = [&](std::size_t r, std::size_t j) { return ld(f.G[r * C + j]); };
  ld L = 0;
  switch (k) {
    case loss_kind::softmax:
      for (std::size_t r = 0; r < R; ++r) {
        const auto z = row_of(X, w, r, C);
        const ld m = lse(z);
        for (std::size_t j = 0; j < C; ++j) L += G(r, j) * std::exp(z[j] - m);
      }
      return L * s;
    case loss_kind::log_softmax_ce: {
      std::vector<ld> ones(C, 1);
      for (std::size_t r = 0; r < R; ++r) {
        auto z = row_of(X, ones, r, C);
        for (auto& v : z) v *= s;
        const ld m = lse(z);
        for (std::size_t j = 0; j < C; ++j) L -= G(r, j) * (z[j] - m);
      }
      for (ld v : w) L += v * v;
      return L;
    }
    case loss_kind::other_nest:
      for (std::size_t r = 0; r < R; ++r) {
        const ld m = lse(row_of(X, w, r, C));
        for (std::size_t j = 0; j < 3; ++j) L += ld(f.H[r * 3 + j]) * m;
      }
      return L * s;
    case loss_kind::two_passes:
      for (std::size_t r = 0; r < R; ++r) {
        const auto z = row_of(X, w, r, C);
        const ld m = *std::max_element(z.begin(), z.end());
        for (ld v : z) L += std::exp(v - m);
      }
      return std::log(L) + s;
    case loss_kind::means:
      for (std::size_t r = 0; r < R; ++r) {
        const auto z = row_of(X, w, r, C);
        ld m = 0;
        for (ld v : z) m += v;
        m /= ld(C);
        for (std::size_t j = 0; j < C; ++j) L += G(r, j) * (X[r * C + j] - m) * (X[r * C + j] - m);
      }
      return L / ld(R * C) * s;
    case loss_kind::invariant:
      for (std::size_t r = 0; r < R; ++r) {
        ld n = 0;
        for (std::size_t j = 0; j < C; ++j) n += X[r * C + j] * X[r * C + j];
        n = std::sqrt(n);
        for (std::size_t j = 0; j < C; ++j) L += std::sin(X[r * C + j] * w[j] + ld(f.c[r])) * s * n;
      }
      return L;
    case loss_kind::pick:
      for (std::size_t r = 0; r < R; ++r) {
        const std::size_t lab = static_cast<std::size_t>(f.labels[r]);
        const ld p = X[r * C + lab] * w[lab];
        for (std::size_t j = 0; j < C; ++j) L += G(r, j) * std::exp(X[r * C + j] - p * s);
      }
      return L;
    case loss_kind::two_points:
      for (std::size_t r = 0; r < R; ++r) {
        const auto z = row_of(X, w, r, C);
        const ld m = *std::min_element(z.begin(), z.end());
        ld t = 0;
        for (std::size_t j = 0; j < C; ++j) t += X[r * C + j] * s;
        for (std::size_t j = 0; j < C; ++j) L += G(r, j) * (X[r * C + j] - m) * t;
      }
      return L;
  }
  return L;
}

/// |a - b| <= tol, where NaN agrees only with NaN and an infinity only with itself.
bool agree(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= tol;
}

/// Central difference of the reference in one coordinate.
template <class F>
double central_ld(F&& f, ld x) {
  const ld h = 1e-7L * std::max(ld(1), std::abs(x));
  return double((f(x + h) - f(x - h)) / (2 * h));
}

template <class T, loss_kind K>
void check_loss() {
  for (const shape& s : shapes) {
    if (s.cols == 0 && s.rows > 0 && !defined_without_columns(K)) continue;
    const fixture<T> f(s);
    const unsigned seed = static_cast<unsigned>(s.rows * 29 + s.cols + 11 * static_cast<unsigned>(K));
    buffer<T> Xb(s.rows * s.cols, 1);  // unaligned rows
    tad_test::fill_uniform(Xb, -1.5, 1.5, seed);
    std::vector<T> wt(s.cols);
    for (std::size_t j = 0; j < s.cols; ++j) wt[j] = T(0.6 + 0.3 * std::sin(double(j) + seed));
    T st = T(0.8);
    auto X = tad::var<"X">(Xb.data(), s.rows, s.cols);
    auto w = tad::var<"w">(wt);
    auto sv = tad::var<"s">(st);
    const auto L = build<K>(X, w, sv, f);
    const auto [value, gX, gw, gs] = tad::grad(L, X, w, sv);
    std::vector<ld> Xl(Xb.begin(), Xb.end()), wl(wt.begin(), wt.end());
    const ld sl = st;
    const double want = double(reference(K, Xl, wl, sl, f));
    const double tol = tad_test::grad_tol<T>();
    // A stream, not string operator+: g++ 12 -O2 warns falsely (-Warray-bounds) on a chain of
    // operator+ on temporaries.
    std::ostringstream label;
    label << name_of(K) << " at " << s.rows << " x " << s.cols;
    const std::string at = label.str();
    // A sum's rounding grows with its number of terms.
    const double vtol = tol * std::max(1.0, std::abs(want)) * (std::is_same_v<T, float> ? 1.0 : 1e-3);
    BOOST_TEST(agree(double(value), want, std::max(vtol, 1e-12)), at << ": value " << double(value) << " vs " << want);
    // Central differences at every element (a sample of the large shape), each against the
    // largest of them: an error in a row's point adjoint is of that size.
    std::vector<std::pair<double, double>> pairs;  // (tad, central)
    const std::size_t stepX = std::max<std::size_t>(1, Xl.size() / 97);
    for (std::size_t i = 0; i < Xl.size(); i += stepX) {
      const double d = central_ld([&](ld t) { auto Xp = Xl; Xp[i] = t; return reference(K, Xp, wl, sl, f); }, Xl[i]);
      pairs.emplace_back(double(gX.data()[i]), d);
    }
    const bool empty = s.rows == 0 || s.cols == 0;
    for (std::size_t j = 0; j < wl.size(); j += std::max<std::size_t>(1, wl.size() / 31)) {
      // With no rows a non-finite loss (log(0), a mean of nothing) has no central difference;
      // w meets no element, so its gradient is exactly 0.
      const double d = central_ld([&](ld t) { auto wp = wl; wp[j] = t; return reference(K, Xl, wp, sl, f); }, wl[j]);
      pairs.emplace_back(double(gw[j]), empty && !std::isfinite(d) ? 0.0 : d);
    }
    const double ds = central_ld([&](ld t) { return reference(K, Xl, wl, t, f); }, sl);
    if (!empty || std::isfinite(ds)) pairs.emplace_back(double(gs), ds);
    double gmax = 0;
    for (const auto& p : pairs)
      if (std::isfinite(p.second)) gmax = std::max(gmax, std::abs(p.second));
    std::size_t bad = 0;
    for (const auto& p : pairs) {
      if (!agree(p.first, p.second, tol * std::max({std::abs(p.second), 1e-2 * gmax, 1e-300}))) {
        if (bad < 3) BOOST_TEST_MESSAGE(at << ": " << p.first << " vs central " << p.second);
        ++bad;
      }
    }
    BOOST_TEST(bad == 0u, at << ": " << bad << " of " << pairs.size() << " derivatives differ from central differences");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(column_points)

BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_and_log_softmax, T, reals) {
  check_loss<T, loss_kind::softmax>();
  check_loss<T, loss_kind::log_softmax_ce>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(point_in_another_nest_and_two_passes, T, reals) {
  check_loss<T, loss_kind::other_nest>();
  check_loss<T, loss_kind::two_passes>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(means_and_invariants, T, reals) {
  check_loss<T, loss_kind::means>();
  check_loss<T, loss_kind::invariant>();
}
BOOST_AUTO_TEST_CASE_TEMPLATE(pick_and_two_points_per_row, T, reals) {
  check_loss<T, loss_kind::pick>();
  check_loss<T, loss_kind::two_points>();
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
/// Row softmax of a rows x cols row-major array (ld apart), in double.
std::vector<double> softmax_rows(const double* X, std::size_t rows, std::size_t cols, std::size_t ldx) {
  std::vector<double> s(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (std::size_t j = 0; j < cols; ++j) m = std::max(m, X[r * ldx + j]);
    for (std::size_t j = 0; j < cols; ++j) z += std::exp(X[r * ldx + j] - m);
    for (std::size_t j = 0; j < cols; ++j) s[r * cols + j] = std::exp(X[r * ldx + j] - m) / z;
  }
  return s;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(column_points)

BOOST_AUTO_TEST_CASE(softmax_as_an_array_strided_and_its_closed_form_gradient) {
  // X a 7 x 9 view of rows 12 apart (padding NaN: a read of it would show), values up to 600
  // (exp overflows without the shift). value(softmax) is each row's softmax; the gradient of
  // sum(G * softmax(X)) is s * (G - sum(G * s, axis<1>)) per row; vjp with seed G is the same.
  const std::size_t R = 7, C = 9, LD = 12;
  std::vector<double> xs(R * LD, std::numeric_limits<double>::quiet_NaN()), gs(R * C);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < C; ++j) xs[r * LD + j] = 600.0 * std::sin(double(r * C + j)) * (r == 3 ? 1.0 : 0.01);
  for (std::size_t i = 0; i < gs.size(); ++i) gs[i] = std::cos(0.3 * double(i));
  auto X = tad::var<"X">(xs.data(), R, C, LD);
  auto G = tad::constant(gs.data(), R, C);
  const auto S = tad::softmax(X, tad::axis<1>);
  const std::vector<double> s = softmax_rows(xs.data(), R, C, LD);
  const tad::matrix<double> Sv = tad::value(S);
  BOOST_TEST(Sv.rows() == R);
  BOOST_TEST(Sv.cols() == C);
  for (std::size_t i = 0; i < R * C; ++i) BOOST_TEST(std::abs(Sv.data()[i] - s[i]) <= 1e-11);
  std::vector<double> want(R * C);
  double value = 0;
  for (std::size_t r = 0; r < R; ++r) {
    double gsum = 0;
    for (std::size_t j = 0; j < C; ++j) gsum += gs[r * C + j] * s[r * C + j];
    value += gsum;
    for (std::size_t j = 0; j < C; ++j) want[r * C + j] = s[r * C + j] * (gs[r * C + j] - gsum);
  }
  const auto L = tad::sum(G * S);
  static_assert(tad::passes_v<decltype(L), decltype(X)> == 1);  // the sweeps run in the row's loop
  const auto [v, g] = tad::grad(L, X);
  // Absolute tolerances: an element of 600 carries rounding errors of 600 ulps of 1.
  BOOST_TEST(std::abs(v - value) <= 1e-11);
  tad::matrix<double> seed(R, C);
  std::copy(gs.begin(), gs.end(), seed.data());
  const auto [vv, gv] = tad::vjp(S, seed, X);  // sum(seed * S) and its gradient
  BOOST_TEST(std::abs(vv - value) <= 1e-11);
  for (std::size_t i = 0; i < R * C; ++i) {
    BOOST_TEST(std::abs(g.data()[i] - want[i]) <= 1e-11);
    BOOST_TEST(std::abs(gv.data()[i] - want[i]) <= 1e-11);
  }
  // log_softmax: x - logsumexp(x) per row, finite where exp(x) underflows (row 3).
  const tad::matrix<double> LS = tad::value(tad::log_softmax(X, tad::axis<1>));
  for (std::size_t r = 0; r < R; ++r) {
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (std::size_t j = 0; j < C; ++j) m = std::max(m, xs[r * LD + j]);
    for (std::size_t j = 0; j < C; ++j) z += std::exp(xs[r * LD + j] - m);
    for (std::size_t j = 0; j < C; ++j) BOOST_TEST(std::abs(LS(r, j) - (xs[r * LD + j] - m - std::log(z))) <= 1e-11);
  }
  BOOST_TEST(LS(3, 1) < -100.0);  // exp of it is 0 in double
}

BOOST_AUTO_TEST_CASE(passes_print_errors_and_no_allocation) {
  const tad::matrix<double> Xm{{1, 2, 3}, {4, 5, 7}};
  std::vector<double> ws{0.5, -0.5, 1.0}, gX(6, 7.0), gw(3, 7.0);
  const std::vector<double> targets{0.2, 0.3, 0.5, 1, 0, 0};
  auto X = tad::var<"X">(Xm.data(), 2, 3);
  auto w = tad::var<"w">(ws);
  auto P = tad::constant(targets.data(), 2, 3);
  BOOST_TEST(tad::to_string(tad::softmax(X, tad::axis<1>)) == "exp(X - column(logsumexp(X, axis<1>)))");
  BOOST_TEST(tad::to_string(X - tad::as_column(tad::max(X * w, tad::axis<1>))) == "X - column(max(X * w, axis<1>))");
  const std::vector<int> labels{2, 0};
  BOOST_TEST(tad::to_string(X - tad::as_column(tad::pick(X, labels))) == "X - column(pick(X, labels))");
  // Cross-entropy with probability targets through log_softmax: one pass, no allocation.
  const auto ce = -tad::sum(P * tad::log_softmax(X * w, tad::axis<1>));
  static_assert(tad::passes_v<decltype(ce), decltype(X), decltype(w)> == 1);
  // log of a sum needs the sum before its adjoint: a forward and a backward pass.
  const auto lse_all = tad::log(tad::sum(tad::exp(X - tad::as_column(tad::max(X, tad::axis<1>)))));
  static_assert(tad::passes_v<decltype(lse_all), decltype(X)> == 2);
  tad_test::alloc_counter::start();
  const double v = tad::grad_into(ce, tad::wrt(X, gX), tad::wrt(w, gw));
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  // Closed form: z = X * w per row, ce = sum_r (sum_j P_rj) lse(z_r) - sum_j P_rj z_rj;
  // dz_rj = (sum_j P_rj) softmax(z_r)_j - P_rj.
  double want = 0;
  std::vector<double> wantX(6), wantw(3, 0.0);
  for (std::size_t r = 0; r < 2; ++r) {
    double z[3], m = -1e300, t = 0, p = 0;
    for (std::size_t j = 0; j < 3; ++j) z[j] = Xm(r, j) * ws[j], m = std::max(m, z[j]), p += targets[r * 3 + j];
    for (std::size_t j = 0; j < 3; ++j) t += std::exp(z[j] - m);
    const double l = m + std::log(t);
    for (std::size_t j = 0; j < 3; ++j) {
      want -= targets[r * 3 + j] * (z[j] - l);
      const double dz = p * std::exp(z[j] - l) - targets[r * 3 + j];
      wantX[r * 3 + j] = dz * ws[j];
      wantw[j] += dz * Xm(r, j);
    }
  }
  BOOST_TEST(v == want, boost::test_tools::tolerance(1e-14));
  for (std::size_t i = 0; i < 6; ++i) BOOST_TEST(gX[i] == wantX[i], boost::test_tools::tolerance(1e-13));
  for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(gw[j] == wantw[j], boost::test_tools::tolerance(1e-13));
  // A column of a reduction of a 3-row matrix met by a 2-row one: a shape error naming both,
  // before anything is written.
  const tad::matrix<double> Ym(3, 3, 1.0);
  auto Y = tad::var<"Y">(Ym.data(), 3, 3);
  std::vector<double> gY(9, 7.0);
  std::fill(gX.begin(), gX.end(), 7.0);
  try {
    (void)tad::grad_into(tad::sum(X * tad::as_column(tad::sum(Y, tad::axis<1>))), tad::wrt(X, gX), tad::wrt(Y, gY));
    BOOST_TEST(false, "no shape_error");
  } catch (const tad::shape_error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("'X'") != std::string::npos, what);
    BOOST_TEST(what.find("'Y'") != std::string::npos, what);
    BOOST_TEST(what.find("2 x 3") != std::string::npos, what);
    BOOST_TEST(what.find("3 x 3") != std::string::npos, what);
  }
  for (double g : gX) BOOST_TEST(g == 7.0);
  for (double g : gY) BOOST_TEST(g == 7.0);
  // A row of -inf has no softmax (-inf - -inf): NaN, as in PyTorch; the other row is finite.
  const double inf = std::numeric_limits<double>::infinity();
  const tad::matrix<double> Zm{{-inf, -inf}, {0.0, std::log(3.0)}};
  const tad::matrix<double> Sz = tad::value(tad::softmax(tad::constant(Zm), tad::axis<1>));
  BOOST_TEST(std::isnan(Sz(0, 0)));
  BOOST_TEST(Sz(1, 0) == 0.25, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(Sz(1, 1) == 0.75, boost::test_tools::tolerance(1e-15));
  // semantics.md's rows: [-inf, 0] is [0, 1] with gradient 0 (s_j (c_j - sum(c s)) is 0 at
  // both); a +inf is NaN there and 0 at the finite element.
  std::vector<double> lo{-inf, 0.0}, hi{0.0, inf};
  const std::vector<double> c{0.3, 0.7};
  auto xlo = tad::var<"x">(lo);
  const std::vector<double> slo = tad::value(tad::softmax(xlo));
  BOOST_TEST(slo[0] == 0.0);
  BOOST_TEST(slo[1] == 1.0);
  const auto [vlo, glo] = tad::grad(tad::sum(tad::constant(c) * tad::softmax(xlo)), xlo);
  BOOST_TEST(vlo == 0.7);
  BOOST_TEST(glo[0] == 0.0);
  BOOST_TEST(glo[1] == 0.0);
  const std::vector<double> shi = tad::value(tad::softmax(tad::var<"x">(hi)));
  BOOST_TEST(shi[0] == 0.0);
  BOOST_TEST(std::isnan(shi[1]));
}

BOOST_AUTO_TEST_CASE(modifiers_on_a_column_point) {
  // A column point is one value per row, so a modifier on it acts per row: clip_gradient clips
  // each row's summed adjoint; stop_gradient removes its path (the stable-softmax shift).
  const std::size_t R = 5, C = 7;
  std::vector<double> xs(R * C), gs(R * C);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(1.7 * double(i) + 0.3), gs[i] = std::cos(0.9 * double(i));
  auto G = tad::constant(gs.data(), R, C);
  auto X = tad::var<"X">(xs.data(), R, C);
  const auto shifted = tad::sum(G * tad::exp(X - tad::stop_gradient(tad::as_column(tad::max(X, tad::axis<1>)))));
  const auto clipped = tad::sum(G * X * tad::clip_gradient(tad::as_column(tad::sum(X, tad::axis<1>)), -0.5, 0.5));
  const auto product = tad::custom_gradient([](auto a, auto b) { return a * b; },
                                            [](auto dy, auto a, auto b, auto) { return tad::adjoints{dy * b, 2.0 * dy * a}; });
  const auto ruled = tad::sum(G * product(X, tad::as_column(tad::sum(X, tad::axis<1>))));
  const auto [v1, g1] = tad::grad(shifted, X);
  const auto [v2, g2] = tad::grad(clipped, X);
  const auto [v3, g3] = tad::grad(ruled, X);
  std::size_t clipped_rows = 0;
  for (std::size_t r = 0; r < R; ++r) {
    double m = -1e300, c = 0, a = 0;
    for (std::size_t j = 0; j < C; ++j) m = std::max(m, xs[r * C + j]), c += xs[r * C + j], a += gs[r * C + j] * xs[r * C + j];
    // The row's adjoint of the column sum(X, axis<1>) is a = sum_j G X; clipped to [-0.5, 0.5]
    // before it reaches every element of the row. The custom rule doubles it instead.
    const double ac = std::clamp(a, -0.5, 0.5);
    clipped_rows += ac != a ? 1 : 0;
    for (std::size_t j = 0; j < C; ++j) {
      const double gij = gs[r * C + j];
      BOOST_TEST(g1(r, j) == gij * std::exp(xs[r * C + j] - m), boost::test_tools::tolerance(1e-14));
      BOOST_TEST(g2(r, j) == gij * c + ac, boost::test_tools::tolerance(1e-13));
      BOOST_TEST(g3(r, j) == gij * c + 2.0 * a, boost::test_tools::tolerance(1e-13));
    }
  }
  BOOST_TEST(clipped_rows > 0u);  // the data reach the clip
  BOOST_TEST(std::isfinite(v1 + v2 + v3));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(softmax_of_a_vector, T, reals) {
  // softmax(x) and log_softmax(x) of a vector: one distribution over its elements. The loss
  // sum(c * softmax(x)) + sum(h * log_softmax(x)) against a long-double loop and its central
  // differences at the lengths around the SIMD widths, unaligned.
  for (std::size_t n : tad_test::lengths) {
    if (n == 0) continue;  // logsumexp of nothing is -inf: no distribution (test/eval for logsumexp)
    buffer<T> xb(n, 1);
    tad_test::fill_uniform(xb, -3, 3, static_cast<unsigned>(n) + 5);
    std::vector<T> ct(n), ht(n);
    for (std::size_t i = 0; i < n; ++i) ct[i] = T(std::cos(0.4 * double(i))), ht[i] = T(0.5 + 0.4 * std::sin(double(i)));
    auto x = tad::var<"x">(std::span<T>(xb.data(), n));
    const auto L = tad::sum(tad::constant(ct) * tad::softmax(x)) + tad::sum(tad::constant(ht) * tad::log_softmax(x));
    const auto [v, g] = tad::grad(L, x);
    auto ref = [&](const std::vector<ld>& xl) {
      const ld m = lse(xl);
      ld total = 0;
      for (std::size_t i = 0; i < n; ++i) total += ld(ct[i]) * std::exp(xl[i] - m) + ld(ht[i]) * (xl[i] - m);
      return total;
    };
    std::vector<ld> xl(xb.begin(), xb.end());
    const double tol = tad_test::grad_tol<T>();
    BOOST_TEST(agree(double(v), double(ref(xl)), tol * std::max(1.0, double(n) / 10)), "value at n = " << n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 50)) {
      const double d = central_ld([&](ld t) { auto xp = xl; xp[i] = t; return ref(xp); }, xl[i]);
      if (!agree(double(g[i]), d, tol * std::max(1.0, std::abs(d)))) ++bad;
    }
    BOOST_TEST(bad == 0u, "softmax of a vector at n = " << n << ": " << bad << " derivatives differ");
  }
}

BOOST_AUTO_TEST_SUITE_END()
