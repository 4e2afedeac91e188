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

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
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

template <class R>
inline constexpr bool is_std_tuple_v = false;
template <class... A>
inline constexpr bool is_std_tuple_v<std::tuple<A...>> = true;

/// Does `f`, called on N placeholder inputs, return a std::tuple (several outputs)?
template <class F, std::size_t... K>
constexpr bool returns_tuple(std::index_sequence<K...>) {
  if constexpr (std::is_invocable_v<const F&, custom_input<K>...>)
    return is_std_tuple_v<std::remove_cvref_t<std::invoke_result_t<const F&, custom_input<K>...>>>;
  else return false;
}
template <class F, std::size_t N>
inline constexpr bool returns_tuple_v = returns_tuple<F>(std::make_index_sequence<N>{});

/// The body `f` builds from N placeholder inputs, as an expression; of several outputs, a
/// std::tuple of expressions.
template <class F, std::size_t... K>
constexpr auto make_body(const F& f, std::index_sequence<K...>) {
  if constexpr (returns_tuple_v<F, sizeof...(K)>) {
    return std::apply([](const auto&... o) { return std::tuple{as_expr(o)...}; }, f(custom_input<K>{}...));
  } else {
    return as_expr(f(custom_input<K>{}...));
  }
}
template <class F, std::size_t N>
using body_t = decltype(make_body(std::declval<const F&>(), std::make_index_sequence<N>{}));

/// Are all of a tuple's bodies well formed (expressions of inputs and numbers, elementwise)?
template <class Bodies>
inline constexpr bool bodies_ok_v = false;
template <class... B>
inline constexpr bool bodies_ok_v<std::tuple<B...>> = sizeof...(B) >= 1 && ((expression<B> && body_ok<B>()) && ...);
template <class Bodies>
inline constexpr bool bodies_poisoned_v = false;
template <class... B>
inline constexpr bool bodies_poisoned_v<std::tuple<B...>> = poisoned_v<B...>;

/// A rule of K outputs and N inputs: called as `rule(dy_0, ..., dy_{K-1}, x_0, ..., x_{N-1},
/// y_0, ..., y_{K-1})`, all of type V.
template <class Rule, std::size_t K, std::size_t N, class V = double>
struct multi_rule {
  template <std::size_t>
  using same = V;
  template <std::size_t... I>
  static auto result(std::index_sequence<I...>) {
    if constexpr (std::is_invocable_v<const Rule&, same<I>...>)
      return std::type_identity<std::remove_cvref_t<std::invoke_result_t<const Rule&, same<I>...>>>{};
    else return std::type_identity<void>{};
  }
  using type = typename decltype(result(std::make_index_sequence<2 * K + N>{}))::type;
  static constexpr bool callable = !std::is_void_v<type>;
  static constexpr bool count = [] {
    if constexpr (callable) return adjoint_count_v<type> == N; else return false;
  }();
  static constexpr bool numbers = [] {
    if constexpr (callable) return adjoint_entries_v<type>; else return false;
  }();
  /// Does it give input I a structural zero (decided with doubles)?
  template <std::size_t I>
  static constexpr bool zero_at() {
    if constexpr (count) return is_zero_v<std::remove_cvref_t<decltype(adjoint_at<I>(std::declval<const type&>()))>>;
    else return false;
  }
};

/// `rule(d..., x..., y...)` on arrays of K, N and K values of one type V, as `adjoints{...}` of
/// N entries in V (tad::zero stays).
template <std::size_t N, class Rule, class V, std::size_t K, std::size_t NX>
TAD_INLINE auto call_multi_rule(const Rule& rule, const std::array<V, K>& d, const std::array<V, NX>& x,
                                const std::array<V, K>& y) {
  const auto r = [&]<std::size_t... A, std::size_t... B>(std::index_sequence<A...>, std::index_sequence<B...>) {
    return rule(d[A]..., x[B]..., y[A]...);
  }(std::make_index_sequence<K>{}, std::make_index_sequence<NX>{});
  return [&]<std::size_t... I>(std::index_sequence<I...>) TAD_INLINE_LAMBDA {
    return adjoints{to_adjoint<V>(adjoint_at<I>(r))...};
  }(std::make_index_sequence<N>{});
}

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

