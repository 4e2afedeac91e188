#pragma once
/// Gradient modifiers: stop_gradient, scale_gradient, reverse_gradient, clip_gradient and
/// straight_through. Each is an op whose forward is (a pass-through of) its first input and whose
/// backward differs from the derivative of that forward (doc/gradient-surgery.md).

#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/parameter.hpp>
#include <tad/core/zero.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/adjoints.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/make.hpp>
#include <tad/simd/batch.hpp>

#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace tad {

/// A modifier's parameter: a number, `tad::constant_ref(x)` or `tad::lit<N, D>`.
template <class P>
concept gradient_parameter = std::is_arithmetic_v<std::remove_cvref_t<P>> ||
                             detail::is_parameter_leaf_v<std::remove_cvref_t<P>>;

/// Identity forward; no gradient flows through (a structural zero).
struct stop_gradient_op {
  static constexpr std::string_view name = "stop_gradient";
  static constexpr bool differentiable = false;
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
};
template <class E>
using stop_gradient_t = node<stop_gradient_op, E>;

/// Forward e; backward `k * dy`. Linear in dy and never reading e's value; to the schedule it
/// behaves as `e * k` (the adjoint of e depends on k only), hence `product`.
struct scale_gradient_op {
  static constexpr std::string_view name = "scale_gradient";
  static constexpr linearity linear = linearity::product;
  TAD_INLINE static constexpr auto forward(auto x, auto) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto k, auto) { return adjoints{dy * k, zero{}}; }
};

/// Forward e; backward `-lambda * dy` (a gradient reversal layer).
struct reverse_gradient_op {
  static constexpr std::string_view name = "reverse_gradient";
  static constexpr linearity linear = linearity::product;
  TAD_INLINE static constexpr auto forward(auto x, auto) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto l, auto) { return adjoints{simd::neg(dy * l), zero{}}; }
};

/// Forward e; backward dy clipped to [lo, hi], NaN staying NaN. Not linear in dy, so the
/// engine never runs it with a provisional unit adjoint (`adjoint_linear`, eval/plan.hpp).
struct clip_gradient_op {
  static constexpr std::string_view name = "clip_gradient";
  static constexpr bool adjoint_linear = false;
  TAD_INLINE static constexpr auto forward(auto x, auto, auto) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto lo, auto hi, auto) {
    return adjoints{simd::select(dy < lo, lo, simd::select(dy > hi, hi, dy)), zero{}, zero{}};
  }
  /// Called by the engine before any loop: bounds read at evaluation time (constant_ref).
  template <class T, class N>
  static constexpr void validate(const N& n) {
    if (!(detail::parameter_value<T>(n.b) <= detail::parameter_value<T>(n.c)))
      throw std::invalid_argument("tad::clip_gradient(e, lo, hi): lo must not exceed hi, and neither may be NaN");
  }
};

/// Forward f; backward: the whole adjoint goes to b, none to f.
struct straight_through_op {
  static constexpr std::string_view name = "straight_through";
  TAD_INLINE static constexpr auto forward(auto f, auto) { return f; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto, auto) { return adjoints{zero{}, dy}; }
};

namespace detail {
/// No adjoint flows into straight_through(f, b)'s f, so its gradient reaches only what b reaches.
template <class F, class B, std::size_t K>
struct adjoint_flows<node<straight_through_op, F, B>, K> {
  static constexpr bool value = K == 1;
};

template <class Op, class E, class... P>
constexpr auto modifier(const E& e, const P&... p) {
  return make<Op>(e, as_expr(p)...);
}
}  // namespace detail

/// `stop_gradient(e)`: the value of e; no gradient flows into e.
template <class E>
constexpr auto stop_gradient(const E& e) {
  if constexpr (detail::poisoned_v<E>) {
    return detail::invalid_expression{};
  } else if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::stop_gradient(e): e must be a tad expression");
    return detail::invalid_expression{};
  } else {
    return stop_gradient_t<E>{e};
  }
}

/// `scale_gradient(e, k)`: the value of e; its gradient is multiplied by k.
template <class E, class K>
constexpr auto scale_gradient(const E& e, const K& k) {
  constexpr bool ok = expression<E> && gradient_parameter<K>;
  if constexpr (detail::poisoned_v<E, K>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::scale_gradient(e, k): e must be a tad expression and k a number, "
                      "tad::constant_ref or tad::lit");
    return detail::invalid_expression{};
  } else {
    return detail::modifier<scale_gradient_op>(e, k);
  }
}

