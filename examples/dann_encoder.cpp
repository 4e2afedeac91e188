// A domain-adversarial network (Ganin & Lempitsky) with a real encoder (doc/linear-algebra.md,
// doc/training.md): 2-D inputs, an encoder h = tanh(X We + be) of 16 features, a label head
// h wl + d (binary, trained on labelled source data) and a domain head behind
// reverse_gradient(h, lambda), r^T h + q, trained to tell source (0) from unlabelled target (1)
// data. With the reversal (lambda from tad::reversal_schedule) the encoder learns features the
// domain head cannot separate; without it (lambda = 0) the domain head still learns but the
// encoder ignores it. One line per epoch with label and domain accuracy; checks that the labels
// are learnt in both runs, that the reversal brings the domain accuracy closer to 0.5 and raises
// the target's label accuracy; returns 1 if a check fails.
#include <tad/linalg.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <numeric>
#include <utility>
#include <vector>

namespace {

struct lcg {
  std::uint64_t s;
  double uniform() {  // in (0, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * std::numbers::pi * uniform()); }
};

constexpr std::size_t n = 200, batch = 50, epochs = 40, features = 16;

/// Source: class 0 around (-1, 0), class 1 around (1, 0); target: the same classes moved by
/// (1.25, 0.5) (its labels only report the accuracy there).
struct data_set {
  std::vector<double> xs, ts, xt, tt;  // xs, xt: n x 2 row-major
};
data_set make_data() {
  lcg g{2024};
  data_set d;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i % 2);
    d.xs.push_back(2 * t - 1 + 0.3 * g.normal());
    d.xs.push_back(0.3 * g.normal());
    d.ts.push_back(t);
    d.xt.push_back(2 * t - 1 + 1.25 + 0.3 * g.normal());
    d.xt.push_back(0.5 + 0.3 * g.normal());
    d.tt.push_back(t);
  }
  return d;
}

struct metrics {
  double label_acc, target_acc, domain_acc;
};

metrics train(const char* title, const data_set& ds, bool reversal) {
  std::printf("%s\n", title);
  lcg g{5};
  std::vector<double> we(2 * features), be(features), wl(features), wd(features);
  for (double& w : we) w = 0.5 * g.normal();
  for (double& w : wl) w = 0.1 * g.normal();
  for (double& w : wd) w = 0.1 * g.normal();
  double d = 0, q = 0;
  std::vector<double> xs(batch * 2), ts(batch), xt(batch * 2);  // the current mini-batches
  // [encoder with two heads]
  auto We = tad::var<"We">(we.data(), 2, features);
  auto Be = tad::var<"be">(be);
  auto Wl = tad::var<"wl">(wl);  // label head: h wl + d
  auto D = tad::var<"d">(d);
  auto Wd = tad::var<"wd">(wd);  // domain head: reverse_gradient(h) wd + q
  auto Q = tad::var<"q">(q);
  auto h_s = tad::tanh(tad::matmul(tad::constant(xs.data(), batch, 2), We) + Be);
  auto h_t = tad::tanh(tad::matmul(tad::constant(xt.data(), batch, 2), We) + Be);
  auto label_logit = tad::matmul(h_s, Wl) + D;  // one logit per source sample
  auto label_loss = tad::mean(tad::softplus(label_logit) - tad::constant(ts) * label_logit);
  double lambda = 0;  // the reversal strength, re-read at every evaluation
  auto dom_s = tad::matmul(tad::reverse_gradient(h_s, tad::constant_ref(lambda)), Wd) + Q;  // domain 0
  auto dom_t = tad::matmul(tad::reverse_gradient(h_t, tad::constant_ref(lambda)), Wd) + Q;  // domain 1
  auto domain_loss = 0.5 * (tad::mean(tad::softplus(dom_s)) + tad::mean(tad::softplus(dom_t) - dom_t));
  const tad::program loss(label_loss + domain_loss);
  // [encoder with two heads]
  tad::parameter_set params(We, Be, Wl, D, Wd, Q);
  tad::gradient_set grads(params);
  tad::adam opt(params, 0.05);
  const tad::reversal_schedule strength{.total_steps = epochs, .gamma = 10};

  auto all_s = tad::tanh(tad::matmul(tad::constant(ds.xs.data(), n, 2), We) + Be);
  auto all_t = tad::tanh(tad::matmul(tad::constant(ds.xt.data(), n, 2), We) + Be);
  auto label_s = tad::matmul(all_s, Wl) + D, label_t = tad::matmul(all_t, Wl) + D;
  auto domain_s = tad::matmul(all_s, Wd) + Q, domain_t = tad::matmul(all_t, Wd) + Q;
  const auto measure = [&] {
    const std::vector<double> ls = tad::value(label_s), lt = tad::value(label_t);
    const std::vector<double> zs = tad::value(domain_s), zt = tad::value(domain_t);
    std::size_t label = 0, target = 0, domain = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if ((ls[i] > 0) == (ds.ts[i] > 0.5)) ++label;
      if ((lt[i] > 0) == (ds.tt[i] > 0.5)) ++target;
      if (zs[i] <= 0) ++domain;  // source classified as source
      if (zt[i] > 0) ++domain;   // target classified as target
    }
    const double nn = static_cast<double>(n);
    return metrics{static_cast<double>(label) / nn, static_cast<double>(target) / nn,
                   static_cast<double>(domain) / (2 * nn)};
  };

  std::vector<std::size_t> os(n), ot(n);
  std::iota(os.begin(), os.end(), std::size_t{0});
  std::iota(ot.begin(), ot.end(), std::size_t{0});
  metrics m{};
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    lambda = reversal ? strength(epoch - 1) : 0.0;
    for (std::size_t i = n - 1; i > 0; --i) {
      std::swap(os[i], os[static_cast<std::size_t>(g.uniform() * static_cast<double>(i + 1))]);
      std::swap(ot[i], ot[static_cast<std::size_t>(g.uniform() * static_cast<double>(i + 1))]);
    }
    double epoch_loss = 0;
    for (std::size_t s = 0; s < n / batch; ++s) {
      for (std::size_t j = 0; j < batch; ++j) {
        const std::size_t a = os[s * batch + j], b = ot[s * batch + j];
        xs[2 * j] = ds.xs[2 * a], xs[2 * j + 1] = ds.xs[2 * a + 1], ts[j] = ds.ts[a];
        xt[2 * j] = ds.xt[2 * b], xt[2 * j + 1] = ds.xt[2 * b + 1];
      }
      epoch_loss += tad::train_step(loss, params, grads, tad::identity_transform{}, opt);
    }
    m = measure();
    const double steps = static_cast<double>(n) / static_cast<double>(batch);
    std::printf("  epoch %2zu  lambda %.3f  loss %.4f  label acc %.3f  domain acc %.3f  (target label acc %.3f)\n",
                epoch, lambda, epoch_loss / steps, m.label_acc, m.domain_acc, m.target_acc);
  }
  return m;
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
