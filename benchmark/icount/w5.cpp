// bench.icount's W5, W5tuple, W5lit (icount.hpp: why one translation unit per workload).
#include "icount.hpp"

#include "../workloads.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace bench::icount {

using namespace bench::work;

int run_w5(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  if (w == "W5lit" && tad_side) {
    // W5 with its constants as tad::lit (benchmark/w5_rosenbrock.cpp's W5_tadlit).
    w5_problem p;
    const auto vars = make_vars(p.x, std::make_index_sequence<dim>{});
    const auto e = rosenbrock_expr_lit(vars, std::make_index_sequence<dim - 1>{});
    std::array<double, dim> g{};
    count(calls, [&](int i) {
      p.perturb(i);
      benchmark::DoNotOptimize(p.x);
      benchmark::DoNotOptimize(tad_grad_into(e, vars, g, std::make_index_sequence<dim>{}));
      benchmark::DoNotOptimize(g);
    });
  } else if (w == "W5" || w == "W5tuple") {
    w5_problem p;
    const auto vars = make_vars(p.x, std::make_index_sequence<dim>{});
    const auto e = rosenbrock_expr(vars, std::make_index_sequence<dim - 1>{});
    std::array<double, dim> g{}, gh{};
    bench::expect_close("W5", tad_grad_into(e, vars, g, std::make_index_sequence<dim>{}), bench::rosenbrock(p.x, gh), tol);
    // The benchmark's loop (benchmark/w5_rosenbrock.cpp): perturb, then one call.
    if (!tad_side) {
      count(calls, [&](int i) {
        p.perturb(i);
        benchmark::DoNotOptimize(p.x);
        benchmark::DoNotOptimize(bench::rosenbrock(p.x, g));
        benchmark::DoNotOptimize(g);
      });
    } else if (w == "W5") {
      count(calls, [&](int i) {
        p.perturb(i);
        benchmark::DoNotOptimize(p.x);
        benchmark::DoNotOptimize(tad_grad_into(e, vars, g, std::make_index_sequence<dim>{}));
        benchmark::DoNotOptimize(g);
      });
    } else {
      count(calls, [&](int i) {
        p.perturb(i);
        benchmark::DoNotOptimize(p.x);
        auto r = [&]<std::size_t... K>(std::index_sequence<K...>) { return tad::grad(e, std::get<K>(vars)...); }(
            std::make_index_sequence<dim>{});
        benchmark::DoNotOptimize(r);
      });
    }
  } else {
    return no_workload(w, tad_side);
  }
  return 0;
}

}  // namespace bench::icount
