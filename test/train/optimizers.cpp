// Optimizers (tad/train/optimizers.hpp): the first steps of SGD, momentum (heavy-ball and
// Nesterov), Adam and AdamW against their update formulas evaluated here in long double (not
// the library's code), for float and double, array parameters at every length around the SIMD
// width (unaligned) plus a scalar; schedules; bad learning rates and mismatched sets.
#include <train/common.hpp>

#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace {

using tad_test::lengths;
using tad_test::reals;

using train_test::tol;

/// A parameter set of one array (length n) and one scalar, their data, and gradients.
template <class T>
struct fixture {
  tad_test::buffer<T> p, g;
  T s = T(0.75), gs = T(-0.5);
  explicit fixture(std::size_t n) : p(n), g(n) {
    tad_test::fill_uniform(p, -1, 1, 3);
    tad_test::fill_uniform(g, -2, 2, 5);
  }
  auto vars() { return std::pair{tad::var<"p">(p.cspan()), tad::var<"s">(s)}; }
  template <class P>
  void load(tad::gradient_set<T>& grads, const P&, double k) {  // gradient of step k: g * (1 + k / 4)
    for (std::size_t i = 0; i < g.size(); ++i) grads[0][i] = T(double(g[i]) * (1 + k / 4));
    grads[1][0] = T(double(gs) * (1 + k / 4));
  }
  long double grad_at(std::size_t i, int k) const {
    const long double base = i < g.size() ? (long double)g[i] : (long double)gs;
    return T(double(base) * (1 + k / 4.0));
  }
  long double param(std::size_t i) const { return i < p.size() ? (long double)p[i] : (long double)s; }
};