/// `reverse_gradient(e, lambda)`: the value of e; its gradient is multiplied by -lambda.
template <class E, class L>
constexpr auto reverse_gradient(const E& e, const L& lambda) {
  constexpr bool ok = expression<E> && gradient_parameter<L>;
  if constexpr (detail::poisoned_v<E, L>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::reverse_gradient(e, lambda): e must be a tad expression and lambda a "
                      "number, tad::constant_ref or tad::lit");
    return detail::invalid_expression{};
  } else {
    return detail::modifier<reverse_gradient_op>(e, lambda);
  }
}

/// `clip_gradient(e, lo, hi)`: the value of e; its gradient is clipped to [lo, hi]. Throws
/// std::invalid_argument when lo > hi (here for numbers, at evaluation for constant_ref).
template <class E, class L, class H>
constexpr auto clip_gradient(const E& e, const L& lo, const H& hi) {
  constexpr bool ok = expression<E> && gradient_parameter<L> && gradient_parameter<H>;
  if constexpr (detail::poisoned_v<E, L, H>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::clip_gradient(e, lo, hi): e must be a tad expression and lo, hi "
                      "numbers, tad::constant_ref or tad::lit");
    return detail::invalid_expression{};
  } else {
    constexpr bool literals = detail::is_literal_v<L> && detail::is_literal_v<H>;
    if constexpr (literals) {
      static_assert(!literals || L::template as<long double>() <= H::template as<long double>(),
                    "tad::clip_gradient(e, lo, hi): lo must not exceed hi");
    }
    auto n = detail::modifier<clip_gradient_op>(e, lo, hi);
    if constexpr (!literals && !detail::is_constant_ref_v<L> && !detail::is_constant_ref_v<H>) {
      clip_gradient_op::validate<long double>(n);  // bounds known now: fail at construction
    }
    return n;
  }
}

/// `straight_through(f, b)`: the value of f, the gradient of b (f gets none).
template <class F, class B>
constexpr auto straight_through(const F& f, const B& b) {
  constexpr bool ok = expression<F> && expression<B>;
  if constexpr (detail::poisoned_v<F, B>) {
    return detail::invalid_expression{};
  } else if constexpr (!ok) {
    static_assert(ok, "tad::straight_through(f, b): f and b must be tad expressions");
    return detail::invalid_expression{};
  } else {
    return detail::make<straight_through_op>(f, b);
  }
}

namespace detail {
/// Is E made of variables and literals only (no data a leaf could hold differently)? Two such
/// expressions of one type are the same expression, given one name means one variable.
template <class E>
constexpr bool data_free() {
  if constexpr (is_leaf_v<E>) {
    return E::is_variable || requires { E::num; };
  } else if constexpr (!std::is_empty_v<typename E::op_type>) {
    return false;
  } else {
    bool r = true;
    static_for<E::arity>([&](auto k) { r = r && data_free<child_t<k.value, E>>(); });
    return r;
  }
}
}  // namespace detail

/// The straight-through trick `b + stop_gradient(f - b)` (either order), with `b` made of
/// variables and literals only, is built as `straight_through(f, b)`: the same gradient, the
/// value `f` exactly (the trick as written can differ from f in the last bit), and the loop
/// of a hand-written straight-through estimator instead of two more operations per element.
/// With constants in `b` tad cannot know at compile time that both b's are the same, and
/// computes the trick as written. See gradient-surgery.md.
template <class B, class F>
  requires(detail::data_free<B>())
constexpr auto operator+(const B& b, const node<stop_gradient_op, node<sub_op, F, B>>& s) {
  detail::check_bindings(b, s);  // one name, one variable: the two b's are bound alike
  return straight_through(s.arg.lhs, b);
}
template <class B, class F>
  requires(detail::data_free<B>())
constexpr auto operator+(const node<stop_gradient_op, node<sub_op, F, B>>& s, const B& b) {
  detail::check_bindings(s, b);
  return straight_through(s.arg.lhs, b);
}

}  // namespace tad
