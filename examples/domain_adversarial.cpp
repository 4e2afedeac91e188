// A small domain-adversarial model (Ganin & Lempitsky) with scalar parameters and 1-D arrays
// (doc/training.md). An encoder h = tanh(a x + c) feeds a label predictor sigmoid(u h + d),
// trained on labelled source data, and a domain classifier sigmoid(r h' + q), trained to tell
// source (0) from unlabelled target (1) data, where h' = reverse_gradient(h, lambda): the
// classifier learns as usual, the encoder gets the reversed gradient and learns features the
// classifier cannot separate. Trained with the reversal (lambda from tad::reversal_schedule)
// and without it (lambda = 0: the domain head still learns, the encoder ignores it). One line
// per epoch; checks that the labels are learnt in both runs and that the reversal brings the
// domain accuracy closer to 0.5; returns 1 if a check fails.
#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <numeric>
#include <utility>
#include <vector>

namespace {

/// A small deterministic generator (64-bit LCG) with normal deviates (Box-Muller).
struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * std::numbers::pi * uniform()); }
};

constexpr std::size_t n = 200;  // samples per domain
constexpr std::size_t batch = 50;
constexpr std::size_t epochs = 40;
constexpr double spread = 0.3;   // standard deviation of each class
constexpr double offset = 1.25;  // the domain shift

/// Source: class 0 around -1, class 1 around +1; target: the same classes moved by `offset`
/// (its labels are not used in training, only to report the accuracy there).
struct data_set {
  std::vector<double> xs, ts, xt, tt;
};
data_set make_data() {
  lcg g{2024};
  data_set d;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i % 2);
    d.xs.push_back(2 * t - 1 + spread * g.normal());
    d.ts.push_back(t);
    d.xt.push_back(2 * t - 1 + offset + spread * g.normal());
    d.tt.push_back(t);
  }
  return d;
}

struct params_t {
  double a = 0.5, c = 0, u = 0.1, d = 0, r = 0.1, q = 0;
};

struct metrics {
  double label_acc, target_acc, domain_acc;
};

metrics evaluate(const data_set& ds, const params_t& p) {
  std::size_t label = 0, target = 0, domain = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double hs = std::tanh(p.a * ds.xs[i] + p.c), ht = std::tanh(p.a * ds.xt[i] + p.c);
    if ((p.u * hs + p.d > 0) == (ds.ts[i] > 0.5)) ++label;
    if ((p.u * ht + p.d > 0) == (ds.tt[i] > 0.5)) ++target;
    if (p.r * hs + p.q <= 0) ++domain;  // source classified as source
    if (p.r * ht + p.q > 0) ++domain;   // target classified as target
  }
  const double nn = static_cast<double>(n);
  return {static_cast<double>(label) / nn, static_cast<double>(target) / nn, static_cast<double>(domain) / (2 * nn)};
}

metrics train(const char* title, const data_set& ds, bool reversal) {
  std::printf("%s\n", title);
  std::vector<double> xs(batch), ts(batch), xt(batch);  // the current mini-batches
  std::vector<std::size_t> os(n), ot(n);
  std::iota(os.begin(), os.end(), std::size_t{0});
  std::iota(ot.begin(), ot.end(), std::size_t{0});
  lcg shuffle{99};
  params_t p;
  // [domain adversarial model]
  auto a = tad::var<"a">(p.a);  // encoder h = tanh(a x + c)
  auto c = tad::var<"c">(p.c);
  auto u = tad::var<"u">(p.u);  // label predictor sigmoid(u h + d)
  auto d = tad::var<"d">(p.d);
  auto r = tad::var<"r">(p.r);  // domain classifier sigmoid(r h + q)
  auto q = tad::var<"q">(p.q);
  auto x_s = tad::constant(xs), t_s = tad::constant(ts), x_t = tad::constant(xt);
  auto h_s = tad::tanh(a * x_s + c), h_t = tad::tanh(a * x_t + c);
  // Binary cross-entropy of logits z with labels t: mean(softplus(z) - t z).
  auto label_logit = u * h_s + d;
  auto label_loss = tad::mean(tad::softplus(label_logit) - t_s * label_logit);
  double lambda = 0;  // the reversal strength, re-read at every evaluation
  auto dom_s = r * tad::reverse_gradient(h_s, tad::constant_ref(lambda)) + q;  // domain 0
  auto dom_t = r * tad::reverse_gradient(h_t, tad::constant_ref(lambda)) + q;  // domain 1
  auto domain_loss = 0.5 * (tad::mean(tad::softplus(dom_s)) + tad::mean(tad::softplus(dom_t) - dom_t));
  auto loss = label_loss + domain_loss;

  tad::parameter_set params(a, c, u, d, r, q);
  tad::gradient_set grads(params);
  tad::identity_transform no_transform;
  tad::adam opt(params, 0.05);
  const tad::reversal_schedule strength{.total_steps = epochs, .gamma = 10};
  // [domain adversarial model]
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    lambda = reversal ? strength(epoch - 1) : 0.0;  // without the reversal the encoder ignores the domain head
    for (std::size_t i = n - 1; i > 0; --i) {
      std::swap(os[i], os[static_cast<std::size_t>(shuffle.uniform() * static_cast<double>(i + 1))]);
      std::swap(ot[i], ot[static_cast<std::size_t>(shuffle.uniform() * static_cast<double>(i + 1))]);
    }
    double epoch_loss = 0;
    for (std::size_t s = 0; s < n / batch; ++s) {
      for (std::size_t j = 0; j < batch; ++j) {
        xs[j] = ds.xs[os[s * batch + j]];
        ts[j] = ds.ts[os[s * batch + j]];
        xt[j] = ds.xt[ot[s * batch + j]];
      }
      epoch_loss += tad::train_step(loss, params, grads, no_transform, opt) / static_cast<double>(n / batch);  // NOLINT(bugprone-integer-division): n / batch batches, exactly
    }
    const metrics m = evaluate(ds, p);
    std::printf("  epoch %2zu  lambda %.3f  loss %.4f  label acc %.3f  domain acc %.3f  (target label acc %.3f, "
                "encoder threshold x = %5.2f)\n",
                epoch, lambda, epoch_loss, m.label_acc, m.domain_acc, m.target_acc, -p.c / p.a);
  }
  return evaluate(ds, p);
}

int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-62s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const data_set ds = make_data();
  const metrics with = train("with gradient reversal (lambda from reversal_schedule):", ds, true);
  const metrics without = train("without (lambda = 0):", ds, false);
  std::printf("with reversal:    label acc %.3f  domain acc %.3f  target label acc %.3f\n", with.label_acc,
              with.domain_acc, with.target_acc);
  std::printf("without reversal: label acc %.3f  domain acc %.3f  target label acc %.3f\n", without.label_acc,
              without.domain_acc, without.target_acc);
  check("label accuracy > 0.95 in both runs", with.label_acc > 0.95 && without.label_acc > 0.95);
  check("domain accuracy closer to 0.5 with the reversal",
        std::abs(with.domain_acc - 0.5) < std::abs(without.domain_acc - 0.5));
  check("target label accuracy higher with the reversal", with.target_acc > without.target_acc);
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
