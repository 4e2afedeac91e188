// GradBench's lstm (ADBench's): l layers of a diagonal LSTM over a sequence of c characters of
// b bits; the objective is the negative mean log-likelihood of each next character under the
// prediction `h_l * out_weight + out_bias` (a logsumexp that adds 2 inside, as the reference
// does). "objective", and "jacobian" with respect to main_params and extra_params.
//
// tad: each layer is one tad::scan over the c - 1 steps whose carry is the pair (hidden, cell),
// tad::carries(h0, c0), every step's hidden state stacked (every_step): layer i's stack is layer
// i + 1's input sequence, which is what the reference computes step by step (layer i at step t
// reads layer i - 1 at t and itself at t - 1). The first layer reads the characters scaled by
// in_weight. Each layer's gate weights and biases are variables viewing main_params (its rows
// 2i and 2i + 1, b values per gate); the program is built once, in "prepare", for the l of the
// input (1 to 6; a type per l); a call allocates nothing.
#include "tool.hpp"

#include <tad/linalg.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using tad_gradbench::json;

struct data {
  std::size_t l, b, c;
  std::vector<double> main, extra, state, in, gold, gold_sums;  // in: rows 0 .. c - 2; gold: rows 1 .. c - 1
  std::vector<double> gmain, gextra;
  double value = 0;
  explicit data(const json& j)
      : l(j["main_params"].size() / 2), b(j["main_params"][0].size() / 4), c(j["sequence"].size()) {
    const auto flat = [](const json& rows) {
      std::vector<double> v;
      for (const auto& r : rows)
        for (const auto& e : r) v.push_back(e.get<double>());
      return v;
    };
    main = flat(j["main_params"]), extra = flat(j["extra_params"]), state = flat(j["state"]);
    const std::vector<double> seq = flat(j["sequence"]);
    if (c < 2) throw std::invalid_argument("lstm: the sequence needs two characters at least");
    in.assign(seq.begin(), seq.end() - static_cast<std::ptrdiff_t>(b));
    gold.assign(seq.begin() + static_cast<std::ptrdiff_t>(b), seq.end());
    gold_sums.resize(c - 1);
    for (std::size_t t = 0; t + 1 < c; ++t)
      for (std::size_t i = 0; i < b; ++i) gold_sums[t] += gold[t * b + i];
    gmain.resize(main.size()), gextra.resize(extra.size());
  }
};

/// The variable's name for main_params' J-th vector of b (layer J / 8; J % 8: the weights of
/// forget, ingate, outgate, change, then their biases).
template <std::size_t J>
constexpr auto param_name() {
  const char s[4] = {'p', static_cast<char>('0' + J / 10), static_cast<char>('0' + J % 10), '\0'};
  return tad::fixed_string(s);
}
/// That vector of main_params (or of its gradient, p = gmain).
template <std::size_t J>
auto param(const double* p, std::size_t b) {
  constexpr std::size_t layer = J / 8, row = 2 * layer + (J % 8) / 4, gate = J % 4;
  return tad::var<param_name<J>()>(std::span<const double>(p + row * 4 * b + gate * b, b));
}
/// extra_params' rows: in_weight, out_weight, out_bias.
template <std::size_t K>
auto extra(const double* p, std::size_t b) {
  if constexpr (K == 0) return tad::var<"in_w">(std::span<const double>(p, b));
  else if constexpr (K == 1) return tad::var<"out_w">(std::span<const double>(p + b, b));
  else return tad::var<"out_b">(std::span<const double>(p + 2 * b, b));
}

/// The name of layer I's new cell state (a let: each layer's is its own).
template <std::size_t I>
constexpr auto cell_name() {
  const char s[3] = {'c', static_cast<char>('0' + I), '\0'};
  return tad::fixed_string(s);
}

