// Instruction counts per call, for tools/icount.py (doc/benchmarks.md, "Instruction counts"):
//
//   valgrind --tool=callgrind --collect-atstart=no bench.icount <workload> <tad|base> <calls>
//
// runs one workload's call `calls` times between two callgrind toggles, after one call that is
// not counted (what a first call does once, e.g. a program's workspace, is not a per-call cost),
// so callgrind's total is exactly `calls` calls. The loops are the benchmarks' (benchmark/w*.cpp,
// logreg.hpp, softmax.hpp, mlp.hpp, products.hpp), on the same data; before counting, tad's value
// is checked against the baseline's where the workload has one here ("base"; LR, MLP and SQ4 run
// their benchmark's check, value and gradients against every baseline it has). Built with fixed
// flags (-O3 -mavx2 -mfma, benchmark/icount/CMakeLists.txt), so the counts do not depend on the
// machine. Without valgrind it just runs (the toggles do nothing).
#include "../fixed_costs.hpp"
#include "../logreg.hpp"
#include "../mlp.hpp"
#include "../products.hpp"
#include "../softmax.hpp"
#include "../workloads.hpp"

#include <tad/linalg.hpp>

#include <benchmark/benchmark.h>
#include <valgrind/callgrind.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace bench::work;

/// One uncounted call, then `calls` counted ones. A function of its own per workload (not
/// inlined into run), so that adding a workload here leaves the others' code as it was.
template <class F>
[[gnu::noinline]] void count(int calls, F&& call) {
  call(0);
  CALLGRIND_TOGGLE_COLLECT;
  for (int i = 0; i < calls; ++i) {
    call(i);
    benchmark::ClobberMemory();
  }
  CALLGRIND_TOGGLE_COLLECT;
}

