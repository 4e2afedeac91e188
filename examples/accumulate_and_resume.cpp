// Gradient accumulation and a checkpoint (doc/training.md): fit y = w x + b to 400 samples by
// Adam, each step on the gradient of all 400 accumulated over 4 minibatches of 100 (the batch
// one evaluation should not hold); then the same training interrupted halfway, checkpointed to
// a file (the step count, Adam's state and the parameters, as raw bytes), restored into a
// fresh optimizer and resumed. Checks that the accumulated mean equals the full batch's
// gradient, that the resumed run ends bit for bit where the uninterrupted one does, and that
// the fit finds the true line; returns 1 if a check fails.
#include <tad/tad.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace {

/// A small deterministic generator (64-bit LCG), so the data are the same everywhere.
struct lcg {
  std::uint64_t s;
  double uniform() {  // in [0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
};

constexpr std::size_t n = 400;                  // samples: the batch of one optimizer step
constexpr std::size_t minibatch = 100;          // samples per evaluation
constexpr std::size_t minibatches = n / minibatch;
constexpr std::size_t total_steps = 200, checkpoint_at = 100;
constexpr double true_w = 2, true_b = 1;

struct data_set {
  std::vector<double> x, y;
};

/// y = 2x + 1 + noise (uniform in [-0.1, 0.1]) for x in [-1, 1].
data_set make_data() {
  lcg g{7};
  data_set d;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = 2 * g.uniform() - 1;
    d.x.push_back(x);
    d.y.push_back(true_w * x + true_b + 0.2 * (g.uniform() - 0.5));
  }
  return d;
}

/// Writes / reads the bytes of a span (a checkpoint in this machine's byte order).
template <class T, std::size_t N>
void write_raw(std::ostream& f, std::span<T, N> s) {
  f.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size_bytes()));
}
template <class T, std::size_t N>
void read_raw(std::istream& f, std::span<T, N> s) {
  f.read(reinterpret_cast<char*>(s.data()), static_cast<std::streamsize>(s.size_bytes()));
}

int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-62s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const data_set d = make_data();
  double w_value = 0, b_value = 0;
  std::vector<double> xb(minibatch), yb(minibatch);  // the minibatch the loss views
  auto w = tad::var<"w">(w_value);
  auto b = tad::var<"b">(b_value);
  auto loss = tad::mean(tad::square(w * tad::constant(xb) + b - tad::constant(yb)));
  tad::parameter_set params(w, b);
  tad::gradient_accumulator acc(params);  // the sum and one minibatch's gradients, allocated once
  tad::clip_by_global_norm clip(1.0);

  // Sums the gradients of the minibatches (the loss of each is its mean, so their mean is the
  // full batch's), then clips and updates: one optimizer step on all n samples.
  auto add_minibatches = [&] {
    acc.reset();
    double loss_value = 0;
    for (std::size_t j = 0; j < minibatches; ++j) {
      std::copy_n(d.x.begin() + static_cast<std::ptrdiff_t>(j * minibatch), minibatch, xb.begin());
      std::copy_n(d.y.begin() + static_cast<std::ptrdiff_t>(j * minibatch), minibatch, yb.begin());
      loss_value += acc.add(loss, params) / minibatches;  // += this minibatch's gradients
    }
    return loss_value;
  };
  auto step = [&](auto& opt) {
    const double loss_value = add_minibatches();
    tad::apply_step(params, acc.mean(), clip, opt);  // transform, then update, on the mean
    return loss_value;
  };

  // The accumulated mean against the gradient of one loss over all n samples.
  add_minibatches();
  auto full_loss = tad::mean(tad::square(w * tad::constant(d.x) + b - tad::constant(d.y)));
  tad::gradient_set full(params);
  tad::compute_gradients(full_loss, params, full);
  const double dw = acc.mean()[0][0], db = acc.mean()[1][0];
  std::printf("at w = b = 0: accumulated mean gradient (%.15f, %.15f)\n", dw, db);
  std::printf("              full-batch gradient       (%.15f, %.15f)\n", full[0][0], full[1][0]);

  // Uninterrupted: total_steps steps.
  tad::adam straight(params, 0.05);
  for (std::size_t s = 1; s <= total_steps; ++s) {
    const double l = step(straight);
    if (s % 50 == 0) std::printf("  step %3zu  loss %.6f  w %.6f  b %.6f\n", s, l, w_value, b_value);
  }
  const double want_w = w_value, want_b = b_value;
  const std::vector<double> want_state(straight.state().begin(), straight.state().end());

  // Interrupted: checkpoint_at steps, a checkpoint, a fresh optimizer, the rest.
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("tad_accumulate_and_resume_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  w_value = b_value = 0;
  {
    tad::adam first(params, 0.05);
    for (std::size_t s = 1; s <= checkpoint_at; ++s) step(first);
    // The checkpoint: the step count, Adam's state (m and v, one span) and the parameters.
    std::ofstream f(file, std::ios::binary);
    const std::uint64_t steps = first.steps();
    write_raw(f, std::span(&steps, 1));
    write_raw(f, first.state());
    write_raw(f, std::span(&w_value, 1));
    write_raw(f, std::span(&b_value, 1));
  }
  w_value = b_value = std::numeric_limits<double>::quiet_NaN();  // everything forgotten
  tad::adam resumed(params, 0.05);  // the same hyperparameters
  {
    std::ifstream f(file, std::ios::binary);
    std::uint64_t steps = 0;
    std::vector<double> state(resumed.state().size());
    read_raw(f, std::span(&steps, 1));
    read_raw(f, std::span(state));
    read_raw(f, std::span(&w_value, 1));
    read_raw(f, std::span(&b_value, 1));
    if (!f) {
      std::printf("cannot read %s\n", file.c_str());
      return 1;
    }
    resumed.restore(state, steps);  // throws std::invalid_argument if the size differs
  }
  std::filesystem::remove(file);
  for (std::size_t s = checkpoint_at + 1; s <= total_steps; ++s) step(resumed);
  std::printf("uninterrupted: w %.17g  b %.17g\n", want_w, want_b);
  std::printf("resumed:       w %.17g  b %.17g\n", w_value, b_value);

  const auto same_bits = [](const void* p, const void* q, std::size_t bytes) { return std::memcmp(p, q, bytes) == 0; };
  check("accumulated mean = full-batch gradient (relative 1e-12)",
        std::abs(dw - full[0][0]) <= 1e-12 * std::abs(full[0][0]) && std::abs(db - full[1][0]) <= 1e-12 * std::abs(full[1][0]));
  check("resumed run: w and b equal bit for bit",
        same_bits(&w_value, &want_w, sizeof w_value) && same_bits(&b_value, &want_b, sizeof b_value));
  check("resumed run: Adam's state equal bit for bit",
        resumed.steps() == total_steps && resumed.state().size() == want_state.size() &&
            same_bits(resumed.state().data(), want_state.data(), resumed.state().size_bytes()));
  check("fit: |w - 2| < 0.02 and |b - 1| < 0.02", std::abs(w_value - true_w) < 0.02 && std::abs(b_value - true_b) < 0.02);
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
