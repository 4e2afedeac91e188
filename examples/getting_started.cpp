// The README's example, and doc/getting-started.md's on vjp, on array lengths and on matrices.
// The last three check their results against closed forms; the program exits with 1 if one is
// wrong.
#include <tad/tad.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <type_traits>
#include <string>
#include <vector>

namespace {

bool all_ok = true;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("WRONG: %s\n", what);
    all_ok = false;
  }
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-12 * (1 + std::abs(b)); }

void vjp_example() {
  // [vjp]
  // e = a * u^2 is array-valued: vjp gives sum(seed * e), then d/du and d/da of it.
  std::vector<double> u_data{1.0, 2.0, 3.0};
  std::vector<double> seed{0.5, -1.0, 2.0};  // e's length and element type
  double a_value = 2.0;
  auto u = tad::var<"u">(u_data);
  auto a = tad::var<"a">(a_value);
  auto [value, du, da] = tad::vjp(a * tad::square(u), seed, u, a);
  static_assert(std::is_same_v<decltype(value), double>);           // sum(seed * e)
  static_assert(std::is_same_v<decltype(du), std::vector<double>>);  // an array variable
  static_assert(std::is_same_v<decltype(da), double>);               // a scalar variable
  // [vjp]
  // Closed forms: sum(seed * e) = a S with S = sum(seed_i u_i^2), d/du_i = 2 a seed_i u_i,
  // d/da = S.
  double s = 0;
  for (std::size_t i = 0; i < u_data.size(); ++i) s += seed[i] * u_data[i] * u_data[i];
  check(near(value, a_value * s), "vjp: value");
  check(near(da, s), "vjp: d/da");
  check(du.size() == u_data.size(), "vjp: length of d/du");
  for (std::size_t i = 0; i < u_data.size() && i < du.size(); ++i) {
    check(near(du[i], 2 * a_value * seed[i] * u_data[i]), "vjp: d/du");
  }
  std::printf("vjp: sum(seed * e) %.4f  d/da %.4f  d/du [%.4f %.4f %.4f]\n", value, da, du[0], du[1], du[2]);
}

void lengths_example() {
  // [lengths]
  // A loss over parameters of different lengths: weights w (4) and biases b (2), both scaled
  // by a shared scalar s: loss = sum((s w)^2) + sum((s b)^2).
  std::vector<double> w_data{0.5, -0.25, 1.0, 2.0};
  std::vector<double> b_data{0.5, -1.5};
  double s_value = 0.5;
  auto w = tad::var<"w">(w_data);
  auto b = tad::var<"b">(b_data);
  auto s = tad::var<"s">(s_value);
  // Each sum runs over its own argument's length: one loop for w, one for b.
  auto [loss, gw, gb, gs] = tad::grad(tad::sum(tad::square(s * w)) + tad::sum(tad::square(s * b)), w, b, s);
  // Arrays combined elementwise must agree: w * b (4 against 2) is a shape_error.
  try {
    std::printf("%f\n", tad::value(tad::sum(w * b)));
  } catch (const tad::shape_error& error) {
    std::printf("%s\n", error.what());
  }
  // [lengths]
  // Closed forms: with Q = sum(w_i^2) + sum(b_i^2), loss = s^2 Q, d/ds = 2 s Q,
  // d/dw_i = 2 s^2 w_i, d/db_i = 2 s^2 b_i.
  double q = 0;
  for (double v : w_data) q += v * v;
  for (double v : b_data) q += v * v;
  check(near(loss, s_value * s_value * q), "lengths: loss");
  check(near(gs, 2 * s_value * q), "lengths: d/ds");
  check(gw.size() == w_data.size() && gb.size() == b_data.size(), "lengths: gradient lengths");
  for (std::size_t i = 0; i < w_data.size() && i < gw.size(); ++i) {
    check(near(gw[i], 2 * s_value * s_value * w_data[i]), "lengths: d/dw");
  }
  for (std::size_t i = 0; i < b_data.size() && i < gb.size(); ++i) {
    check(near(gb[i], 2 * s_value * s_value * b_data[i]), "lengths: d/db");
  }
  bool thrown = false;
  try {
    (void)tad::value(tad::sum(w * b));
  } catch (const tad::shape_error& error) {
    thrown = error.expected() == 4 && error.got() == 2 &&
             std::string(error.what()) == "tad: arrays combined elementwise differ in length: variable 'w' "
                                          "has length 4, variable 'b' has length 2";
  }
  check(thrown, "lengths: shape_error naming w and b with lengths 4 and 2");
  std::printf("loss %.6f  d/ds %.6f  d/dw[0] %.6f  d/db[0] %.6f\n", loss, gs, gw[0], gb[0]);
}

void matrix_example() {
  // [matrix]
  // A 2 x 3 matrix variable (row-major) and a constant matrix of targets of the same shape.
  tad::matrix<double> x_data{{0.5, -1.0, 2.0}, {1.5, 0.0, -0.5}};
  tad::matrix<double> targets{{1.0, 0.0, 1.0}, {1.0, 0.0, 0.0}};
  auto X = tad::var<"X">(x_data);  // views x_data; tad::var<"X">(pointer, rows, cols) also works
  auto Y = tad::constant(targets);
  // Every op works elementwise on matrices; the reductions reduce all elements.
  auto [loss, dX] = tad::grad(tad::mean(tad::square(tad::tanh(X) - Y)), X);
  static_assert(std::is_same_v<decltype(dX), tad::matrix<double>>);  // the variable's shape
  std::printf("loss %.6f  dX is %zu x %zu, dX(1, 2) = %.6f\n", loss, dX.rows(), dX.cols(), dX(1, 2));
  // [matrix]
  // Closed form: loss = mean((tanh x - y)^2), d/dx = 2 (tanh x - y) (1 - tanh^2 x) / 6.
  double want = 0;
  bool grad_ok = dX.rows() == 2 && dX.cols() == 3;
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t c = 0; c < 3; ++c) {
      const double t = std::tanh(x_data(r, c)), d = t - targets(r, c);
      want += d * d / 6;
      grad_ok = grad_ok && near(dX(r, c), 2 * d * (1 - t * t) / 6);
    }
  }
  check(near(loss, want), "matrix: loss");
  check(grad_ok, "matrix: d/dX, shape and values");
}

}  // namespace

int main() {
  // [readme]
  std::vector<double> data{0.5, -1.0, 2.0, 0.25};
  double w_value = 0.3;
  auto x = tad::var<"x">(data);     // an array variable: views `data`, no copy
  auto w = tad::var<"w">(w_value);  // a scalar variable: reads `w_value` at each evaluation

  // The expression is a type; its gradient runs as one fused SIMD loop, with no tape.
  auto loss = tad::sum(tad::square(tad::tanh(w * x) - 0.5));

  auto [value, dx, dw] = tad::grad(loss, x, w);  // value, then gradients in argument order
  std::printf("loss %.6f  d/dw %.6f  d/dx[0] %.6f\n", value, dw, dx[0]);
  // [readme]

  vjp_example();
  lengths_example();
  matrix_example();
  return all_ok ? 0 : 1;
}
