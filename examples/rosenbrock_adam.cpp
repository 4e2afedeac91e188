// Adam on the 10-variable Rosenbrock function (doc/training.md), with and without
// tad::clip_by_global_norm. One line per "epoch" of 1000 steps (loss, gradient norm); checks
// that both runs reach a low loss near the minimum (1, ..., 1), and returns 1 if not.
#include <tad/tad.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <tuple>
#include <utility>

namespace {

constexpr std::size_t dim = 10;
constexpr std::size_t epochs = 10;
constexpr std::size_t steps_per_epoch = 1000;

// [rosenbrock expression]
/// The variable names "x0" ... "x9" (compile-time strings).
template <std::size_t I>
constexpr auto x_name = [] {
  static_assert(I < 10);
  const char s[3] = {'x', static_cast<char>('0' + I), '\0'};
  return tad::fixed_string<3>(s);
}();

/// f(x) = sum_{i<9} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 over the scalar variables x0 ... x9,
/// bound to the elements of x (by reference: the optimizer's updates reach the expression).
template <std::size_t... I>
auto rosenbrock(std::array<double, dim>& x, std::index_sequence<I...>) {
  const std::tuple v{tad::var<x_name<I>>(x[I])...};
  auto term = [](const auto& xi, const auto& xj) {
    return 100.0 * tad::square(xj - tad::square(xi)) + tad::square(1.0 - xi);
  };
  auto loss = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return (... + term(std::get<K>(v), std::get<K + 1>(v)));
  }(std::make_index_sequence<dim - 1>{});
  return std::pair{loss, tad::parameter_set(std::get<I>(v)...)};
}
// [rosenbrock expression]

struct run_result {
  double loss, distance;  // final loss, and distance of x from (1, ..., 1)
  std::size_t steps_to_1e6;  // steps until the loss first fell below 1e-6 (0: never)
};

/// The norm of the gradient before the transform: clip_by_global_norm remembers it; for the
/// identity it is the norm of what is in grads.
template <class Transform, class T>
double gradient_norm(const Transform& transform, tad::gradient_set<T>& grads) {
  if constexpr (requires { transform.last_norm(); }) {
    return transform.last_norm();
  } else {
    double g2 = 0;
    for (double g : grads.all()) g2 += g * g;
    return std::sqrt(g2);
  }
}

template <class Transform>
run_result run(const char* title, Transform transform) {
  std::printf("%s\n", title);
  // [rosenbrock adam]
  std::array<double, dim> x{};
  for (std::size_t i = 0; i < dim; ++i) x[i] = i % 2 == 0 ? -1.2 : 1.0;  // the classic start
  auto [loss, params] = rosenbrock(x, std::make_index_sequence<dim>{});
  tad::gradient_set grads(params);
  tad::adam opt(params, tad::cosine_decay{.init = 0.02, .total_steps = epochs * steps_per_epoch, .alpha = 0.01});
  std::size_t steps_to_1e6 = 0;
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    double f = 0;
    for (std::size_t s = 0; s < steps_per_epoch; ++s) {
      f = tad::train_step(loss, params, grads, transform, opt);  // transform: identity or clip_by_global_norm
      if (f < 1e-6 && steps_to_1e6 == 0) steps_to_1e6 = opt.steps();
    }
    std::printf("  epoch %2zu  loss %.3e  |grad| %.3e  x0 %.6f  x9 %.6f\n", epoch, f,
                gradient_norm(transform, grads), x[0], x[9]);
  }
  // [rosenbrock adam]
  double d2 = 0;
  for (double xi : x) d2 += (xi - 1) * (xi - 1);
  return {tad::value(loss), std::sqrt(d2), steps_to_1e6};
}

int failures = 0;
void check(const char* what, bool ok) {
  std::printf("%-58s %s\n", what, ok ? "ok" : "WRONG");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  const run_result plain = run("Adam (lr: cosine decay from 0.02), no transform:", tad::identity_transform{});
  const run_result clipped = run("Adam after clip_by_global_norm(10):", tad::clip_by_global_norm(10));
  std::printf("final loss: Adam %.3e, with clipping %.3e\n", plain.loss, clipped.loss);
  std::printf("distance from (1, ..., 1): %.3e, %.3e\n", plain.distance, clipped.distance);
  std::printf("steps until loss < 1e-6: %zu, %zu\n", plain.steps_to_1e6, clipped.steps_to_1e6);
  check("Adam: final loss < 1e-8", plain.loss < 1e-8);
  check("Adam: |x - (1, ..., 1)| < 1e-3", plain.distance < 1e-3);
  check("Adam with clip_by_global_norm: final loss < 1e-8", clipped.loss < 1e-8);
  check("Adam with clip_by_global_norm: |x - (1, ..., 1)| < 1e-3", clipped.distance < 1e-3);
  std::printf("%s\n", failures != 0 ? "FAILED" : "all checks passed");
  return failures != 0 ? 1 : 0;
}
