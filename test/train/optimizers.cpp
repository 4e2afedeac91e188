// Optimizers (tad/train/optimizers.hpp): the first steps of SGD, momentum (heavy-ball and
// Nesterov), Adam and AdamW against their update formulas evaluated here in long double (not
// the library's code), for float and double, array parameters at every length around the SIMD
// width (unaligned) plus a scalar; schedules; bad learning rates and mismatched sets. A run
// checkpointed (state, step count and parameters written to a file), restored into a fresh
// optimizer and resumed equals the uninterrupted run bit for bit; restore checks sizes.
#include <train/common.hpp>

#include <tad/tad.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
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

// ---- checkpoints -------------------------------------------------------------------------------

namespace {

/// Raw bytes of a span, appended to / read from a binary stream.
template <class T>
void write_raw(std::ofstream& f, std::span<const T> s) {
  f.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size_bytes()));
}
template <class T>
void read_raw(std::ifstream& f, std::span<T> s) {
  f.read(reinterpret_cast<char*>(s.data()), static_cast<std::streamsize>(s.size_bytes()));
}

/// A loss whose gradient changes with the parameters (an array of 13 and a scalar) and with the
/// minibatch t, drawn from the step number: sum(log(1 + (a - t)^2)) s + (s - 2)^2.
template <class T>
struct resumable {
  tad_test::buffer<T> a{13}, t{13};
  T s = T(0.5);
  void start() {
    tad_test::fill_uniform(a, -1, 1, 3);
    s = T(0.5);
  }
  void batch(std::size_t step) { tad_test::fill_uniform(t, -1, 1, unsigned(100 + step)); }
};

