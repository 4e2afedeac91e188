#pragma once
/// `custom_gradient(f, g)`: an op whose forward is the expression `f` builds from its inputs and
/// whose backward is the rule `g(dy, x..., y)` (TensorFlow's `tf.custom_gradient`, JAX's
/// `custom_vjp`). See doc/gradient-surgery.md.
///
/// `f` is called once, on placeholder leaves (`custom_input<K>`), when the node is built; the
/// expression it returns (the body) lives in the op and is evaluated elementwise on the values of
/// the inputs, in the same registers and loops as every other op. The inputs are the node's
/// children, so the gradient flows into them through `g` only.

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/node.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/gradient/rules.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tad {

/// The K-th input of a custom_gradient's forward, inside its body (in namespace tad, so the
/// operators on expressions are found for it).
template <std::size_t K>
struct custom_input {
  using tad_kind = detail::leaf_kind;
  using value_type = void;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  static constexpr std::size_t input_index = K;
};

namespace detail {

/// A body may combine its inputs and scalar constants elementwise, nothing else: a variable
/// inside it would get no gradient, an array or a reduction has no element to bind.
template <class E>
constexpr bool body_ok() {
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { E::input_index; }) return true;
    else return !E::is_variable && !E::is_array && !is_column_v<E> && !requires { E::is_length; };
  } else if constexpr (op_is_reduction<typename E::op_type>()) {
    return false;
  } else {
    bool ok = true;
    static_for<E::arity>([&](auto k) { ok = ok && body_ok<child_t<k.value, E>>(); });
    return ok;
  }
}

template <std::size_t K, class X0, class... X>
TAD_INLINE constexpr const auto& pick(const X0& x0, const X&... x) noexcept {
  if constexpr (K == 0) return x0; else return pick<K - 1>(x...);
}

/// The value of a body at the input values x (scalars or batches of one type V).
template <class E, class X0, class... X>
TAD_INLINE constexpr auto eval_body(const E& e, const X0& x0, const X&... x) {
  using V = X0;
  using T = simd::scalar_of_t<V>;
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { E::input_index; }) {
      return pick<E::input_index>(x0, x...);
    } else if constexpr (requires { E::num; }) {
      return simd::splat<V>(E::template as<T>());
    } else {
      return simd::splat<V>(static_cast<T>(e.value()));
    }
  } else if constexpr (E::arity == 1) {
    return e.op.forward(eval_body(e.arg, x0, x...));
  } else if constexpr (E::arity == 2) {
    return e.op.forward(eval_body(e.lhs, x0, x...), eval_body(e.rhs, x0, x...));
  } else {
    return e.op.forward(eval_body(e.a, x0, x...), eval_body(e.b, x0, x...), eval_body(e.c, x0, x...));
  }
}

/// The body `f` builds from N placeholder inputs, as an expression.
template <class F, std::size_t... K>
constexpr auto make_body(const F& f, std::index_sequence<K...>) {
  return as_expr(f(custom_input<K>{}...));
}
template <class F, std::size_t N>
using body_t = decltype(make_body(std::declval<const F&>(), std::make_index_sequence<N>{}));

}  // namespace detail

/// The op of a custom_gradient node: the forward body and the backward rule.
template <class Body, class G>
struct custom_gradient_op {
  static constexpr std::string_view name = "custom_gradient";
  /// The rule may be anything of dy (clip it, say), so no pass runs it with a unit adjoint.
  static constexpr bool adjoint_linear = false;
  using rule_type = G;
  Body body;
  G rule;
  template <class... X>
  TAD_INLINE constexpr auto forward(const X&... x) const {
    return detail::eval_body(body, x...);
  }
  template <class D, class... XY>
  TAD_INLINE constexpr auto backward(const D& dy, const XY&... xy) const {
    return detail::call_rule(rule, dy, xy...);
  }
};

