// Every binary op and the modifiers with a vector broadcast across a matrix's rows (issue 15,
// item 2; doc/shapes.md), the vector on either side, at shapes around the SIMD widths (0 x k,
// k x 0, 1 x 1, 3 x 5, 4 x 8, 7 x 9, 16 x 17, 33 x 3, 300 x 257), unaligned, float and double.
// Expected gradients: central differences of the per-element formula (d/db summed over the
// rows) or the modifier's rule by hand. In test/property (the gcc stage only, for the CI
// budget); test/eval/broadcast.cpp keeps one op in each order and the API for the other stages.
#include "support/matrix_check.hpp"

#include <tad/tad.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

using tad_test::reals;
using namespace tad_test::matrix_check;

namespace {
constexpr auto rule = tad::custom_gradient([](auto x, auto y) { return x * y; },
                                           [](auto dy, auto, auto, auto) { return tad::adjoints{2 * dy, -dy}; });
}  // namespace

BOOST_AUTO_TEST_SUITE(broadcast_ops)

BOOST_AUTO_TEST_CASE_TEMPLATE(arithmetic_both_orders, T, reals) {
  const domain any{-2, 2}, pos{0.3, 2};
  check_row_broadcast<T>("X + b", [](auto X, auto b) { return X + b; }, [](double x, double y) { return x + y; },
                         nullptr, nullptr, any, any);
  check_row_broadcast<T>("b - X", [](auto X, auto b) { return b - X; }, [](double x, double y) { return y - x; },
                         nullptr, nullptr, any, any);
  check_row_broadcast<T>("X * b", [](auto X, auto b) { return X * b; }, [](double x, double y) { return x * y; },
                         nullptr, nullptr, any, any, penalty{0.25});
  check_row_broadcast<T>("X / b", [](auto X, auto b) { return X / b; }, [](double x, double y) { return x / y; },
                         nullptr, nullptr, any, pos);
  check_row_broadcast<T>("b / X", [](auto X, auto b) { return b / X; }, [](double x, double y) { return y / x; },
                         nullptr, nullptr, pos, any);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(pow_max_min_where, T, reals) {
  const domain any{-2, 2}, pos{0.3, 2};
  check_row_broadcast<T>("pow(X, b)", [](auto X, auto b) { return tad::pow(X, b); },
                         [](double x, double y) { return std::pow(x, y); }, nullptr, nullptr, pos, any);
  check_row_broadcast<T>("pow(b, X)", [](auto X, auto b) { return tad::pow(b, X); },
                         [](double x, double y) { return std::pow(y, x); }, nullptr, nullptr, any, pos);
  // max/min pass the adjoint to the larger (smaller) operand; ties have probability 0 here.
  check_row_broadcast<T>("max(X, b) + min(b, X)", [](auto X, auto b) { return tad::max(X, b) + tad::min(b, X); },
                         [](double x, double y) { return std::max(x, y) + std::min(x, y); },
                         [](double, double, double c) { return c; }, [](double, double, double c) { return c; }, any,
                         any);
  check_row_broadcast<T>("where(X > b, X * b, b - X)",
                         [](auto X, auto b) { return tad::where(X > b, X * b, b - X); },
                         [](double x, double y) { return x > y ? x * y : y - x; },
                         [](double x, double y, double c) { return c * (x > y ? y : -1.0); },
                         [](double x, double y, double c) { return c * (x > y ? x : 1.0); }, any, any);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(modifiers_on_a_broadcast, T, reals) {
  const domain any{-2, 2};
  // clip_gradient clips the adjoint c reaching X * b, then the product rule splits it.
  check_row_broadcast<T>("clip_gradient(X * b, -0.5, 0.5)",
                         [](auto X, auto b) { return tad::clip_gradient(X * b, -0.5, 0.5); },
                         [](double x, double y) { return x * y; },
                         [](double, double y, double c) { return clip(c, -0.5, 0.5) * y; },
                         [](double x, double, double c) { return clip(c, -0.5, 0.5) * x; }, any, any);
  // stop_gradient(b) * X: no gradient reaches b; scale_gradient(X - b, 3): 3 c and -3 c.
  check_row_broadcast<T>("stop_gradient(b) * X + scale_gradient(X - b, 3)",
                         [](auto X, auto b) { return tad::stop_gradient(b) * X + tad::scale_gradient(X - b, 3.0); },
                         [](double x, double y) { return y * x + x - y; },
                         [](double, double y, double c) { return c * (y + 3); },
                         [](double, double, double c) { return -3 * c; }, any, any);
  // A custom rule with a matrix and a vector input: (2 dy, -dy).
  check_row_broadcast<T>("custom_gradient(X, b)", [](auto X, auto b) { return rule(X, b); },
                         [](double x, double y) { return x * y; }, [](double, double, double c) { return 2 * c; },
                         [](double, double, double c) { return -c; }, any, any);
}

BOOST_AUTO_TEST_SUITE_END()
