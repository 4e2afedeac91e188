// Threads: an expression keeps no mutable state (no tape, no caches, no globals), so one
// expression object may be evaluated from many threads at once (a tad::program too:
// products.cpp), and independent expressions, parameter sets and optimizers may run side by
// side. These tests run under ThreadSanitizer in CI (tools/test.sh, stage tsan); without it
// they still check that every thread gets the single-threaded results, bit for bit, and that
// those match independent formulas.
#include <support/check.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

namespace {

constexpr int n_threads = 8;

/// Runs body(t) on n_threads threads at once (t = 0 .. n_threads - 1) and joins them.
template <class F>
void run_threads(F body) {
  std::vector<std::thread> threads;
  threads.reserve(n_threads);
  for (int t = 0; t < n_threads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
}

std::vector<double> wave(std::size_t n, double phase) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37 * static_cast<double>(i) + phase);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(eight_threads_evaluate_one_expression_concurrently) {
  // One const expression (a multi-pass one) and its data are shared read-only; each thread has
  // its own gradient buffer.
  const std::size_t n = 1000;
  const std::vector<double> xs = wave(n, 0);
  auto x = tad::var<"x">(xs);
  const auto e = tad::logsumexp(x) + tad::sum(tad::square(x - tad::mean(x)));
  const auto reference = tad::grad(e, x);
  const double v0 = std::get<0>(reference);
  const std::vector<double>& g0 = std::get<1>(reference);
  std::atomic<int> mismatches{0};
  run_threads([&](int) {
    std::vector<double> g(n);
    for (int rep = 0; rep < 100; ++rep) {
      const double v = tad::grad_into(e, tad::wrt(x, g));
      if (v != v0 || g != g0) ++mismatches;
      if (tad::value(e) != v0) ++mismatches;
    }
  });
  BOOST_TEST(mismatches.load() == 0);
  // Independent check of every element: softmax + 2 (x - mean) (the mean's adjoint sums to 0).
  double m = 0, z = 0, mx = -INFINITY;
  for (double v : xs) m += v, mx = std::max(mx, v);
  m /= double(n);
  for (double v : xs) z += std::exp(v - mx);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    bad += !tad_test::close(g0[i], std::exp(xs[i] - mx) / z + 2 * (xs[i] - m), 1e-9);
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(eight_threads_call_every_entry_point_on_one_array_expression) {
  // tad::value, evaluate, vjp and vjp_into of one const array expression, and tad::grad of its
  // sum, from 8 threads at once, each into buffers of its own. With f = exp(sin(x)) c + x^2
  // and a seed s: vjp's value is sum(s f) and d/dx = s (exp(sin(x)) cos(x) c + 2 x); grad of
  // sum(f) is the same with s = 1.
  const std::size_t n = 515;  // not a multiple of a SIMD width
  const std::vector<double> xs = wave(n, 0), cs = wave(n, 1.0), ss = wave(n, 2.0);
  auto x = tad::var<"x">(xs);
  const auto f = tad::exp(tad::sin(x)) * tad::constant(cs) + tad::square(x);
  const auto total = tad::sum(f);
  const std::vector<double> f0 = tad::value(f);
  // Not structured bindings: clang 14 does not capture them in a lambda.
  const auto seeded = tad::vjp(f, ss, x);
  const auto summed = tad::grad(total, x);
  const double vs0 = std::get<0>(seeded), vt0 = std::get<0>(summed);
  const std::vector<double>& gs0 = std::get<1>(seeded);
  const std::vector<double>& gt0 = std::get<1>(summed);
  std::atomic<int> mismatches{0};
  run_threads([&](int) {
    std::vector<double> out(n), g(n);
    for (int rep = 0; rep < 50; ++rep) {
      tad::evaluate(f, out);
      if (out != f0 || tad::value(f) != f0) ++mismatches;
      if (tad::vjp(f, ss, x) != seeded) ++mismatches;
      if (tad::vjp_into(f, ss, tad::wrt(x, g)) != vs0 || g != gs0) ++mismatches;
      if (tad::grad(total, x) != summed) ++mismatches;
    }
  });
  BOOST_TEST(mismatches.load() == 0);
  double want_s = 0, want_t = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double fi = std::exp(std::sin(xs[i])) * cs[i] + xs[i] * xs[i];
    const double di = std::exp(std::sin(xs[i])) * std::cos(xs[i]) * cs[i] + 2 * xs[i];
    want_s += ss[i] * fi, want_t += fi;
    bad += !tad_test::close(f0[i], fi, 1e-12);
    bad += !tad_test::close(gs0[i], ss[i] * di, 1e-12);
    bad += !tad_test::close(gt0[i], di, 1e-12);
  }
  BOOST_TEST(bad == 0u);
  BOOST_TEST(tad_test::close(vs0, want_s, 1e-12));
  BOOST_TEST(tad_test::close(vt0, want_t, 1e-12));
}

BOOST_AUTO_TEST_CASE(threads_share_one_array_in_disjoint_slices) {
  // Data parallelism by hand: each thread differentiates sum(f(x)) over its own slice of one
  // array and writes its slice of one gradient buffer. f is elementwise, so every element's
  // gradient is f'(x_i) whatever the slicing, and the slices' values add up to the whole one.
  const std::size_t n = 4099;  // not a multiple of the thread count nor of the SIMD width
  const std::vector<double> xs = wave(n, 0.5);
  std::vector<double> g(n, -1.0), part(n_threads);
  run_threads([&](int t) {
    const std::size_t lo = n * std::size_t(t) / n_threads, hi = n * std::size_t(t + 1) / n_threads;
    auto x = tad::var<"x">(std::span<const double>(xs).subspan(lo, hi - lo));
    const auto e = tad::sum(tad::exp(tad::sin(x)) + tad::square(x));
    part[std::size_t(t)] = tad::grad_into(e, tad::wrt(x, std::span<double>(g).subspan(lo, hi - lo)));
  });
  double value = 0, want = 0;
  for (double p : part) value += p;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    want += std::exp(std::sin(xs[i])) + xs[i] * xs[i];
    bad += !tad_test::close(g[i], std::exp(std::sin(xs[i])) * std::cos(xs[i]) + 2 * xs[i], 1e-12);
  }
  BOOST_TEST(bad == 0u);
  BOOST_TEST(tad_test::close(value, want, 1e-12));
}

