// isa_dump: values and gradients of a fixed set of expressions, to compare builds for
// different instruction sets (doc/testing.md, "Instruction sets").
//
//   isa_dump FILE                  writes every result to FILE (one per line, hex floats)
//   isa_dump --compare FILE        computes the same results and compares them with FILE,
//                                  written by another build; exit 1 on any difference beyond
//                                  the tolerances below, listing each
//
// The expressions cover elementwise ops, reductions (whose partial sums depend on the SIMD
// width and TAD_UNROLL), multi-pass expressions, modifiers, custom rules, a let and a vector
// broadcast across a matrix's rows, in float and double, at lengths around every SIMD width,
// on unaligned data. Tolerances, relative with a floor of 1:
// 1e-12 in double and 2e-5 in float: the results differ by the order of a reduction's
// additions (n up to 1000 terms of size ~1: n * eps ~ 2e-13 / 1.2e-4 at worst, ~sqrt(n) * eps
// in practice) and by FMA contraction (one rounding per multiply-add).
#include <tad/tad.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using results = std::map<std::string, double>;

template <class T>
std::vector<T> data(std::size_t n, double phase) {
  std::vector<T> v(n + 1);  // v[0] is skipped: the variable's data is unaligned
  // 7 i / 10, not 0.7 i: g++ contracts `0.7 * i + phase` into an FMA in the native build (C++
  // allows it), so the two builds would start from different inputs; a division cannot be.
  for (std::size_t i = 0; i <= n; ++i) v[i] = static_cast<T>(1.5 * std::sin(static_cast<double>(7 * i) / 10 + phase));
  return v;
}

template <class T>
void add(results& r, const std::string& key, const std::vector<T>& g) {
  for (std::size_t i = 0; i < g.size(); ++i) r[key + "[" + std::to_string(i) + "]"] = static_cast<double>(g[i]);
}

/// Records value and gradients of build(x, s) for x of length n and a scalar s.
template <class T, class Build>
void record(results& r, const std::string& name, std::size_t n, Build build) {
  std::vector<T> xs = data<T>(n, 0.3);
  T sv = T(0.75);
  auto x = tad::var<"x">(xs.data() + 1, n);
  auto s = tad::var<"s">(sv);
  const auto e = build(x, s);
  const std::string key = name + (std::is_same_v<T, float> ? " float" : " double") + " n=" + std::to_string(n);
  if constexpr (tad::is_array_v<std::remove_cvref_t<decltype(e)>>) {
    add(r, key + " value", tad::value(e));
    std::vector<T> seed = data<T>(n, 1.1);
    seed.erase(seed.begin());
    const auto [v, gx, gs] = tad::vjp(e, seed, x, s);
    r[key + " vjp value"] = static_cast<double>(v);
    add(r, key + " vjp x", gx);
    r[key + " vjp s"] = static_cast<double>(gs);
  } else {
    const auto [v, gx, gs] = tad::grad(e, x, s);
    r[key + " value"] = static_cast<double>(v);
    add(r, key + " grad x", gx);
    r[key + " grad s"] = static_cast<double>(gs);
  }
}

/// A custom rule of two inputs (not their derivative: dy * y and dy * x * x).
constexpr auto custom = tad::custom_gradient([](auto a, auto b) { return a * b; },
                                             [](auto dy, auto a, auto b, auto) { return tad::adjoints{dy * b, dy * a * a}; });

/// A vector of length n broadcast across the rows of a 3 x n matrix (a row nest: one SIMD
/// loop per row, the vector's gradient summed over the rows).
template <class T>
void record_broadcast(results& r, std::size_t n) {
  std::vector<T> xs(3 * n + 1), bs = data<T>(n, 0.3);
  for (std::size_t k = 0; k < 3; ++k) {
    const std::vector<T> row = data<T>(n, 0.9 + static_cast<double>(k));
    std::copy(row.begin() + 1, row.end(), xs.begin() + 1 + static_cast<std::ptrdiff_t>(k * n));
  }
  auto X = tad::var<"X">(xs.data() + 1, 3, n);
  auto b = tad::var<"b">(bs.data() + 1, n);
  const auto e = tad::sum(tad::exp(X * b) - tad::square(X - b)) + tad::logsumexp(X + b) + tad::squared_norm(b);
  const std::string key = std::string("broadcast") + (std::is_same_v<T, float> ? " float" : " double") +
                          " n=" + std::to_string(n);
  const auto [v, gX, gb] = tad::grad(e, X, b);
  r[key + " value"] = static_cast<double>(v);
  add(r, key + " grad X", std::vector<T>(gX.begin(), gX.end()));
  add(r, key + " grad b", gb);
}

