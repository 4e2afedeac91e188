#pragma once
/// `override_gradients(e, rules)`: TensorFlow's `gradient_override_map` scope as a type-level
/// rewrite. `rules` is a Boost.Hana map from op type (`boost::hana::type_c<tad::exp_op>`) to a
/// backward rule `rule(dy, x..., y)`; inside e, and only there, every node whose op is a key
/// uses that rule. Nothing global changes: the same op elsewhere keeps its own rule, and an
/// inner override_gradients scope wins over an outer one (its nodes no longer carry the key).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/gradient/rules.hpp>

#include <boost/hana/all_of.hpp>
#include <boost/hana/at_key.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/core/is_a.hpp>
#include <boost/hana/keys.hpp>
#include <boost/hana/map.hpp>
#include <boost/hana/type.hpp>

#include <cstddef>
#include <string_view>
#include <utility>

namespace tad {

/// Op with its backward replaced by Rule. The forward, the parameters (held in `op`) and the
/// evaluation-time checks are Op's.
template <class Op, class Rule>
struct overridden_op {
  static constexpr std::string_view name = Op::name;
  using base_op = Op;
  using rule_type = Rule;
  /// The rule may be anything of dy, so no pass runs it with a unit adjoint.
  static constexpr bool adjoint_linear = false;
  /// A product's override stays a product (the program runs its rule: doc/linear-algebra.md).
  static constexpr bool is_product = detail::op_is_product<Op>();
  static constexpr int result_rank(int ra, int rb) noexcept
    requires(detail::op_is_product<Op>())
  {
    return Op::result_rank(ra, rb);
  }
  [[no_unique_address]] Op op;
  [[no_unique_address]] Rule rule;
  template <class... X>
  TAD_INLINE constexpr auto forward(const X&... x) const {
    return op.forward(x...);
  }
  template <class D, class... XY>
  TAD_INLINE constexpr auto backward(const D& dy, const XY&... xy) const {
    return detail::call_rule(rule, dy, xy...);
  }
  template <class T, class N>
    requires requires(const N& n) { Op::template validate<T>(n); }
  static constexpr void validate(const N& n) {
    Op::template validate<T>(n);
  }
};

namespace detail {

template <class Rules>
constexpr bool is_rule_map() {
  if constexpr (!boost::hana::is_a<boost::hana::map_tag, Rules>) {
    return false;
  } else {
    using keys_t = decltype(boost::hana::keys(std::declval<const Rules&>()));
    return decltype(boost::hana::all_of(std::declval<keys_t>(), [](auto k) {
      return boost::hana::is_a<boost::hana::type_tag>(k);
    }))::value;
  }
}

template <class Rules, class Op>
inline constexpr bool has_rule_v =
    decltype(boost::hana::contains(std::declval<const Rules&>(), boost::hana::type_c<Op>))::value;

template <class E, class Rules>
constexpr auto override_rewrite(const E& e, const Rules& rules) {
  if constexpr (is_leaf_v<E>) {
    return e;
  } else {
    using Op = typename E::op_type;
    constexpr std::size_t N = E::arity;
    const auto op = [&] {
      if constexpr (has_rule_v<Rules, Op>) {
        using Rule = std::remove_cvref_t<decltype(rules[boost::hana::type_c<Op>])>;
        static_assert(!requires { Op::is_transpose; },
                      "tad::override_gradients(e, rules): tad::transpose_op has no rule of its own (it is a "
                      "view of a product's operand); override the product's (tad::matmul_op)");
        static_assert(!op_is_reduction<Op>(),
                      "tad::override_gradients(e, rules): reductions cannot be overridden (their "
                      "backward runs in its own pass); wrap the argument in a custom_gradient");
        // A product's rule takes Eigen expressions: the program checks it (<tad/linalg.hpp>).
        if constexpr (!op_is_product<Op>()) {
          static_assert(rule_callable_v<Rule, N>,
                        "tad::override_gradients(e, rules): a rule must be callable as "
                        "rule(dy, x..., y) with one x per input of its op");
          static_assert(rule_returns_count_v<Rule, N>,
                        "tad::override_gradients(e, rules): a rule must return one adjoint per "
                        "input of its op (a value for one input, tad::adjoints{...} for several)");
          static_assert(rule_returns_numbers_v<Rule, N>,
                        "tad::override_gradients(e, rules): a rule must return numbers, SIMD "
                        "batches or tad::zero");
        }
        return overridden_op<Op, Rule>{e.op, rules[boost::hana::type_c<Op>]};
      } else {
        return e.op;
      }
    }();
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(op, override_rewrite(child<K>(e), rules)...);
    }(std::make_index_sequence<N>{});
  }
}

}  // namespace detail

/// `override_gradients(e, rules)`: e, with the backward rule of every node whose op type is a
/// key of the Boost.Hana map `rules` replaced by the mapped rule.
template <class E, class Rules>
constexpr auto override_gradients(const E& e, const Rules& rules) {
  constexpr bool is_expr = expression<E>;
  constexpr bool is_map = detail::is_rule_map<Rules>();
  if constexpr (detail::poisoned_v<E, Rules>) {
    return detail::invalid_expression{};
  } else if constexpr (!is_expr) {
    static_assert(is_expr, "tad::override_gradients(e, rules): e must be a tad expression");
    return detail::invalid_expression{};
  } else if constexpr (!is_map) {
    static_assert(is_map, "tad::override_gradients(e, rules): rules must be a boost::hana::map "
                          "from op types (boost::hana::type_c<tad::exp_op>) to backward rules");
    return detail::invalid_expression{};
  } else {
    return detail::override_rewrite(e, rules);
  }
}

}  // namespace tad