/// The op of output J of a custom_gradient whose forward returns K outputs (a std::tuple): the K
/// bodies, the rule `g(dy_0, ..., dy_{K-1}, x..., y_0, ..., y_{K-1})` and the id of the call
/// that built it. Each output is a node of the inputs; the K outputs of one call are one node
/// (its group): a stage, which a tad::program (`<tad/linalg.hpp>`) computes once, all K values
/// in one loop over the inputs' values, and whose rule it runs once per element on the summed
/// adjoints of every use of every output (a zero for an output nothing reads), as
/// torch.autograd.Function and jax.custom_vjp do (eval/program/custom.hpp; decisions.md 68).
/// forward is output J's value, so that traits and printing see an elementwise node; no
/// elementwise loop runs it.
template <std::size_t J, std::size_t K, class Bodies, class G>
struct custom_output_op {
  static constexpr std::string_view name = "custom_gradient";
  static constexpr bool is_stage = true;
  static constexpr bool is_custom_output = true;
  static constexpr bool adjoint_linear = false;
  static constexpr std::size_t output = J;
  static constexpr std::size_t outputs = K;
  using group_rule_type = G;
  Bodies bodies;
  G rule;
  std::uint64_t id = 0;  // the call's (0 in constant evaluation, where no program runs)
  template <class... X>
  TAD_INLINE constexpr auto forward(const X&... x) const {
    return detail::eval_body(std::get<J>(bodies), x...);
  }
};

namespace detail {
/// The outputs of a custom_gradient with several outputs: its rule decides which inputs an
/// adjoint flows into (as a single output's, gradient/rules.hpp).
template <std::size_t J, std::size_t K, class Bodies, class G, class... C, std::size_t I>
struct adjoint_flows<node<custom_output_op<J, K, Bodies, G>, C...>, I> {
  static constexpr bool value = !multi_rule<G, K, sizeof...(C)>::template zero_at<I>();
};
}  // namespace detail

/// The K outputs of a call of a custom_gradient whose f returns several, a tuple-like type:
/// `auto [x, y] = polar(r, th);` or `tad::get<0>(o)`. (Not a std::tuple: std::tuple asks whether
/// its elements are default-constructible, which an output of a rule that is a capturing lambda
/// answers with a hard error.)
template <class... Y>
struct custom_outputs;
template <>
struct custom_outputs<> {};
template <class Y0, class... Y>
struct custom_outputs<Y0, Y...> {
  Y0 first;
  custom_outputs<Y...> rest;
};
template <std::size_t I, class... Y>
constexpr const auto& get(const custom_outputs<Y...>& o) noexcept {
  if constexpr (I == 0) return o.first; else return tad::get<I - 1>(o.rest);
}
template <std::size_t I, class... Y>
constexpr auto& get(custom_outputs<Y...>& o) noexcept {
  if constexpr (I == 0) return o.first; else return tad::get<I - 1>(o.rest);
}
template <std::size_t I, class... Y>
constexpr auto&& get(custom_outputs<Y...>&& o) noexcept {
  if constexpr (I == 0) return std::move(o.first); else return tad::get<I - 1>(std::move(o.rest));
}