template <class T>
void record_all(results& r) {
  for (std::size_t n : {0u, 1u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u, 1000u}) {
    record<T>(r, "elementwise", n, [](auto x, auto s) {
      return tad::exp(tad::sin(x)) * s + tad::log1p(tad::square(x)) - tad::tanh(x * s) + tad::sqrt(tad::abs(x) + 1);
    });
    record<T>(r, "pow_min_max", n, [](auto x, auto s) {
      return tad::pow(tad::abs(x) + 0.5, s) + tad::max(x, s) - tad::min(x * 2, s) + tad::where(x > 0, x, s);
    });
    if (n == 0) continue;  // the reductions below are defined for n > 0 only (max, min)
    record<T>(r, "reductions", n, [](auto x, auto s) {
      return tad::sum(tad::sigmoid(x) * s) + tad::logsumexp(x) + tad::norm(x) + tad::max(x) - tad::min(x) +
             tad::mean(tad::softplus(x));
    });
    record<T>(r, "multipass", n, [](auto x, auto s) {
      return tad::sum(tad::square(x - tad::mean(x)) * s) / (tad::sum(tad::exp(x - tad::max(x))) + 1);
    });
    record<T>(r, "modifiers", n, [](auto x, auto s) {
      return tad::sum(tad::clip_gradient(tad::square(x) * s, -0.5, 0.5) + tad::stop_gradient(x) * x +
                      tad::scale_gradient(tad::cos(x), 0.5) + tad::reverse_gradient(x * s, 2.0));
    });
    // Custom rules, straight-through and a shared clip (the modifiers of test/gradient, which
    // the sse2 stage does not build: their SIMD code is compared here).
    record<T>(r, "custom_let", n, [](auto x, auto s) {
      const auto c = tad::let<"c">(tad::clip_gradient(x * s, -0.3, 0.3));
      return tad::sum(custom(x, s) + tad::straight_through(tad::round(x * 2) / 2, x) * s + c * c + c);
    });
    record_broadcast<T>(r, n);
  }
}

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

}  // namespace

int main(int argc, char** argv) {
  const bool compare = argc == 3 && std::string(argv[1]) == "--compare";
  if (!(argc == 2 && argv[1][0] != '-') && !compare) {
    std::cerr << "usage: isa_dump FILE | isa_dump --compare FILE\n";
    return 2;
  }
  results r;
  record_all<float>(r);
  record_all<double>(r);
  const std::string file = argv[argc - 1];
  if (!compare) {
    std::ofstream out(file);
    for (const auto& [key, v] : r) out << std::hexfloat << v << ' ' << key << '\n';
    if (!out) {
      std::cerr << "isa_dump: cannot write " << file << '\n';
      return 2;
    }
    std::cout << "isa_dump: " << r.size() << " results written to " << file << '\n';
    return 0;
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "isa_dump: cannot read " << file << '\n';
    return 2;
  }
  std::size_t seen = 0, bad = 0;
  std::string line;
  std::cerr << std::setprecision(17);
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string hex, key;
    ls >> hex;
    std::getline(ls >> std::ws, key);
    const double theirs = std::strtod(hex.c_str(), nullptr);
    const auto it = r.find(key);
    if (it == r.end()) {
      std::cerr << "isa_dump: " << key << " is in " << file << " only\n";
      ++bad;
      continue;
    }
    ++seen;
    const double ours = it->second;
    const double tol = key.find(" float ") != std::string::npos ? tolerance<float>() : tolerance<double>();
    const bool ok = (std::isnan(ours) && std::isnan(theirs)) || ours == theirs ||
                    std::abs(ours - theirs) <= tol * std::max(1.0, std::abs(theirs));
    if (!ok) {
      std::cerr << "isa_dump: " << key << ": " << ours << " here, " << theirs << " in " << file << '\n';
      ++bad;
    }
  }
  if (seen != r.size()) {
    std::cerr << "isa_dump: " << r.size() - seen << " results missing from " << file << '\n';
    ++bad;
  }
  std::cout << "isa_dump: " << seen << " results compared with " << file << ", " << bad << " differ\n";
  return bad == 0 ? 0 : 1;
}
