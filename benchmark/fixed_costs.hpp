#pragma once
/// The fixed cost of each entry point: one tiny expression through grad, grad_into, value,
/// a program's grad_into, vjp and vjp_into, beside a hand-written function, shared by
/// benchmark/fixed.cpp (time) and benchmark/icount/icount.cpp (instructions).
#include <tad/linalg.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

namespace bench::work {

// ---- Fixed costs: each entry point on a tiny expression --------------------------------------

/// square(x) over 4 doubles (summed for the scalar entry points): the arithmetic is a few
/// instructions, so a call costs what its entry point costs (doc/benchmarks.md, "Fixed costs").
struct fixed_problem {
  std::vector<double> xs{0.5, -1.0, 2.0, 0.25};
  std::vector<double> g = std::vector<double>(4);
  std::vector<double> seed{1.0, -0.5, 0.25, 2.0};
};

/// The hand-written value and gradient of sum(square(x)).
inline double fixed_baseline(const std::vector<double>& x, std::vector<double>& g) {
  double v = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    v += x[i] * x[i];
    g[i] = 2 * x[i];
  }
  return v;
}

/// The entry points fixed_call knows, in doc/benchmarks.md's order.
inline constexpr std::array<const char*, 7> fixed_entries{"grad",    "grad_into", "value",   "program",
                                                          "vjp", "vjp_into",  "baseline"};

/// Calls f with a callable that runs one entry point on p (returning a number that depends on
/// the result); false for an unknown entry. A program is built here, once, not per call.
template <class F>
bool with_fixed_call(std::string_view entry, fixed_problem& p, F&& f) {
  auto x = tad::var<"x">(p.xs);
  const auto e = tad::sum(tad::square(x));
  if (entry == "grad") {
    f([&] { return std::get<1>(tad::grad(e, x))[0]; });
  } else if (entry == "grad_into") {
    f([&] { return tad::grad_into(e, tad::wrt(x, std::span<double>(p.g))); });
  } else if (entry == "value") {
    f([&] { return tad::value(e); });
  } else if (entry == "program") {
    const tad::program prog(e);
    f([&] { return prog.grad_into(tad::wrt(x, std::span<double>(p.g))); });
  } else if (entry == "vjp") {
    f([&] { return std::get<1>(tad::vjp(tad::square(x), p.seed, x))[0]; });
  } else if (entry == "vjp_into") {
    f([&] { return tad::vjp_into(tad::square(x), p.seed, tad::wrt(x, std::span<double>(p.g))); });
  } else if (entry == "baseline") {
    f([&] { return fixed_baseline(p.xs, p.g); });
  } else {
    return false;
  }
  return true;
}

}  // namespace bench::work