int run(std::string_view w, bool tad_side, int calls) {
  constexpr double tol = bench::tolerance<double>::value;
  // W1-W4, LR (rows) and SMX (columns): N = 10^3, at run time as in the benchmarks (a constant N
  // lets g++ specialize the loops, and warn about their tails).
  const volatile std::size_t n_runtime = 1000;
  const std::size_t n_small = n_runtime;
  if (w == "W1") {
    const auto xs = w1_data<double>(n_small);
    std::vector<double> g(n_small), gb(n_small);
    const auto made = w1_expression(xs);  // (no structured bindings: clang 14 cannot capture them)
    const auto& x = made.first;
    const auto& e = made.second;
    bench::expect_close("W1", tad::grad_into(e, tad::wrt(x, std::span<double>(g))),
                        bench::w1_xsimd(xs.data(), gb.data(), n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(e, tad::wrt(x, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w1_xsimd(xs.data(), g.data(), n_small)); });
  } else if (w == "W2") {
    const w2_problem p(n_small);
    std::vector<double> gy(n_small);
    double gmu = 0, gsigma = 0;
    bench::w2_grads<double> gs{};
    const auto made = w2_expression(p);
    const auto& y = std::get<0>(made);
    const auto& mu = std::get<1>(made);
    const auto& sigma = std::get<2>(made);
    const auto& e = std::get<3>(made);
    auto tad_call = [&] {
      return tad::grad_into(e, tad::wrt(mu, gmu), tad::wrt(sigma, gsigma), tad::wrt(y, std::span<double>(gy)));
    };
    bench::expect_close("W2", tad_call(), bench::w2_xsimd(p.ys.data(), p.mu, p.sigma, gy.data(), gs, n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad_call()); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w2_xsimd(p.ys.data(), p.mu, p.sigma, gy.data(), gs, n_small)); });
  } else if (w == "W3") {
    const auto xs = bench::uniform<double>(n_small, -10.0, 10.0, 3);  // benchmark/w3_logsumexp.cpp's data
    std::vector<double> g(n_small);
    auto x = tad::var<"x">(xs);
    auto e = tad::logsumexp(x);
    bench::expect_close("W3", tad::grad_into(e, tad::wrt(x, std::span<double>(g))),
                        bench::w3_xsimd_store<double>(xs.data(), g.data(), n_small), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(e, tad::wrt(x, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::w3_xsimd_store<double>(xs.data(), g.data(), n_small)); });
  } else if (w == "W4") {
    const w4_problem<double> p(n_small);
    double gw = 0, gb = 0;
    w4_grads<double> g{};
    const auto made = w4_expression(p);
    const auto& wv = std::get<0>(made);
    const auto& b = std::get<1>(made);
    const auto& e = std::get<2>(made);
    auto tad_call = [&] { return tad::grad_into(e, tad::wrt(wv, gw), tad::wrt(b, gb)); };
    auto base_call = [&] { return w4_xsimd(p.xs.data(), p.ys.data(), p.w, p.b, p.lo, p.hi, g, n_small); };
    bench::expect_close("W4", tad_call(), base_call(), tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad_call()); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(base_call()); });
  } else if (w == "W5lit" && tad_side) {
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
  } else if (w == "LR") {
    // Baseline: LR_xsimd (benchmark/logreg.hpp), the one doc/benchmarks.md's LR ratio is against.
    bench::lr::check(n_small);
    const bench::lr::lr_problem pr(n_small);
    std::vector<double> g(bench::lr::features);
    const auto made = bench::lr::lr_expression(pr);
    const auto& wv = made.first;
    const auto& L = made.second;
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(L, tad::wrt(wv, std::span<double>(g)))); });
    else count(calls, [&](int) { benchmark::DoNotOptimize(bench::lr::lr_xsimd(pr, g.data())); });
  } else if (w == "SMX") {
    // benchmark/softmax.cpp's SMX at 1,024 x 10^3 (its larger size); baseline: SMX_xsimd, the
    // "store" loop per row (benchmark/softmax.hpp), the one doc/benchmarks.md's ratio is against.
    const std::size_t cols = n_small;
    const auto xs = bench::smx::smx_data(cols);
    const auto gs = bench::smx::smx_weights(cols);
    const auto made = bench::smx::smx_expression(xs, gs, cols);
    const auto& X = made.first;
    const auto& L = made.second;
    std::vector<double> g(bench::smx::rows * cols), gb(bench::smx::rows * cols);
    // Value and gradient against the counted baseline only (bench.softmax checks the others):
    // under callgrind each of these calls costs seconds.
    bench::expect_close("SMX value", tad::grad_into(L, tad::wrt(X, std::span<double>(g))),
                        bench::smx::per_row(bench::smx::smx_xsimd_store, xs.data(), gs.data(), gb.data(), cols), tol);
    bench::expect_close<double>("SMX gradient", g, gb, tol);
    if (tad_side) count(calls, [&](int) { benchmark::DoNotOptimize(tad::grad_into(L, tad::wrt(X, std::span<double>(g)))); });
    else count(calls, [&](int) {
      benchmark::DoNotOptimize(bench::smx::per_row(bench::smx::smx_xsimd_store, xs.data(), gs.data(), g.data(), cols));
    });
  } else if (w == "MLP") {
    // Float, as MLPf; baseline: MLPf_eigen, the step by hand with Eigen (benchmark/mlp.hpp).
    bench::mlp::check<float>();
    bench::mlp::data<float> d;
    if (tad_side) {
      const auto made = bench::mlp::tad_loss(d);
      const auto& W1 = std::get<1>(made);
      const auto& B1 = std::get<2>(made);
      const auto& W2 = std::get<3>(made);
      const auto& B2 = std::get<4>(made);
      const tad::program p(std::get<0>(made));
      count(calls, [&](int) {
        benchmark::DoNotOptimize(p.grad_into(tad::wrt(W1, d.g1), tad::wrt(B1, d.gb1), tad::wrt(W2, d.g2), tad::wrt(B2, d.gb2)));
      });
    } else {
      bench::mlp::eigen_mlp<float> e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else if (w == "SQ4") {
    // benchmark/products.cpp's SQ at n = 4: a program call whose products are tiny, so its
    // fixed cost shows. Baseline: SQ_eigen, the same by hand with Eigen (benchmark/products.hpp).
    constexpr std::size_t n = 4;
    bench::sq::check(n);
    bench::sq::data d{n};
    if (tad_side) {
      const auto made = bench::sq::tad_sq(d);
      const auto& A = std::get<1>(made);
      const auto& B = std::get<2>(made);
      const tad::program p(std::get<0>(made));
      count(calls, [&](int) { benchmark::DoNotOptimize(p.grad_into(tad::wrt(A, d.ga), tad::wrt(B, d.gb))); });
    } else {
      bench::sq::eigen_sq e{d};
      count(calls, [&](int) { benchmark::DoNotOptimize(e.step()); });
    }
  } else if (w.starts_with("F_") && tad_side) {
    // The fixed cost of one entry point (benchmark/fixed_costs.hpp): F_grad, F_grad_into, ...
    fixed_problem p;
    if (!with_fixed_call(w.substr(2), p, [&](auto call) {
          count(calls, [&](int) {
            benchmark::DoNotOptimize(p.xs.data());
            benchmark::DoNotOptimize(call());
          });
        }))
      return 2;
  } else {
    std::fprintf(stderr, "bench.icount: no workload '%.*s' with side '%s'\n", static_cast<int>(w.size()), w.data(),
                 tad_side ? "tad" : "base");
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bench.icount <workload> <tad|base> <calls>\n");
    return 2;
  }
  const std::string_view side = argv[2];
  if (side != "tad" && side != "base") {
    std::fprintf(stderr, "bench.icount: side must be tad or base, not '%s'\n", argv[2]);
    return 2;
  }
  return run(argv[1], side == "tad", std::atoi(argv[3]));
}
