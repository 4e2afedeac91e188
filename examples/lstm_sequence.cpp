// An LSTM sequence classifier (doc/loops.md, "A tuple of carries"). The cell's carry is two
// arrays, the hidden state h and the cell state s, so the loop is a tad::scan over
// tad::carries(h0, s0); the step returns the new pair, and the scan's value is the last h. The
// task: read 40 steps of noise and tell, at the end, the sign of the first input's sum over
// all the steps (the cell state must integrate it). Trained with Adam after clip_by_global_norm, one line per 100 steps; checks that it
// learns the task (accuracy over the last 100 batches above 0.9) and returns 1 if not.
#include <tad/linalg.hpp>

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

constexpr std::size_t T = 40, B = 32, D = 2, H = 16, C = 2, steps = 600;

}  // namespace

int main() {
  lcg g{7};
  // Per gate (input, forget, output, candidate): a recurrent matrix, an input matrix, a bias.
  std::vector<float> wi(H * H), wf(H * H), wo(H * H), wu(H * H), ui(D * H), uf(D * H), uo(D * H), uu(D * H);
  std::vector<float> bi(H), bf(H, 1.0f), bo(H), bu(H), v(H * C), c(C), zeros(B * H);
  for (auto* m : {&wi, &wf, &wo, &wu})
    for (float& e : *m) e = static_cast<float>(g.normal() / std::sqrt(double(H)));
  for (auto* m : {&ui, &uf, &uo, &uu})
    for (float& e : *m) e = static_cast<float>(g.normal());
  for (float& e : v) e = static_cast<float>(0.3 * g.normal());
  std::vector<float> xs(T * B * D);
  std::vector<int> labels(B);

  auto Wi = tad::var<"Wi">(wi.data(), H, H);
  auto Wf = tad::var<"Wf">(wf.data(), H, H);
  auto Wo = tad::var<"Wo">(wo.data(), H, H);
  auto Wu = tad::var<"Wu">(wu.data(), H, H);
  auto Ui = tad::var<"Ui">(ui.data(), D, H);
  auto Uf = tad::var<"Uf">(uf.data(), D, H);
  auto Uo = tad::var<"Uo">(uo.data(), D, H);
  auto Uu = tad::var<"Uu">(uu.data(), D, H);
  auto Bi = tad::var<"bi">(bi);
  auto Bf = tad::var<"bf">(bf);
  auto Bo = tad::var<"bo">(bo);
  auto Bu = tad::var<"bu">(bu);
  auto V = tad::var<"V">(v.data(), H, C);
  auto c0 = tad::var<"c">(c);
  auto X = tad::constant(xs.data(), T * B, D);  // step t's inputs: rows t B .. t B + B - 1
  auto zero = tad::constant(zeros.data(), B, H);

  auto cell = [&](auto h, auto s, auto x) {  // the hidden state h, the cell state s, the input x
    auto gate = [&](auto W, auto U, auto b) { return tad::matmul(h, W) + tad::matmul(x, U) + b; };
    auto s2 = tad::let<"s2">(tad::sigmoid(gate(Wf, Uf, Bf)) * s + tad::sigmoid(gate(Wi, Ui, Bi)) * tad::tanh(gate(Wu, Uu, Bu)));
    return tad::carries(tad::sigmoid(gate(Wo, Uo, Bo)) * tad::tanh(s2), s2);
  };
  auto last = tad::scan(cell, tad::carries(zero, zero), X);  // h_T, a B x H matrix
  auto logits = tad::matmul(last, V) + c0;
  const tad::program loss(tad::mean(tad::softmax_cross_entropy(logits, labels)));

  tad::parameter_set params(Wi, Wf, Wo, Wu, Ui, Uf, Uo, Uu, Bi, Bf, Bo, Bu, V, c0);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.02);
  tad::clip_by_global_norm clip(1.0);

  double window = 0;
  std::size_t right = 0, seen = 0;
  for (std::size_t step = 1; step <= steps; ++step) {
    for (std::size_t r = 0; r < B; ++r) {  // a batch: the label is the sign of the first input's sum
      double sum = 0;
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t j = 0; j < D; ++j) xs[(t * B + r) * D + j] = static_cast<float>(g.normal());
        sum += xs[(t * B + r) * D];
      }
      labels[r] = sum > 0 ? 1 : 0;
    }
    window += tad::train_step(loss, params, grads, clip, opt);
    if (step > steps - 100) {  // accuracy over the last 100 batches, after each update
      const tad::matrix<float> z = tad::value(logits);
      for (std::size_t i = 0; i < B; ++i) {
        if ((z(i, 1) > z(i, 0)) == (labels[i] == 1)) ++right;
        ++seen;
      }
    }
    if (step % 100 == 0) {
      std::printf("step %3zu  loss %.4f (mean of the last 100)\n", step, window / 100);
      window = 0;
    }
  }
  const double accuracy = static_cast<double>(right) / static_cast<double>(seen);
  std::printf("accuracy over the last 100 batches %.3f: %s\n", accuracy, accuracy > 0.9 ? "ok" : "WRONG");
  return accuracy > 0.9 ? 0 : 1;
}