template <class T>
void expect_params(const fixture<T>& f, const std::vector<long double>& want, const char* what, std::size_t n) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i <= n; ++i) {
    const double got = i < n ? double(f.p[i]) : double(f.s);
    if (!tad_test::close(got, double(want[i]), tol<T>())) ++bad;
  }
  BOOST_TEST(bad == 0u, what << " (n = " << n << "): " << bad << " parameters differ from the formula");
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(sgd_and_momentum_follow_their_formulas, T, reals) {
  for (std::size_t n : lengths) {
    for (int variant = 0; variant < 3; ++variant) {  // sgd, heavy-ball, Nesterov
      fixture<T> f(n);
      auto [p, s] = f.vars();
      tad::parameter_set params(p, s);
      tad::gradient_set grads(params);
      const double lr = 0.1, mu = 0.9;
      std::vector<long double> w(n + 1), b(n + 1, 0);
      for (std::size_t i = 0; i <= n; ++i) w[i] = f.param(i);
      tad::sgd sg(params, lr);
      tad::momentum hb(params, lr, mu, variant == 2);
      for (int k = 0; k < 3; ++k) {
        f.load(grads, params, k);
        if (variant == 0) sg.apply_gradients(params, grads); else hb.apply_gradients(params, grads);
        for (std::size_t i = 0; i <= n; ++i) {
          const long double g = f.grad_at(i, k);
          if (variant == 0) {
            w[i] -= (long double)T(lr) * g;
          } else {
            b[i] = (long double)T(mu) * b[i] + g;
            w[i] -= (long double)T(lr) * (variant == 2 ? g + (long double)T(mu) * b[i] : b[i]);
          }
        }
      }
      expect_params(f, w, variant == 0 ? "sgd" : variant == 1 ? "heavy-ball" : "nesterov", n);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(adam_and_adamw_follow_their_formulas, T, reals) {
  for (std::size_t n : lengths) {
    for (double wd : {0.0, 0.05}) {
      fixture<T> f(n);
      auto [p, s] = f.vars();
      tad::parameter_set params(p, s);
      tad::gradient_set grads(params);
      const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
      auto opt = tad::adamw(params, lr, wd);
      std::vector<long double> w(n + 1), m(n + 1, 0), v(n + 1, 0);
      for (std::size_t i = 0; i <= n; ++i) w[i] = f.param(i);
      for (int k = 0; k < 3; ++k) {
        f.load(grads, params, k);
        opt.apply_gradients(params, grads);
        const long double t = k + 1;
        const long double c1 = 1 / (1 - std::pow((long double)b1, t)), c2 = 1 / (1 - std::pow((long double)b2, t));
        for (std::size_t i = 0; i <= n; ++i) {
          const long double g = f.grad_at(i, k);
          m[i] = b1 * m[i] + (1 - b1) * g;
          v[i] = b2 * v[i] + (1 - b2) * g * g;
          w[i] = w[i] * (1 - lr * wd) - lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
        }
      }
      BOOST_TEST(opt.steps() == 3u);
      expect_params(f, w, wd == 0 ? "adam" : "adamw", n);
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_bias_correction_in_double_for_float) {
  // At step t = 1 the corrections 1/(1 - 0.999) = 1000 must be exact to double precision: a
  // float computation of 1 - 0.999f gives 1000.0338. With one element g = 1 the first update
  // is lr * 1 / (1 + eps') ~ lr exactly when the corrections are right.
  float pv = 1.0f;
  auto p = tad::var<"p">(pv);
  tad::parameter_set params(p);
  tad::gradient_set grads(params);
  grads[0][0] = 1.0f;
  tad::adam opt(params, 0.5, {.beta1 = 0.9, .beta2 = 0.999, .eps = 0.0});
  opt.apply_gradients(params, grads);
  // m_hat = 0.1f * c1, v_hat = 0.001f * c2 with c in double then rounded to float.
  const float c1 = float(1.0 / (1.0 - 0.9)), c2 = float(1.0 / (1.0 - 0.999));
  const float m = 0.1f, v = float(1.0 - 0.999);
  const float want = 1.0f - 0.5f * (m * c1) / std::sqrt(v * c2);
  BOOST_TEST(pv == want);
  BOOST_TEST(std::abs(pv - 0.5f) < 1e-6f);
}

BOOST_AUTO_TEST_CASE(schedules_follow_their_formulas) {
  BOOST_TEST(tad::constant_schedule{0.3}(17) == 0.3);
  const tad::exponential_decay ed{0.1, 0.5, 10};
  BOOST_TEST(tad_test::close(ed(0), 0.1, 1e-15));
  BOOST_TEST(tad_test::close(ed(10), 0.05, 1e-15));
  BOOST_TEST(tad_test::close(ed(15), 0.1 * std::pow(0.5, 1.5), 1e-15));
  BOOST_TEST(tad_test::close((tad::exponential_decay{0.1, 0.5, 10, true})(15), 0.05, 1e-15));
  const tad::cosine_decay cd{1.0, 100, 0.1};
  BOOST_TEST(tad_test::close(cd(0), 1.0, 1e-15));
  BOOST_TEST(tad_test::close(cd(50), 0.9 * 0.5 + 0.1, 1e-15));
  BOOST_TEST(tad_test::close(cd(100), 0.1, 1e-15));
  BOOST_TEST(tad_test::close(cd(1000), 0.1, 1e-15));
  const tad::reversal_schedule rs{200};
  BOOST_TEST(rs(0) == 0.0);
  BOOST_TEST(tad_test::close(rs(50), 2 / (1 + std::exp(-10 * 0.25)) - 1, 1e-15));
  BOOST_TEST(tad_test::close(rs(400), 2 / (1 + std::exp(-10.0)) - 1, 1e-15));
  BOOST_CHECK_THROW((tad::exponential_decay{0.1, 0.5, 0})(1), std::invalid_argument);
  BOOST_CHECK_THROW((tad::cosine_decay{0.1, 0})(1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(learning_rate_schedules_drive_the_optimizer) {
  double pv = 1.0;
  auto p = tad::var<"p">(pv);
  tad::parameter_set params(p);
  tad::gradient_set grads(params);
  grads[0][0] = 1.0;
  tad::sgd opt(params, tad::exponential_decay{0.1, 0.5, 1});
  opt.apply_gradients(params, grads);  // lr 0.1
  opt.apply_gradients(params, grads);  // lr 0.05
  BOOST_TEST(tad_test::close(pv, 1.0 - 0.15, 1e-15));
}

BOOST_AUTO_TEST_CASE(bad_rates_and_mismatched_sets_throw_and_change_nothing) {
  std::vector<double> a{1, 2, 3}, b{4, 5};
  double s = 1;
  auto x = tad::var<"x">(a);
  auto y = tad::var<"y">(b);
  auto z = tad::var<"s">(s);
  tad::parameter_set pxy(x, y);
  tad::parameter_set px(x);
  tad::parameter_set pxz(x, z);
  BOOST_CHECK_THROW(tad::sgd(pxy, -0.1), std::invalid_argument);
  BOOST_CHECK_THROW(tad::adam(pxy, std::nan("")), std::invalid_argument);
  BOOST_CHECK_THROW(tad::momentum(pxy, 0.1, 1.0), std::invalid_argument);
  BOOST_CHECK_THROW(tad::adam(pxy, 0.1, {.beta1 = 1.0}), std::invalid_argument);
  BOOST_CHECK_THROW(tad::adamw(pxy, 0.1, -0.01), std::invalid_argument);
  BOOST_CHECK_THROW(tad::parameter_set(tad::var<"c">(2.0)), std::invalid_argument);  // a scalar copy
  // A schedule that goes negative: thrown by the step that would use it, nothing changed.
  tad::gradient_set gx(px);
  gx[0][0] = gx[0][1] = gx[0][2] = 1;
  tad::sgd neg(px, [](std::size_t step) { return step == 0 ? 0.1 : -0.1; });
  neg.apply_gradients(px, gx);
  const std::vector<double> after_one = a;
  BOOST_CHECK_THROW(neg.apply_gradients(px, gx), std::invalid_argument);
  BOOST_TEST((a == after_one));
  // Gradient sets of other parameter sets: other count, other lengths.
  tad::gradient_set gxy(pxy), gxz(pxz);
  tad::adam opt(px, 0.1);
  BOOST_CHECK_THROW(opt.apply_gradients(px, gxy), std::invalid_argument);
  BOOST_CHECK_THROW(opt.apply_gradients(px, gxz), std::invalid_argument);
  BOOST_TEST((a == after_one));
  BOOST_TEST(opt.steps() == 0u);
  BOOST_TEST(opt.first_moment(0)[0] == 0.0);
  tad::momentum mo(pxy, 0.1, 0.5);
  tad::gradient_set gyx(tad::parameter_set(y, x));
  BOOST_CHECK_THROW(mo.apply_gradients(pxy, gyx), std::invalid_argument);  // lengths 2, 3 vs 3, 2
  BOOST_TEST((a == after_one));
  BOOST_CHECK_THROW(tad::gradient_set(pxy, std::span<double>(a.data(), 3)), std::invalid_argument);  // 3 < 5
}