/// Layer I over the input sequence xs (a (c - 1) x b matrix): every step's hidden state.
template <std::size_t I, class XS>
auto layer(const data& d, const XS& xs) {
  const double* m = d.main.data();
  const std::size_t b = d.b;
  const auto wf = param<8 * I>(m, b), wi = param<8 * I + 1>(m, b), wo = param<8 * I + 2>(m, b), wc = param<8 * I + 3>(m, b);
  const auto bf = param<8 * I + 4>(m, b), bi = param<8 * I + 5>(m, b), bo = param<8 * I + 6>(m, b), bc = param<8 * I + 7>(m, b);
  const auto h0 = tad::constant(std::span<const double>(d.state.data() + 2 * I * b, b));
  const auto c0 = tad::constant(std::span<const double>(d.state.data() + (2 * I + 1) * b, b));
  const auto step = [=](auto h, auto cell, auto x) {
    const auto forget = tad::sigmoid(x * wf + bf);
    const auto ingate = tad::sigmoid(h * wi + bi);
    const auto outgate = tad::sigmoid(x * wo + bo);
    const auto change = tad::tanh(h * wc + bc);
    const auto c2 = tad::let<cell_name<I>()>(cell * forget + ingate * change);
    return tad::carries(outgate * tad::tanh(c2), c2);
  };
  return tad::scan(step, tad::carries(h0, c0), xs, tad::every_step);
}

template <std::size_t I, std::size_t L, class XS>
auto layers(const data& d, const XS& xs) {
  if constexpr (I == L) return xs;
  else return layers<I + 1, L>(d, layer<I>(d, xs));
}

/// The objective: -sum_t gold_t . (ypred_t - lse_t) / ((c - 1) b).
template <std::size_t L>
auto objective(const data& d) {
  const std::size_t T = d.c - 1, b = d.b;
  const auto xs = tad::constant(d.in.data(), T, b) * extra<0>(d.extra.data(), b);
  const auto ypred = tad::let<"y">(layers<0, L>(d, xs) * extra<1>(d.extra.data(), b) + extra<2>(d.extra.data(), b));
  const auto lse = tad::log(tad::sum(tad::exp(ypred), tad::axis<1>) + 2.0);
  const auto total = tad::sum(tad::constant(d.gold.data(), T, b) * ypred) - tad::sum(lse * tad::constant(d.gold_sums));
  return -total / static_cast<double>(T * b);
}

template <std::size_t L>
struct model {
  data& d;
  tad::program<decltype(objective<L>(std::declval<const data&>()))> program;
  explicit model(data& in) : d(in), program(objective<L>(in)) {}
  void primal() { d.value = program.value(); }
  void gradient() {
    double* gm = d.gmain.data();
    double* ge = d.gextra.data();
    const std::size_t b = d.b;
    const auto g = [&](auto v, double* at) { return tad::wrt(v, std::span<double>(at, b)); };
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      const double* m = d.main.data();
      const auto at = [&](std::size_t j) {  // where vector j of main_params is, in its gradient
        const std::size_t row = 2 * (j / 8) + (j % 8) / 4, gate = j % 4;
        return gm + row * 4 * b + gate * b;
      };
      d.value = program.grad_into(g(param<J>(m, b), at(J))..., g(extra<0>(d.extra.data(), b), ge),
                                  g(extra<1>(d.extra.data(), b), ge + b), g(extra<2>(d.extra.data(), b), ge + 2 * b));
    }(std::make_index_sequence<8 * L>{});
  }
};

/// A module's state: the data and the model of its l.
struct state {
  data d;
  std::unique_ptr<void, void (*)(void*)> m{nullptr, [](void*) {}};
  void (*primal_)(void*) = nullptr;
  void (*gradient_)(void*) = nullptr;
  template <std::size_t L>
  void make() {
    m = {new model<L>(d), [](void* p) { delete static_cast<model<L>*>(p); }};
    primal_ = [](void* p) { static_cast<model<L>*>(p)->primal(); };
    gradient_ = [](void* p) { static_cast<model<L>*>(p)->gradient(); };
  }
  explicit state(const json& in) : d(in) {
    switch (d.l) {
      case 1: make<1>(); break;
      case 2: make<2>(); break;
      case 3: make<3>(); break;
      case 4: make<4>(); break;
      case 5: make<5>(); break;
      case 6: make<6>(); break;
      default: throw std::invalid_argument("lstm: " + std::to_string(d.l) + " layers (this tool is built for 1 to 6)");
    }
  }
  void primal() { primal_(m.get()); }
  void gradient() { gradient_(m.get()); }
  json primal_output() const { return d.value; }
  json gradient_output() const {  // main_params' gradient, row by row, then extra_params'
    std::vector<double> j = d.gmain;
    j.insert(j.end(), d.gextra.begin(), d.gextra.end());
    return j;
  }
};

}  // namespace

int main(int argc, char** argv) { return tad_gradbench::serve<state>(argc, argv, "objective", "jacobian"); }