/// `custom_gradient(f, g)`: a callable that builds nodes whose value is `f(x...)` and whose
/// gradient is `g(dy, x..., y)`, for one to three inputs. `f` is an expression builder (generic
/// in its arguments, e.g. `[](auto x) { return x * x; }`); `g` receives dy, the input values
/// and the output value as scalars or SIMD batches and returns one adjoint per input (a value,
/// or `tad::adjoints{...}` for several; `tad::zero{}` for none). Applied to numbers instead of
/// expressions, it returns the forward value, so it can be used inside another rule.
template <class F, class G>
class custom_gradient {
 public:
  constexpr custom_gradient(F f, G g) : f_(std::move(f)), g_(std::move(g)) {}

  template <class... X>
  constexpr auto operator()(const X&... x) const {
    constexpr std::size_t N = sizeof...(X);
    if constexpr (detail::poisoned_v<X...>) {
      return detail::invalid_expression{};
    } else if constexpr (N < 1 || N > 3) {
      static_assert(N >= 1 && N <= 3, "tad::custom_gradient(f, g)(x...): takes one to three inputs");
      return detail::invalid_expression{};
    } else if constexpr ((expression<X> || ...)) {
      return build(x...);
    } else {
      constexpr bool values = ((std::is_arithmetic_v<X> || simd::is_batch_v<X>) && ...);
      static_assert(values, "tad::custom_gradient(f, g)(x...): the inputs must be tad expressions "
                            "or numbers");
      if constexpr (values && !detail::poisoned_v<detail::body_t<F, N>>) {
        using V = std::common_type_t<X...>;
        return detail::eval_body(body<N>(), static_cast<V>(x)...);
      } else if constexpr (values) {
        return std::common_type_t<X...>{};  // f made a reported misuse (a reduction inside f)
      }
    }
  }

 private:
  template <std::size_t N>
  constexpr auto body() const {
    return detail::make_body(f_, std::make_index_sequence<N>{});
  }

  template <class... X>
  constexpr auto build(const X&... x) const {
    constexpr std::size_t N = sizeof...(X);
    constexpr bool operands = (operand<X> && ...);
    constexpr bool maskless = (!detail::props<detail::as_expr_t<X>>::is_mask && ...);
    using Body = detail::body_t<F, N>;
    constexpr bool body_ok = expression<Body> && detail::body_ok<Body>();
    constexpr bool callable = detail::rule_callable_v<G, N>;
    constexpr bool count = detail::rule_returns_count_v<G, N>;
    constexpr bool numbers = detail::rule_returns_numbers_v<G, N>;
    if constexpr (detail::poisoned_v<Body>) {
      return detail::invalid_expression{};  // f made a reported misuse (a reduction inside f)
    } else if constexpr (!operands || !maskless) {
      static_assert(operands && maskless, "tad::custom_gradient(f, g)(x...): every input must be a "
                                          "tad expression or a number, and not a comparison");
      return detail::invalid_expression{};
    } else if constexpr (!body_ok) {
      static_assert(body_ok, "tad::custom_gradient(f, g): f may combine only its inputs and "
                             "numbers, elementwise (no variables, arrays or reductions inside f: "
                             "pass them as inputs)");
      return detail::invalid_expression{};
    } else if constexpr (!callable) {
      static_assert(callable, "tad::custom_gradient(f, g): g must be callable as g(dy, x..., y) "
                              "with one x per input");
      return detail::invalid_expression{};
    } else if constexpr (!count) {
      static_assert(count, "tad::custom_gradient(f, g): g must return one adjoint per input (a "
                           "value for one input, tad::adjoints{...} for several)");
      return detail::invalid_expression{};
    } else if constexpr (!numbers) {
      static_assert(numbers, "tad::custom_gradient(f, g): g must return numbers, SIMD batches or "
                             "tad::zero");
      return detail::invalid_expression{};
    } else {
      using Op = custom_gradient_op<Body, G>;
      using Node = node<Op, detail::as_expr_t<X>...>;
      static_assert(!detail::mixes_precisions_v<Node>,
                    "tad: an expression mixes float and double variables or arrays, so its element "
                    "type is ambiguous; convert the data to one precision");
      return Node{detail::as_expr(x)..., Op{body<N>(), g_}};
    }
  }

  F f_;
  G g_;
};
template <class F, class G>
custom_gradient(F, G) -> custom_gradient<F, G>;

}  // namespace tad