/// `custom_gradient(f, g)`: a callable that builds nodes whose value is `f(x...)` and whose
/// gradient is `g(dy, x..., y)`, for one to three inputs. When `f` returns a std::tuple of K
/// expressions, the call returns K outputs (custom_outputs, one node: custom_output_op) and `g`
/// is `g(dy_0, ..., dy_{K-1}, x..., y_0, ..., y_{K-1})`. `f` is an expression builder (generic
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
      if constexpr (values && detail::returns_tuple_v<F, N>) {
        using V = std::common_type_t<X...>;
        if constexpr (detail::bodies_ok_v<detail::body_t<F, N>>) {
          return std::apply([&](const auto&... b) { return std::tuple{detail::eval_body(b, static_cast<V>(x)...)...}; },
                            body<N>());
        } else {
          static_assert(detail::bodies_ok_v<detail::body_t<F, N>>,
                        "tad::custom_gradient(f, g): each of f's outputs may combine only its inputs and numbers, "
                        "elementwise (no variables, arrays or reductions inside f: pass them as inputs)");
          return std::tuple<>{};
        }
      } else if constexpr (values && !detail::poisoned_v<detail::body_t<F, N>>) {
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
    if constexpr (detail::returns_tuple_v<F, N>) {
      return build_outputs(x...);
    } else {
      return build_one(x...);
    }
  }

  /// f returned a std::tuple: the K output nodes (custom_outputs), one group (one id).
  template <class... X>
  constexpr auto build_outputs(const X&... x) const {
    constexpr std::size_t N = sizeof...(X);
    using Bodies = detail::body_t<F, N>;
    constexpr std::size_t K = std::tuple_size_v<Bodies>;
    using R = detail::multi_rule<G, K, N>;
    constexpr bool operands = (operand<X> && ...);
    constexpr bool maskless = (!detail::props<detail::as_expr_t<X>>::is_mask && ...);
    constexpr int rank = std::max({detail::props<detail::as_expr_t<X>>::rank...});
    constexpr bool ranks = ((detail::props<detail::as_expr_t<X>>::rank == 0 ||
                             detail::props<detail::as_expr_t<X>>::rank == rank) && ...);
    if constexpr (detail::bodies_poisoned_v<Bodies>) {
      return invalid_outputs<K>();  // f made a reported misuse (a reduction inside f)
    } else if constexpr (!operands || !maskless) {
      static_assert(operands && maskless, "tad::custom_gradient(f, g)(x...): every input must be a "
                                          "tad expression or a number, and not a comparison");
      return invalid_outputs<K>();
    } else if constexpr (!detail::bodies_ok_v<Bodies>) {
      static_assert(detail::bodies_ok_v<Bodies>,
                    "tad::custom_gradient(f, g): each of f's outputs may combine only its inputs and numbers, "
                    "elementwise (no variables, arrays or reductions inside f: pass them as inputs)");
      return invalid_outputs<K>();
    } else if constexpr (rank == 0) {
      static_assert(rank > 0, "tad::custom_gradient(f, g)(x...): f returns several outputs, so at least one "
                              "input must be a vector or a matrix (of scalars only: not supported yet)");
      return invalid_outputs<K>();
    } else if constexpr (!ranks) {
      static_assert(ranks, "tad::custom_gradient(f, g)(x...): f returns several outputs, so the array inputs "
                           "must all be vectors or all matrices (of one shape; scalars are broadcast)");
      return invalid_outputs<K>();
    } else if constexpr (!R::callable) {
      static_assert(R::callable, "tad::custom_gradient(f, g): f returns K outputs, so g must be callable as "
                                 "g(dy_0, ..., dy_{K-1}, x..., y_0, ..., y_{K-1}): one upstream gradient per "
                                 "output, one x per input, one value per output");
      return invalid_outputs<K>();
    } else if constexpr (!R::count) {
      static_assert(R::count, "tad::custom_gradient(f, g): g must return one adjoint per input (a value for "
                              "one input, tad::adjoints{...} for several), whatever the number of outputs");
      return invalid_outputs<K>();
    } else if constexpr (!R::numbers) {
      static_assert(R::numbers, "tad::custom_gradient(f, g): g must return numbers, SIMD batches or "
                                "tad::zero");
      return invalid_outputs<K>();
    } else {
      const Bodies bodies = body<N>();
      std::uint64_t id = 0;
      if (!std::is_constant_evaluated()) id = detail::next_stage_id();
      return [&]<std::size_t... J>(std::index_sequence<J...>) {
        return make_outputs(output<J, K, Bodies>(bodies, id, x...)...);
      }(std::make_index_sequence<K>{});
    }
  }
  /// After a reported misuse: K outputs that pass it on silently (decisions.md 12).
  template <std::size_t K>
  static constexpr auto invalid_outputs() {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return make_outputs((void(J), detail::invalid_expression{})...);
    }(std::make_index_sequence<K>{});
  }
  template <class Y0, class... Y>
  static constexpr custom_outputs<Y0, Y...> make_outputs(const Y0& y0, const Y&... y) {
    if constexpr (sizeof...(Y) == 0) return {y0, {}}; else return {y0, make_outputs(y...)};
  }
  template <std::size_t J, std::size_t K, class Bodies, class... X>
  constexpr auto output(const Bodies& bodies, std::uint64_t id, const X&... x) const {
    using Op = custom_output_op<J, K, Bodies, G>;
    using Node = node<Op, detail::as_expr_t<X>...>;
    static_assert(!detail::mixes_precisions_v<Node>,
                  "tad: an expression mixes float and double variables or arrays, so its element "
                  "type is ambiguous; convert the data to one precision");
    return Node{detail::as_expr(x)..., Op{bodies, g_, id}};
  }

  template <class... X>
  constexpr auto build_one(const X&... x) const {
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

template <class... Y>
struct std::tuple_size<tad::custom_outputs<Y...>> : std::integral_constant<std::size_t, sizeof...(Y)> {};
template <std::size_t I, class... Y>
struct std::tuple_element<I, tad::custom_outputs<Y...>> {
  using type = std::tuple_element_t<I, std::tuple<Y...>>;
};
