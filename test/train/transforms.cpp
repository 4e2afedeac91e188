// Gradient transforms and the training step (tad/train/transforms.hpp, parameters.hpp):
// each transform against its formula computed here, at lengths around the SIMD width, with
// zero-norm, infinite and NaN gradients and empty arrays; skip_if_not_finite leaves parameters
// and optimizer state bit-identical; compute_gradients and train_step; user-defined
// transforms; bad arguments throw; no allocation in a training step after construction.
// Gradient accumulation (tad/train/accumulate.hpp): k minibatches sum (and average) to the
// full batch's gradient from its formula; pending scales; errors; no allocation.
#include <support/alloc_counter.hpp>
#include <train/common.hpp>

#include <tad/tad.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace {

using tad_test::lengths;
using tad_test::reals;

using train_test::tol;

/// Two array parameters (lengths n and n + 3) and a scalar, with gradients loaded from g.
template <class T>
struct setup {
  tad_test::buffer<T> a, b;
  T s = T(0.5);
  explicit setup(std::size_t n) : a(n), b(n + 3) {
    tad_test::fill_uniform(a, -1, 1, 2);
    tad_test::fill_uniform(b, -1, 1, 4);
  }
};

template <class T>
std::vector<double> flat(tad::gradient_set<T>& g) {
  std::vector<double> r;
  for (std::size_t k = 0; k < g.size(); ++k)
    for (T v : g[k]) r.push_back(double(v));
  return r;
}

template <class T>
void fill(tad::gradient_set<T>& g, unsigned seed, double lo, double hi) {
  std::vector<T> v(g.all().size());
  tad_test::fill_uniform(v, lo, hi, seed);
  std::copy(v.begin(), v.end(), g.all().begin());
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!tad_test::close(got[i], want[i], tol)) ++bad;
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << got.size() << " entries differ");
}