BOOST_AUTO_TEST_CASE(a_matrix_expression_with_several_shapes_is_shared_read_only) {
  // Shaped expressions keep the guarantee: one const expression over a 37 x 19 matrix
  // variable, a matrix constant and a vector penalty of another length, evaluated by 8
  // threads, each into its own tad::matrix and vector buffers. d/dW of
  //   mean(log1p(square(W - T))) + 0.1 * squared_norm(v)
  // is 2 (W - T) / (1 + (W - T)^2) / (rows * cols); d/dv is 0.2 v.
  const std::size_t rows = 37, cols = 19, nv = 11;
  tad::matrix<double> w(rows, cols), target(rows, cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      w(r, c) = std::sin(0.3 * double(r) + 0.7 * double(c));
      target(r, c) = std::cos(0.2 * double(r * c));
    }
  const std::vector<double> vs = wave(nv, 0.25);
  auto W = tad::var<"W">(w);
  auto v = tad::var<"v">(vs);
  const auto e = tad::mean(tad::log1p(tad::square(W - tad::constant(target)))) + 0.1 * tad::squared_norm(v);
  const double count = double(rows * cols);
  std::atomic<int> bad{0};
  run_threads([&](int) {
    tad::matrix<double> gw(rows, cols);
    std::vector<double> gv(nv);
    for (int rep = 0; rep < 50; ++rep) {
      tad::grad_into(e, tad::wrt(W, gw), tad::wrt(v, gv));
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
          const double d = w(r, c) - target(r, c);
          if (!tad_test::close(gw(r, c), 2 * d / (1 + d * d) / count, 1e-12)) ++bad;
        }
      for (std::size_t i = 0; i < nv; ++i)
        if (!tad_test::close(gv[i], 0.2 * vs[i], 1e-12)) ++bad;
    }
  });
  BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_column_a_row_and_a_strided_block_are_shared_read_only) {
  // One const expression over a strided 23 x 13 block (ld 16) of a constant, a row b and a
  // column c, evaluated by 8 threads: each evaluation sets the columns' per-row values in its
  // own copy of the expression, never in the shared one. With d = x b_j + c_r - t:
  //   L = mean(square(d)), dL/db_j = sum_r 2 d x / K, dL/dc_r = sum_j 2 d / K.
  const std::size_t rows = 23, cols = 13, ld = 16;
  std::vector<double> big(rows * ld), target(rows * cols);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = std::sin(0.37 * double(i));
  for (std::size_t i = 0; i < target.size(); ++i) target[i] = std::cos(0.21 * double(i));
  const std::vector<double> bs = wave(cols, 0.5), cs = wave(rows, 0.25);
  auto X = tad::constant(big.data(), rows, cols, ld);
  auto b = tad::var<"b">(bs);
  auto c = tad::var<"c">(cs);
  const auto e = tad::mean(tad::square(X * b + tad::as_column(c) - tad::constant(target.data(), rows, cols)));
  const double count = double(rows * cols);
  std::vector<double> wb(cols), wc(rows);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j) {
      const double x = big[r * ld + j], d = x * bs[j] + cs[r] - target[r * cols + j];
      wb[j] += 2 * d * x / count;
      wc[r] += 2 * d / count;
    }
  std::atomic<int> bad{0};
  run_threads([&](int) {
    std::vector<double> gb(cols), gc(rows);
    for (int rep = 0; rep < 50; ++rep) {
      tad::grad_into(e, tad::wrt(b, gb), tad::wrt(c, gc));
      for (std::size_t j = 0; j < cols; ++j)
        if (!tad_test::close(gb[j], wb[j], 1e-12)) ++bad;
      for (std::size_t r = 0; r < rows; ++r)
        if (!tad_test::close(gc[r], wc[r], 1e-12)) ++bad;
    }
  });
  BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_CASE(modifiers_and_custom_gradients_are_shared_read_only) {
  // Gradient surgery in one shared expression: a scale read by reference (one shared double,
  // only read while the threads run), a stop, a clip of the incoming gradient, a custom
  // gradient with a captured constant. d/dx of
  //   sum(scale(w x, k) + stop(x) x + 3 clip(x^2, -1, 1) + custom(x)), custom's backward 3 dy,
  // is w k + x + clip(3, -1, 1) 2x + 3 = w k + 3x + 3.
  const std::size_t n = 257;
  const std::vector<double> xs = wave(n, 1.0);
  double k = 0.25;
  const double w = 1.5;
  auto x = tad::var<"x">(xs);
  const auto triple = tad::custom_gradient([](auto v) { return v; },
                                           [w3 = 3.0](auto dy, auto, auto) { return w3 * dy; });
  const auto e = tad::sum(tad::scale_gradient(w * x, tad::constant_ref(k)) + tad::stop_gradient(x) * x +
                          3.0 * tad::clip_gradient(tad::square(x), -1.0, 1.0) + triple(x));
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = w * k + 3 * xs[i] + 3;
  std::atomic<int> bad{0};
  run_threads([&](int) {
    std::vector<double> g(n);
    for (int rep = 0; rep < 50; ++rep) {
      tad::grad_into(e, tad::wrt(x, g));
      for (std::size_t i = 0; i < n; ++i)
        if (!tad_test::close(g[i], want[i], 1e-12)) ++bad;
    }
  });
  BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_CASE(independent_training_loops_run_side_by_side) {
  // Each thread fits y = a x + b by Adam after clipping by global norm, with its own
  // parameters, gradient set, transform and optimizer; the data are shared read-only. Every
  // thread must end bit-identical to the same loop run alone, and near the least-squares fit.
  const std::size_t n = 64;
  std::vector<double> xs(n), ys(n);
  for (std::size_t i = 0; i < n; ++i) {
    xs[i] = -1 + 2 * double(i) / double(n - 1);
    ys[i] = 0.75 * xs[i] - 0.5 + 0.01 * std::sin(7.0 * double(i));
  }
  const auto fit = [&] {
    double av = 0, bv = 0;
    auto a = tad::var<"a">(av);
    auto b = tad::var<"b">(bv);
    const auto loss = tad::mean(tad::square(a * tad::constant(xs) + b - tad::constant(ys)));
    tad::parameter_set params(a, b);
    tad::gradient_set grads(params);
    tad::clip_by_global_norm clip(1.0);
    tad::adam opt(params, 0.05);
    for (int step = 0; step < 600; ++step) tad::train_step(loss, params, grads, clip, opt);
    return std::vector<double>{av, bv};
  };
  const std::vector<double> alone = fit();
  // Least squares on the symmetric grid: a = sum(x y) / sum(x^2), b = mean(y).
  double sxy = 0, sxx = 0, sy = 0;
  for (std::size_t i = 0; i < n; ++i) sxy += xs[i] * ys[i], sxx += xs[i] * xs[i], sy += ys[i];
  BOOST_TEST(std::abs(alone[0] - sxy / sxx) < 1e-3);
  BOOST_TEST(std::abs(alone[1] - sy / double(n)) < 1e-3);
  std::vector<std::vector<double>> results(n_threads);
  run_threads([&](int t) { results[std::size_t(t)] = fit(); });
  for (const auto& r : results) BOOST_TEST(r == alone);
}