/// Runs N + M steps of the optimizer `make(params)` builds, and N steps, a checkpoint to a file,
/// every parameter and the optimizer thrown away, a fresh optimizer restored from the file and
/// M more steps: the parameters, the state and the step count must be equal bit for bit. With
/// `state_matters`, a fresh optimizer given only the parameters must end elsewhere (the test
/// can fail).
template <class T, class Make>
void expect_bitwise_resume(Make make, const char* what, bool state_matters) {
  constexpr std::size_t N = 7, M = 6;
  resumable<T> r;
  auto a = tad::var<"a">(r.a.cspan());
  auto s = tad::var<"s">(r.s);
  auto loss = tad::sum(tad::log(T(1) + tad::square(a - tad::constant(r.t.cspan())))) * s + tad::square(s - T(2));
  tad::parameter_set params(a, s);
  tad::gradient_set grads(params);
  tad::clip_by_global_norm clip(2.0);
  const auto bits = [&] {  // the parameters' bytes
    std::vector<unsigned char> b((r.a.size() + 1) * sizeof(T));
    std::memcpy(b.data(), r.a.data(), r.a.size() * sizeof(T));
    std::memcpy(b.data() + r.a.size() * sizeof(T), &r.s, sizeof(T));
    return b;
  };
  r.start();
  auto straight = make(params);
  for (std::size_t k = 0; k < N + M; ++k) {
    r.batch(k);
    tad::train_step(loss, params, grads, clip, straight);
  }
  const std::vector<unsigned char> want = bits();

  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("tad_test_checkpoint_" + std::string(what) + "_" + std::to_string(sizeof(T)) + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  r.start();
  {
    auto first = make(params);
    for (std::size_t k = 0; k < N; ++k) {
      r.batch(k);
      tad::train_step(loss, params, grads, clip, first);
    }
    std::ofstream f(file, std::ios::binary);
    const std::uint64_t steps = first.steps(), size = first.state().size();
    f.write(reinterpret_cast<const char*>(&steps), sizeof steps);
    f.write(reinterpret_cast<const char*>(&size), sizeof size);
    write_raw<T>(f, first.state());
    write_raw<T>(f, r.a.cspan());
    write_raw<T>(f, std::span<const T>(&r.s, 1));
    BOOST_TEST_REQUIRE(f.good());
  }
  std::fill(r.a.begin(), r.a.end(), std::numeric_limits<T>::quiet_NaN());
  r.s = std::numeric_limits<T>::quiet_NaN();
  auto resumed = make(params);
  {
    std::ifstream f(file, std::ios::binary);
    std::uint64_t steps = 0, size = 0;
    f.read(reinterpret_cast<char*>(&steps), sizeof steps);
    f.read(reinterpret_cast<char*>(&size), sizeof size);
    std::vector<T> state(static_cast<std::size_t>(size));
    read_raw<T>(f, std::span<T>(state));
    read_raw<T>(f, r.a.span());
    read_raw<T>(f, std::span<T>(&r.s, 1));
    BOOST_TEST_REQUIRE(f.good());
    resumed.restore(state, static_cast<std::size_t>(steps));
  }
  std::filesystem::remove(file);
  const std::vector<unsigned char> at_checkpoint = bits();
  for (std::size_t k = N; k < N + M; ++k) {
    r.batch(k);
    tad::train_step(loss, params, grads, clip, resumed);
  }
  BOOST_TEST(resumed.steps() == N + M, what);
  BOOST_TEST((bits() == want), what << ": the resumed run's parameters differ from the uninterrupted run's");
  BOOST_TEST(resumed.state().size() == straight.state().size());
  // Bytes compared as ranges: SGD's state is empty (a null data() that memcmp must not get).
  BOOST_TEST(std::ranges::equal(std::as_bytes(resumed.state()), std::as_bytes(straight.state())),
             what << ": the resumed run's optimizer state differs");
  if (state_matters) {  // the same from the checkpoint's parameters alone: not equal
    std::memcpy(r.a.data(), at_checkpoint.data(), r.a.size() * sizeof(T));
    std::memcpy(&r.s, at_checkpoint.data() + r.a.size() * sizeof(T), sizeof(T));
    auto forgetful = make(params);
    for (std::size_t k = N; k < N + M; ++k) {
      r.batch(k);
      tad::train_step(loss, params, grads, clip, forgetful);
    }
    BOOST_TEST((bits() != want), what << ": the state made no difference, so the test proves nothing");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(a_resumed_run_equals_the_uninterrupted_one_bit_for_bit, T, reals) {
  expect_bitwise_resume<T>([](const auto& p) { return tad::adam(p, 0.05); }, "adam", true);
  expect_bitwise_resume<T>(
      [](const auto& p) {
        return tad::adamw(p, tad::cosine_decay{.init = 0.05, .total_steps = 13, .alpha = 0.1}, 0.1,
                          {.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6});
      },
      "adamw_cosine", true);
  expect_bitwise_resume<T>([](const auto& p) { return tad::momentum(p, 0.05, 0.9); }, "momentum", true);
  expect_bitwise_resume<T>([](const auto& p) { return tad::momentum(p, 0.05, 0.8, true); }, "nesterov", true);
  expect_bitwise_resume<T>([](const auto& p) { return tad::sgd(p, 0.05); }, "sgd", false);
  // SGD's only state is the step count, which positions its schedule.
  expect_bitwise_resume<T>([](const auto& p) { return tad::sgd(p, tad::exponential_decay{0.1, 0.5, 2}); },
                           "sgd_decay", true);
}

BOOST_AUTO_TEST_CASE(restore_checks_the_state_size_and_changes_nothing_on_a_mismatch) {
  std::vector<double> xv{1, 2, 3}, yv{4, 5};
  auto x = tad::var<"x">(xv);
  auto y = tad::var<"y">(yv);
  tad::parameter_set pxy(x, y);
  tad::parameter_set px(x);
  tad::gradient_set g(pxy);
  std::fill(g.all().begin(), g.all().end(), 0.5);
  tad::adam opt(pxy, 0.1);
  tad::momentum mom(pxy, 0.1, 0.9);
  tad::sgd sg(pxy, 0.1);
  opt.apply_gradients(pxy, g);
  mom.apply_gradients(pxy, g);
  BOOST_TEST(opt.state().size() == 10u);  // m, then v
  BOOST_TEST(mom.state().size() == 5u);
  BOOST_TEST(sg.state().empty());
  BOOST_TEST(opt.state()[0] == opt.first_moment(0)[0]);
  BOOST_TEST(opt.state()[5] == opt.second_moment(0)[0]);
  BOOST_TEST(opt.state()[3] == opt.first_moment(1)[0]);
  const std::vector<double> adam_state(opt.state().begin(), opt.state().end());
  const std::vector<double> mom_state(mom.state().begin(), mom.state().end());
  tad_test::expect_message<std::invalid_argument>(
      [&] { opt.restore(mom_state, 7); },
      "tad::adam::restore(state, steps): the saved state holds 5 elements, this optimizer's 10 "
      "(m and v: two elements per parameter element)");
  tad::adam other(px, 0.1);
  BOOST_CHECK_THROW(other.restore(adam_state, 7), std::invalid_argument);  // 10 for 3 parameter elements
  BOOST_CHECK_THROW(mom.restore(adam_state, 7), std::invalid_argument);
  BOOST_CHECK_THROW(sg.restore(mom_state, 7), std::invalid_argument);
  BOOST_TEST(opt.steps() == 1u);
  BOOST_TEST(mom.steps() == 1u);
  BOOST_TEST(sg.steps() == 0u);
  BOOST_TEST((std::vector<double>(opt.state().begin(), opt.state().end()) == adam_state));
  BOOST_TEST((std::vector<double>(mom.state().begin(), mom.state().end()) == mom_state));
  // A matching state: copied, with the step count.
  tad::adam fresh(pxy, 0.1);
  fresh.restore(adam_state, 1);
  BOOST_TEST(fresh.steps() == 1u);
  BOOST_TEST(fresh.second_moment(1)[1] == opt.second_moment(1)[1]);
  sg.restore({}, 4);
  BOOST_TEST(sg.steps() == 4u);
}
