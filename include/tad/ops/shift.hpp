#pragma once
/// `shift(v)`: the vector v moved one place on, a zero first: element i is v's element i - 1,
/// element 0 is 0 (NumPy's `np.concatenate([[0], v[:-1]])`). Its adjoint is the result's
/// adjoint moved one place back: v's element j gets the result's element j + 1, v's last
/// element nothing. Reading an array at another index than the loop's is what the elementwise
/// loops cannot do, so a shift is a stage (like a staged let, core/let.hpp stage_op): the
/// program that evaluates an expression holding one (`<tad/linalg.hpp>`) computes v into its
/// workspace one element on from a zero, sums the result's adjoints there from every use, and
/// runs v's backward once on that sum read one element on (eval/program/declaration.hpp
/// plan_let, forward; eval/program/backward.hpp). Used for chains whose element i depends on
/// element i - 1 (an ODE's `y_i' = x_i y_{i-1}`, GradBench's ode), also in a scan's body.
/// doc/loops.md, "Shifts".

#include <tad/core/expression.hpp>
#include <tad/core/node.hpp>
#include <tad/ops/make.hpp>

#include <string_view>

namespace tad {

/// The op of `shift(v)`. A stage (`is_stage`): no elementwise loop evaluates it, a program
/// does (`is_shift` tells it how). forward and backward are the identity only so that the
/// node's value type is its argument's: the lowered expression holds a leaf in its place.
struct shift_op {
  static constexpr std::string_view name = "shift";
  static constexpr bool is_stage = true;
  static constexpr bool is_shift = true;
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

/// `shift(v)`: (0, v_0, v_1, ..., v_{n-2}) for a vector expression v of n elements (n = 0: an
/// empty vector). Evaluated by a tad::program (include `<tad/linalg.hpp>`); not in a constant
/// expression.
template <class V>
constexpr auto shift(const V& v) {
  if constexpr (detail::poisoned_v<V>) {
    return invalid_expression{};
  } else {
    constexpr bool is_expr = expression<V>;
    static_assert(is_expr, "tad::shift(v): v must be a tad expression");
    if constexpr (!is_expr) {
      return invalid_expression{};
    } else {
      constexpr bool vector = detail::props<V>::rank == 1 && !detail::props<V>::is_mask;
      static_assert(vector, "tad::shift(v): v must be a vector expression (not a scalar, a matrix or a mask)");
      constexpr bool custom = detail::has_custom_input_v<V>;
      static_assert(!custom, "tad::shift(v): v cannot be a custom_gradient's input inside its rule");
      if constexpr (!vector || custom) return invalid_expression{};
      else return detail::make<shift_op>(v);
    }
  }
}

}  // namespace tad
