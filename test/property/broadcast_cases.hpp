#pragma once
// The cases of test/property/broadcast_ops.cpp (a vector as a row of X, broadcast across its
// rows) and test/property/column_ops.cpp (as a column, `as_column(b)`, broadcast across its
// columns): every binary op and the modifiers, the vector on either side, at shapes around the
// SIMD widths (0 x k, k x 0, 1 x 1, 3 x 5, 4 x 8, 7 x 9, 16 x 17, 33 x 3, 300 x 257),
// unaligned, float and double. Expected gradients: central differences of the per-element
// formula (d/db summed over the rows, or the columns) or the modifier's rule by hand.
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <algorithm>
#include <cmath>

namespace tad_test::broadcast_cases {

using namespace tad_test::matrix_check;

inline constexpr auto rule = tad::custom_gradient([](auto x, auto y) { return x * y; },
                                                  [](auto dy, auto, auto, auto) { return tad::adjoints{2 * dy, -dy}; });

template <class T, form F>
void arithmetic_both_orders() {
  const domain any{-2, 2}, pos{0.3, 2};
  check_broadcast<T, F>("X + b", [](auto X, auto b) { return X + b; }, [](double x, double y) { return x + y; },
                        nullptr, nullptr, any, any);
  check_broadcast<T, F>("b - X", [](auto X, auto b) { return b - X; }, [](double x, double y) { return y - x; },
                        nullptr, nullptr, any, any);
  check_broadcast<T, F>("X * b", [](auto X, auto b) { return X * b; }, [](double x, double y) { return x * y; },
                        nullptr, nullptr, any, any, penalty{0.25});
  check_broadcast<T, F>("X / b", [](auto X, auto b) { return X / b; }, [](double x, double y) { return x / y; },
                        nullptr, nullptr, any, pos);
  check_broadcast<T, F>("b / X", [](auto X, auto b) { return b / X; }, [](double x, double y) { return y / x; },
                        nullptr, nullptr, pos, any);
}

template <class T, form F>
void pow_max_min_where() {
  const domain any{-2, 2}, pos{0.3, 2};
  check_broadcast<T, F>("pow(X, b)", [](auto X, auto b) { return tad::pow(X, b); },
                        [](double x, double y) { return std::pow(x, y); }, nullptr, nullptr, pos, any);
  check_broadcast<T, F>("pow(b, X)", [](auto X, auto b) { return tad::pow(b, X); },
                        [](double x, double y) { return std::pow(y, x); }, nullptr, nullptr, any, pos);
  // max/min pass the adjoint to the larger (smaller) operand; ties have probability 0 here.
  check_broadcast<T, F>("max(X, b) + min(b, X)", [](auto X, auto b) { return tad::max(X, b) + tad::min(b, X); },
                        [](double x, double y) { return std::max(x, y) + std::min(x, y); },
                        [](double, double, double c) { return c; }, [](double, double, double c) { return c; }, any,
                        any);
  check_broadcast<T, F>("where(X > b, X * b, b - X)",
                        [](auto X, auto b) { return tad::where(X > b, X * b, b - X); },
                        [](double x, double y) { return x > y ? x * y : y - x; },
                        [](double x, double y, double c) { return c * (x > y ? y : -1.0); },
                        [](double x, double y, double c) { return c * (x > y ? x : 1.0); }, any, any);
}

template <class T, form F>
void modifiers_on_a_broadcast() {
  const domain any{-2, 2};
  // clip_gradient clips the adjoint c reaching X * b, then the product rule splits it.
  check_broadcast<T, F>("clip_gradient(X * b, -0.5, 0.5)",
                        [](auto X, auto b) { return tad::clip_gradient(X * b, -0.5, 0.5); },
                        [](double x, double y) { return x * y; },
                        [](double, double y, double c) { return clip(c, -0.5, 0.5) * y; },
                        [](double x, double, double c) { return clip(c, -0.5, 0.5) * x; }, any, any);
  // stop_gradient(b) * X: no gradient reaches b; scale_gradient(X - b, 3): 3 c and -3 c.
  check_broadcast<T, F>("stop_gradient(b) * X + scale_gradient(X - b, 3)",
                        [](auto X, auto b) { return tad::stop_gradient(b) * X + tad::scale_gradient(X - b, 3.0); },
                        [](double x, double y) { return y * x + x - y; },
                        [](double, double y, double c) { return c * (y + 3); },
                        [](double, double, double c) { return -3 * c; }, any, any);
  // A custom rule with a matrix and a vector input: (2 dy, -dy).
  check_broadcast<T, F>("custom_gradient(X, b)", [](auto X, auto b) { return rule(X, b); },
                        [](double x, double y) { return x * y; }, [](double, double, double c) { return 2 * c; },
                        [](double, double, double c) { return -c; }, any, any);
}

}  // namespace tad_test::broadcast_cases