struct double_it {  // a user-defined transform
  template <class T, class P>
  tad::step_action update(tad::gradient_set<T>& g, const P&) const {
    for (T& v : g.all()) v *= 2;
    return tad::step_action::apply;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(transforms_follow_their_formulas, T, reals) {
  for (std::size_t n : lengths) {
    setup<T> d(n);
    auto a = tad::var<"a">(d.a.cspan());
    auto b = tad::var<"b">(d.b.cspan());
    auto s = tad::var<"s">(d.s);
    tad::parameter_set params(a, b, s);
    tad::gradient_set grads(params);
    fill(grads, 9, -3, 3);
    const std::vector<double> g0 = flat(grads);
    std::vector<double> p0;
    for (std::size_t k = 0; k < 3; ++k) for (T v : params.data(k)) p0.push_back(double(v));

    auto run = [&](auto&& t) {
      std::copy(g0.begin(), g0.end(), grads.all().begin());
      BOOST_TEST((t.update(grads, params) == tad::step_action::apply));
      return flat(grads);
    };
    auto map = [&](auto f) {
      std::vector<double> r;
      for (double v : g0) r.push_back(f(v));
      return r;
    };
    expect_same(run(tad::clip_by_value(-1, 0.5)), map([](double v) { return std::clamp(v, -1.0, 0.5); }), tol<T>(), "clip_by_value");
    expect_same(run(tad::scale(-0.25)), map([](double v) { return -0.25 * v; }), tol<T>(), "scale");
    std::vector<double> decayed;
    for (std::size_t i = 0; i < g0.size(); ++i) decayed.push_back(g0[i] + 0.1 * p0[i]);
    expect_same(run(tad::add_decayed_weights(0.1)), decayed, tol<T>(), "add_decayed_weights");
    expect_same(run(double_it{}), map([](double v) { return 2 * v; }), 0, "user transform");
    // clip_by_norm(1): each parameter's gradient scaled to norm 1 if above.
    {
      std::vector<double> want;
      std::size_t off = 0;
      for (std::size_t k = 0; k < 3; ++k) {
        const std::size_t len = params.length(k);
        double ss = 0;
        for (std::size_t i = 0; i < len; ++i) ss += g0[off + i] * g0[off + i];
        const double nrm = std::sqrt(ss), sc = nrm > 1 ? 1 / nrm : 1;
        for (std::size_t i = 0; i < len; ++i) want.push_back(g0[off + i] * sc);
        off += len;
      }
      expect_same(run(tad::clip_by_norm(1)), want, 10 * tol<T>(), "clip_by_norm");
    }
    // clip_by_global_norm(c) for c below and above the norm.
    double ss = 0;
    for (double v : g0) ss += v * v;
    const double G = std::sqrt(ss);
    tad::clip_by_global_norm cg(1.5);
    expect_same(run(cg), map([&](double v) { return G > 1.5 ? v * 1.5 / G : v; }), 10 * tol<T>(), "clip_by_global_norm");
    BOOST_TEST(tad_test::close(cg.last_norm(), G, 10 * tol<T>()));
    expect_same(run(tad::clip_by_global_norm(G * 2 + 1)), g0, 0, "global norm below c: unchanged");
    // A chain applies in order: scale by 4 then clip to [-1, 1] differs from the reverse.
    expect_same(run(tad::chain(tad::scale(4), tad::clip_by_value(-1, 1))),
                map([](double v) { return std::clamp(4 * v, -1.0, 1.0); }), tol<T>(), "scale then clip");
    expect_same(run(tad::chain(tad::clip_by_value(-1, 1), tad::scale(4))),
                map([](double v) { return 4 * std::clamp(v, -1.0, 1.0); }), tol<T>(), "clip then scale");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(special_gradients, T, reals) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(9), std::size_t(17)}) {
    setup<T> d(n);
    auto a = tad::var<"a">(d.a.cspan());
    auto b = tad::var<"b">(d.b.cspan());
    tad::parameter_set params(a, b);
    tad::gradient_set grads(params);
    // Zero gradients: every clip leaves them zero (no 0/0).
    std::fill(grads.all().begin(), grads.all().end(), T(0));
    tad::clip_by_norm(0).update(grads, params);
    tad::clip_by_global_norm(0).update(grads, params);
    tad::clip_by_global_norm(1).update(grads, params);
    for (T v : grads.all()) BOOST_TEST(v == T(0));
    // An infinite entry: the global norm is infinite, every entry NaN (TensorFlow).
    fill(grads, 3, -1, 1);
    grads[1][0] = inf;
    tad::clip_by_global_norm cg(1);
    cg.update(grads, params);
    BOOST_TEST(std::isinf(cg.last_norm()));
    for (T v : grads.all()) BOOST_TEST(std::isnan(v));
    // clip_by_norm with an infinite entry: that parameter's finite entries 0, the infinite NaN.
    fill(grads, 3, -1, 1);
    grads[1][1] = -inf;
    tad::clip_by_norm(1).update(grads, params);
    BOOST_TEST(std::isnan(grads[1][1]));
    BOOST_TEST(grads[1][0] == T(0));
    // NaN: clip_by_value keeps it NaN; the global norm NaN-fills.
    fill(grads, 3, -1, 1);
    grads[1][2] = nan;
    tad::clip_by_value(-0.5, 0.5).update(grads, params);
    BOOST_TEST(std::isnan(grads[1][2]));
    for (T v : grads[0]) BOOST_TEST(std::abs(v) <= T(0.5));
    tad::clip_by_global_norm(1).update(grads, params);
    for (T v : grads.all()) BOOST_TEST(std::isnan(v));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(skipped_steps_change_nothing, T, reals) {
  for (std::size_t n : lengths) {
    setup<T> d(n);
    auto a = tad::var<"a">(d.a.cspan());
    auto s = tad::var<"s">(d.s);
    std::vector<T> cv(n, T(1));
    // loss = sum(a * log(c)) * s: with c = -1 somewhere, the gradient of a is NaN there.
    auto c = tad::constant(cv);
    auto loss = tad::sum(a * tad::log(c)) * s + s * s;
    tad::parameter_set params(a, s);
    tad::gradient_set grads(params);
    tad::chain tr(tad::skip_if_not_finite(), tad::clip_by_global_norm(1));
    tad::adam opt(params, 0.1);
    tad::train_step(loss, params, grads, tr, opt);  // a finite step
    BOOST_TEST(opt.steps() == 1u);
    const std::vector<T> pa(d.a.cspan().begin(), d.a.cspan().end());
    const T ps = d.s;
    const std::vector<T> m0(opt.first_moment(1).begin(), opt.first_moment(1).end());
    const std::vector<T> v0(opt.second_moment(1).begin(), opt.second_moment(1).end());
    if (n > 0) cv[n / 2] = T(-1);
    else cv.clear();
    if (n == 0) continue;
    tad::train_step(loss, params, grads, tr, opt);  // NaN gradient: skipped
    BOOST_TEST(tr.template get<0>().skipped() == 1u);
    BOOST_TEST(opt.steps() == 1u);
    BOOST_TEST(std::memcmp(pa.data(), d.a.cspan().data(), n * sizeof(T)) == 0);
    BOOST_TEST(std::memcmp(&ps, &d.s, sizeof(T)) == 0);
    BOOST_TEST(std::memcmp(m0.data(), opt.first_moment(1).data(), sizeof(T)) == 0);
    BOOST_TEST(std::memcmp(v0.data(), opt.second_moment(1).data(), sizeof(T)) == 0);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(compute_gradients_and_train_step, T, reals) {
  for (std::size_t n : lengths) {
    setup<T> d(n);
    auto a = tad::var<"a">(d.a.cspan());
    auto s = tad::var<"s">(d.s);
    // loss = sum(square(a)) * s + s: d/da = 2 a s, d/ds = sum(a^2) + 1.
    auto loss = tad::sum(tad::square(a)) * s + s;
    tad::parameter_set params(a, s);
    tad::gradient_set grads(params);
    double sq = 0;
    for (std::size_t i = 0; i < n; ++i) sq += double(d.a[i]) * double(d.a[i]);
    const T v = tad::compute_gradients(loss, params, grads);
    BOOST_TEST(tad_test::close(double(v), sq * 0.5 + 0.5, tol<T>() * 10));
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(tad_test::close(double(grads[0][i]), 2 * double(d.a[i]) * 0.5, tol<T>()));
    BOOST_TEST(tad_test::close(double(grads[1][0]), sq + 1, tol<T>() * 10));
    // One SGD step through train_step: p -= 0.1 g.
    tad::sgd opt(params, 0.1);
    tad::identity_transform id;
    std::vector<double> want;
    for (std::size_t i = 0; i < n; ++i) want.push_back(double(d.a[i]) - double(T(0.1)) * double(grads[0][i]));
    const double want_s = double(d.s) - double(T(0.1)) * double(grads[1][0]);
    tad::train_step(loss, params, grads, id, opt);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(tad_test::close(double(d.a[i]), want[i], tol<T>()));
    BOOST_TEST(tad_test::close(double(d.s), want_s, tol<T>()));
    // Caller-provided gradient storage.
    std::vector<T> storage(params.total() + 5, T(-1));
    tad::gradient_set mine(params, std::span<T>(storage));
    tad::compute_gradients(loss, params, mine);
    BOOST_TEST(storage.back() == T(-1));
    BOOST_TEST(mine[0].data() == storage.data());
  }
}

BOOST_AUTO_TEST_CASE(bad_arguments_throw_before_anything_changes) {
  BOOST_CHECK_THROW(tad::clip_by_norm(-1), std::invalid_argument);
  BOOST_CHECK_THROW(tad::clip_by_global_norm(std::nan("")), std::invalid_argument);
  BOOST_CHECK_THROW(tad::clip_by_value(1, -1), std::invalid_argument);
  BOOST_CHECK_THROW(tad::add_decayed_weights(-0.1), std::invalid_argument);
  std::vector<double> av{1, 2, 3}, bv{4, 5};
  auto a = tad::var<"a">(av);
  auto b = tad::var<"b">(bv);
  tad::parameter_set pa(a);
  tad::parameter_set pab(a, b);
  tad::gradient_set gab(pab);
  std::fill(gab.all().begin(), gab.all().end(), 7.0);
  BOOST_CHECK_THROW(tad::compute_gradients(tad::sum(a), pa, gab), std::invalid_argument);
  for (double v : gab.all()) BOOST_TEST(v == 7.0);
}

BOOST_AUTO_TEST_CASE(no_allocation_in_a_training_step) {
  std::vector<float> xs(1000), ys(1000);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = float(i) / 1000;
    ys[i] = 2 * xs[i] + 1;
  }
  std::vector<float> w(1000, 0.5f);
  float b = 0;
  auto wv = tad::var<"w">(w);
  auto bv = tad::var<"b">(b);
  auto loss = tad::mean(tad::square(tad::clip_gradient(wv * tad::constant(xs) + bv - tad::constant(ys), -0.1, 0.1)));
  tad::parameter_set params(wv, bv);
  tad::gradient_set grads(params);
  tad::chain tr(tad::skip_if_not_finite(), tad::clip_by_global_norm(1), tad::add_decayed_weights(1e-4));
  auto opt = tad::adamw(params, 1e-3);
  tad::momentum mom(params, 1e-3, 0.9, true);
  tad_test::alloc_counter::start();
  for (int k = 0; k < 5; ++k) {
    tad::train_step(loss, params, grads, tr, opt);
    tad::train_step(loss, params, grads, tr, mom);
  }
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(deferred_scales_reach_the_optimizer_and_readers, T, reals) {
  for (std::size_t n : lengths) {
    tad_test::buffer<T> pb(n);
    tad_test::fill_uniform(pb, -1, 1, 6);
    auto p = tad::var<"p">(pb.cspan());
    tad::parameter_set params(p);
    tad::gradient_set grads(params);
    std::vector<T> g0(n);
    tad_test::fill_uniform(g0, 1, 2, 8);  // norm >= sqrt(n): above c = 0.5 for n >= 1
    std::copy(g0.begin(), g0.end(), grads.all().begin());
    double G = 0;
    for (T v : g0) G += double(v) * double(v);
    G = std::sqrt(G);
    // clip then scale: both deferred, the stored values untouched.
    tad::chain tr(tad::clip_by_global_norm(0.5), tad::scale(3));
    tr.update(grads, params);
    const double factor = n > 0 ? 0.5 / G * 3 : 3;
    BOOST_TEST(tad_test::close(double(grads.pending_scale()), factor, tol<T>()));
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(grads.raw(0)[i] == g0[i]);
    // SGD applies the factor in its loop: p -= lr * g * factor.
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = double(pb[i]) - 0.1 * double(g0[i]) * factor;
    tad::sgd opt(params, 0.1);
    opt.apply_gradients(params, grads);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(tad_test::close(double(pb[i]), want[i], 4 * tol<T>()));
    // A reader sees the scaled gradient, once.
    const auto seen = flat(grads);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(tad_test::close(seen[i], double(g0[i]) * factor, 4 * tol<T>()));
    BOOST_TEST(grads.pending_scale() == T(1));
    // A new gradient forgets the pending scale.
    grads.defer_scale(T(7));
    auto loss = tad::sum(p * p);
    tad::compute_gradients(loss, params, grads);
    BOOST_TEST(grads.pending_scale() == T(1));
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(tad_test::close(double(grads[0][i]), 2 * double(pb[i]), tol<T>()));
  }
}

BOOST_AUTO_TEST_CASE(train_step_with_temporaries_tuples_and_bad_schedules) {
  double av = 1, bv = 2;
  auto vars = std::tuple{tad::var<"a">(av), tad::var<"b">(bv)};
  tad::parameter_set params(vars);  // from a tuple of variables
  tad::gradient_set grads(params);
  const auto loss = std::get<0>(vars) * std::get<1>(vars);  // d/da = b, d/db = a
  tad::sgd opt(params, [](std::size_t step) { return step == 0 ? 0.5 : -1.0; });
  const double v = tad::train_step(loss, params, grads, tad::identity_transform{}, opt);  // a temporary transform
  BOOST_TEST(v == 2.0);
  BOOST_TEST(av == 1 - 0.5 * 2);
  BOOST_TEST(bv == 2 - 0.5 * 1);
  // The schedule's next rate is negative: train_step throws before computing anything.
  grads[0][0] = 42;
  tad::skip_if_not_finite skip;
  BOOST_CHECK_THROW(tad::train_step(loss, params, grads, skip, opt), std::invalid_argument);
  BOOST_TEST(grads[0][0] == 42.0);
  BOOST_TEST(av == 0.0);
  BOOST_TEST(opt.steps() == 1u);
}

// ---- gradient accumulation (tad/train/accumulate.hpp) ------------------------------------------

namespace {
/// k minibatches t_j of n targets; the loss of minibatch j is
/// L_j = sum(log(1 + (a - t_j)^2)) + c^2 sum(t_j), so the full batch's sum has the gradient
/// dL/da_i = sum_j 2 (a_i - t_ji) / (1 + (a_i - t_ji)^2) and dL/dc = 2 c sum_j sum_i t_ji.
template <class T>
struct minibatches {
  static constexpr std::size_t k = 4;
  std::size_t n;
  tad_test::buffer<T> a, tb;  // the parameter and the minibatch buffer the loss views
  T c = T(0.375);
  std::vector<std::vector<T>> t;
  explicit minibatches(std::size_t len) : n(len), a(len), tb(len), t(k, std::vector<T>(len)) {
    tad_test::fill_uniform(a, -1, 1, 2);
    for (std::size_t j = 0; j < k; ++j) tad_test::fill_uniform(t[j], -1, 1, unsigned(10 + j));
  }
  void load(std::size_t j) { std::copy(t[j].begin(), t[j].end(), tb.begin()); }
  /// The full batch's loss and gradient (a, then c) from the formula, in long double.
  std::pair<long double, std::vector<long double>> full() const {
    std::vector<long double> g(n + 1, 0);
    long double loss = 0, st = 0;
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t i = 0; i < n; ++i) {
        const long double d = (long double)a[i] - (long double)t[j][i];
        loss += std::log(1 + d * d);
        g[i] += 2 * d / (1 + d * d);
        st += t[j][i];
      }
    loss += (long double)c * c * st;
    g[n] = 2 * (long double)c * st;
    return {loss, g};
  }
};

template <class T>
void expect_gradient(tad::gradient_set<T>& g, const std::vector<long double>& want, long double factor,
                     const char* what, std::size_t n) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!tad_test::close(double(g[0][i]), double(want[i] * factor), tol<T>() * 10)) ++bad;
  BOOST_TEST(bad == 0u, what << " (n = " << n << "): " << bad << " of " << n << " entries of da differ");
  BOOST_TEST(tad_test::close(double(g[1][0]), double(want[n] * factor), tol<T>() * 50), what << " (n = " << n << "): dc");
}
}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(accumulated_minibatches_give_the_full_batch_gradient, T, reals) {
  for (std::size_t n : lengths) {
    minibatches<T> d(n);
    auto a = tad::var<"a">(d.a.cspan());
    auto c = tad::var<"c">(d.c);
    auto t = tad::constant(d.tb.cspan());
    auto loss = tad::sum(tad::log(T(1) + tad::square(a - t))) + tad::square(c) * tad::sum(t);
    tad::parameter_set params(a, c);
    tad::gradient_accumulator acc(params);
    const auto [want_loss, want] = d.full();
    BOOST_TEST(acc.count() == 0u);
    for (T v : acc.sum().all()) BOOST_TEST(v == T(0));  // nothing added: zero
    // The sum, twice: the second round (after reset) must not see the first.
    for (int round = 0; round < 2; ++round) {
      acc.reset();
      long double loss_sum = 0;
      for (std::size_t j = 0; j < d.k; ++j) {
        d.load(j);
        loss_sum += acc.add(loss, params);
      }
      BOOST_TEST(acc.count() == d.k);
      BOOST_TEST(tad_test::close(double(loss_sum), double(want_loss), tol<T>() * 50));
      expect_gradient(acc.sum(), want, 1, "sum", n);
    }
    // The mean: once divided, also when asked twice; then through a transform and SGD.
    acc.reset();
    for (std::size_t j = 0; j < d.k; ++j) {
      d.load(j);
      acc.add(loss, params);
    }
    acc.mean();
    expect_gradient(acc.mean(), want, 1.0L / d.k, "mean", n);
    std::vector<long double> want_a(n);
    for (std::size_t i = 0; i < n; ++i) want_a[i] = (long double)d.a[i] - (long double)T(0.5) * want[i] / d.k * 2;
    tad::sgd opt(params, 0.5);
    BOOST_TEST((tad::apply_step(params, acc.mean(), tad::scale(2), opt) == tad::step_action::apply));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!tad_test::close(double(d.a[i]), double(want_a[i]), tol<T>() * 10)) ++bad;
    BOOST_TEST(bad == 0u, "sgd on 2 x the mean (n = " << n << "): " << bad << " parameters differ");
    // Gradients computed elsewhere: compute_gradients per minibatch, then add(grads) or
    // accumulate(into, from).
    tad::gradient_set g(params), total(params);
    std::fill(total.all().begin(), total.all().end(), T(0));
    acc.reset();
    for (std::size_t j = 0; j < d.k; ++j) {
      d.load(j);
      tad::compute_gradients(loss, params, g);
      acc.add(g);
      tad::accumulate(total, g);
    }
    const auto [unused, want_now] = d.full();  // a has moved
    expect_gradient(acc.sum(), want_now, 1, "add(grads)", n);
    expect_gradient(total, want_now, 1, "accumulate(into, from)", n);
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(accumulate_applies_both_pending_scales, T, reals) {
  for (std::size_t n : lengths) {
    std::vector<T> av(n), bv(n + 3);
    auto a = tad::var<"a">(av);
    auto b = tad::var<"b">(bv);
    tad::parameter_set params(a, b);
    tad::gradient_set into(params), from(params);
    std::vector<T> x(into.raw_all().size()), y(x.size());  // exact in float: multiples of 1/8
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = T(double(i % 37) * 0.25 - 4);
      y[i] = T(double(i % 11) * -0.125 + 1);
    }
    std::copy(x.begin(), x.end(), into.raw_all().begin());
    std::copy(y.begin(), y.end(), from.raw_all().begin());
    into.defer_scale(T(0.5));
    from.defer_scale(T(3));
    tad::accumulate(into, from);
    BOOST_TEST(into.pending_scale() == T(1));
    BOOST_TEST(from.pending_scale() == T(3));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (into.raw_all()[i] != T(double(x[i]) * 0.5 + double(y[i]) * 3)) ++bad;
    BOOST_TEST(bad == 0u, "n = " << n << ": " << bad << " entries differ");
    for (std::size_t i = 0; i < y.size(); ++i) BOOST_TEST_REQUIRE(from.raw_all()[i] == y[i]);  // from unchanged
  }
}

BOOST_AUTO_TEST_CASE(accumulation_errors_throw_before_anything_changes) {
  std::vector<double> xv{1, 2, 3}, yv{4, 5};
  auto x = tad::var<"x">(xv);
  auto y = tad::var<"y">(yv);
  tad::parameter_set pxy(x, y);
  tad::parameter_set pyx(y, x);
  tad::parameter_set px(x);
  tad::gradient_set gxy(pxy), gyx(pyx), gx(px);
  std::fill(gxy.all().begin(), gxy.all().end(), 7.0);
  std::fill(gyx.all().begin(), gyx.all().end(), 1.0);
  tad_test::expect_message<std::invalid_argument>([&] { tad::accumulate(gxy, gyx); },
                                                  "tad::accumulate(into, from): gradient 0 has 2 elements in `from`, 3 in `into`");
  tad_test::expect_message<std::invalid_argument>([&] { tad::accumulate(gxy, gx); },
                                                  "tad::accumulate(into, from): `from` holds 1 gradients, `into` 2");
  for (double v : gxy.all()) BOOST_TEST(v == 7.0);
  tad::gradient_accumulator acc(pxy);
  tad_test::expect_message<std::logic_error>(
      [&] { acc.mean(); }, "tad::gradient_accumulator::mean(): no gradients were added since construction or reset()");
  BOOST_CHECK_THROW(acc.add(gyx), std::invalid_argument);
  BOOST_CHECK_THROW(acc.add(tad::sum(x), px), std::invalid_argument);  // a loss over other parameters
  BOOST_TEST(acc.count() == 0u);
  acc.add(tad::sum(x) + tad::sum(y), pxy);
  acc.add(gxy);
  BOOST_TEST(acc.count() == 2u);
  BOOST_TEST(acc.mean()[0][0] == 4.0);  // (1 + 7) / 2
  tad_test::expect_message<std::logic_error>(
      [&] { acc.add(gxy); },
      "tad::gradient_accumulator::add(grads): the sum was already divided by mean(); call reset() first");
  BOOST_CHECK_THROW(acc.add(tad::sum(x) + tad::sum(y), pxy), std::logic_error);
  BOOST_TEST(acc.count() == 2u);
  acc.reset();
  acc.add(gxy);
  BOOST_TEST(acc.mean()[1][1] == 7.0);
}

BOOST_AUTO_TEST_CASE(no_allocation_in_an_accumulated_step_or_a_restore) {
  std::vector<float> xb(300), yb(300);  // the minibatch buffers the loss views
  std::vector<float> w(300, 0.5f);
  float b = 0;
  auto wv = tad::var<"w">(w);
  auto bv = tad::var<"b">(b);
  auto loss = tad::mean(tad::square(wv * tad::constant(xb) + bv - tad::constant(yb)));
  tad::parameter_set params(wv, bv);
  tad::gradient_accumulator acc(params);
  tad::chain tr(tad::skip_if_not_finite(), tad::clip_by_global_norm(1));
  tad::adam opt(params, 1e-3);
  std::vector<float> saved(opt.state().size());
  tad_test::alloc_counter::start();
  for (int step = 0; step < 3; ++step) {
    acc.reset();
    for (int j = 0; j < 4; ++j) {
      for (std::size_t i = 0; i < xb.size(); ++i) {
        xb[i] = float(i + std::size_t(j)) / 300;
        yb[i] = 2 * xb[i] + 1;
      }
      acc.add(loss, params);
    }
    tad::apply_step(params, acc.mean(), tr, opt);
    std::copy(opt.state().begin(), opt.state().end(), saved.begin());
    opt.restore(saved, opt.steps());
  }
  const long allocations = tad_test::alloc_counter::stop();
  BOOST_TEST(allocations == 0);
  BOOST_TEST(opt.steps() == 3u);
}
