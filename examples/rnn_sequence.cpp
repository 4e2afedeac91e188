// A recurrent sequence classifier trained with gradient-norm clipping (doc/loops.md). A tanh
// RNN reads 40 steps of noise and must tell, at the end, the sign of what it saw 5 steps
// before the end: its carry goes through a tad::scan, its head is linear, its loss a softmax
// cross-entropy, all one expression run by a tad::program. The recurrent weights start large
// (spectral radius about 1.6), so backpropagation through 40 steps explodes now and then
// (Pascanu, Mikolov and Bengio, 2013): trained with plain SGD the loss jumps and the accuracy
// falls back; with clip_by_global_norm the same run is stable. A third run uses truncated BPTT
// (blocks of 10 steps), enough for a dependency 5 steps back, as a cheaper gradient.
// Each is trained four times (data and initial weights from four seeds), one line per 100
// steps; checks that the clipped and truncated runs learn the task and that the unclipped ones
// are visibly less stable on average, and returns 1 if not.
#include <tad/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

constexpr std::size_t T = 40, B = 32, D = 2, H = 24, C = 2, lag = 5, steps = 400;

/// A batch: B sequences of T steps (step t of sequence r is row t B + r), the label the sign
/// of the first input 5 steps before the end.
void make_batch(lcg& g, std::vector<float>& xs, std::vector<int>& labels) {
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t r = 0; r < B; ++r)
      for (std::size_t j = 0; j < D; ++j) xs[(t * B + r) * D + j] = static_cast<float>(g.normal());
  for (std::size_t r = 0; r < B; ++r) labels[r] = xs[((T - lag) * B + r) * D] > 0 ? 1 : 0;
}

struct result {
  double climb = 0, final_loss = 0, accuracy = 0;
};

enum class mode { clipped, unclipped, truncated };

result train(mode how, std::uint64_t seed) {
  lcg g{seed};
  std::vector<float> w(H * H), u(D * H), bias(H), v(H * C), c(C), zeros(B * H);
  for (float& e : w) e = static_cast<float>(1.6 * g.normal() / std::sqrt(double(H)));
  for (float& e : u) e = static_cast<float>(g.normal());
  for (float& e : v) e = static_cast<float>(0.3 * g.normal());
  std::vector<float> xs(T * B * D);
  std::vector<int> labels(B);

  const auto options = how == mode::truncated ? tad::scan_options{.truncate = 10} : tad::scan_options{};
  auto W = tad::var<"W">(w.data(), H, H);          // parameters the body captures
  auto U = tad::var<"U">(u.data(), D, H);
  auto b = tad::var<"b">(bias);
  auto V = tad::var<"V">(v.data(), H, C);
  auto c0 = tad::var<"c">(c);
  auto X = tad::constant(xs.data(), T * B, D);     // step t's inputs: rows t B .. t B + B - 1
  auto h0 = tad::constant(zeros.data(), B, H);     // a batch of B carries, one per row

  auto cell = [&](auto h, auto x) { return tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + b); };
  auto last = tad::scan(cell, h0, X, options);     // h_T, a B x H matrix
  auto logits = tad::matmul(last, V) + c0;
  const tad::program loss(tad::mean(tad::softmax_cross_entropy(logits, labels)));  // T, shapes: once

  tad::parameter_set params(W, U, b, V, c0);
  tad::gradient_set grads(params);
  tad::sgd opt(params, 0.5f);
  tad::clip_by_global_norm clip(1.0);
  tad::identity_transform none;

  result r;
  double window = 0, best = INFINITY;
  std::size_t right = 0, seen = 0;
  const char* name = how == mode::clipped ? "clipped  " : how == mode::unclipped ? "unclipped" : "truncated";
  for (std::size_t step = 1; step <= steps; ++step) {
    make_batch(g, xs, labels);
    const double l = how == mode::unclipped ? tad::train_step(loss, params, grads, none, opt)
                                            : tad::train_step(loss, params, grads, clip, opt);
    window += std::isfinite(l) ? l : 1e30;
    if (step > steps - 100) {  // accuracy over the last 100 batches, after each update
      const tad::matrix<float> z = tad::value(logits);
      for (std::size_t i = 0; i < B; ++i) {
        if ((z(i, 1) > z(i, 0)) == (labels[i] == 1)) ++right;
        ++seen;
      }
    }
    if (step % 50 == 0) {  // the loss's mean over 50 steps: how far it climbs back above its best
      const double mean = window / 50;
      if (step % 100 == 0) std::printf("%s seed %u step %3zu  loss %.4f (mean of the last 50)\n", name, unsigned(seed), step, mean);
      best = std::min(best, mean);
      r.climb = std::max(r.climb, mean - best);
      r.final_loss = mean;
      window = 0;
    }
  }
  r.accuracy = static_cast<double>(right) / static_cast<double>(seen);
  std::printf("%s seed %u accuracy %.3f over the last 100 batches; the loss climbed %.3f above its best\n", name,
              unsigned(seed), r.accuracy, r.climb);
  return r;
}

}  // namespace

int main() {
  // Four runs of each (different data and initial weights): a single unclipped run may or may
  // not blow up, depending on the last bits of its arithmetic; on average it does.
  result clipped, unclipped, truncated;
  const auto add = [](result& sum, const result& r) {
    sum.climb += r.climb / 4, sum.final_loss += r.final_loss / 4, sum.accuracy += r.accuracy / 4;
  };
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    add(clipped, train(mode::clipped, seed));
    add(unclipped, train(mode::unclipped, seed));
    add(truncated, train(mode::truncated, seed));
  }
  const bool learns = clipped.accuracy > 0.9 && truncated.accuracy > 0.9;
  const bool less_stable = unclipped.climb > 2 * clipped.climb + 0.05 && unclipped.accuracy < clipped.accuracy - 0.05;
  std::printf("\nmeans of four runs: clipped accuracy %.3f, truncated %.3f, unclipped %.3f\n", clipped.accuracy,
              truncated.accuracy, unclipped.accuracy);
  std::printf("clipped and truncated runs learn the task (accuracy > 0.9): %s\n", learns ? "ok" : "WRONG");
  std::printf("without clipping, training is less stable (the loss climbed %.3f against %.3f above its best; "
              "accuracy %.3f against %.3f): %s\n",
              unclipped.climb, clipped.climb, unclipped.accuracy, clipped.accuracy, less_stable ? "ok" : "WRONG");
  return learns && less_stable ? 0 : 1;
}
