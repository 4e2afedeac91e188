#pragma once
/// `detail::one_node(e)`: the argument of a composite op that reads it more than once
/// (softmax_cross_entropy, softmax, log_softmax) made one node when a rule not linear in the
/// adjoint would otherwise run once per read (doc/semantics.md, "Shared subexpressions";
/// decisions.md 54).

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/linalg.hpp>
#include <tad/ops/make.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tad::detail {

/// FNV-1a of the compiler's spelling of T: the same in every translation unit of one compiler.
template <class T>
constexpr std::uint32_t type_hash() {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view s = __PRETTY_FUNCTION__;
#else
  constexpr std::string_view s = __FUNCSIG__;
#endif
  std::uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

/// The name of the let that `one_node` puts around E: `@z` and eight hex digits of E's type
/// hash. Two composites of one argument type share it (one node, as they should when the
/// argument is the same computation; bound to other data they throw, as two lets of one name
/// do). A hash collision between two argument types is a compile error (one name, two bodies),
/// never a silent sharing. '@' keeps it apart from every user name (tad::var refuses it).
template <class E>
constexpr fixed_string<11> auto_let_name() {
  constexpr char digits[] = "0123456789abcdef";
  char s[11] = "@z00000000";
  std::uint32_t h = type_hash<E>();
  for (std::size_t k = 0; k < 8; ++k, h >>= 4) s[9 - k] = digits[h & 15u];
  return {s};
}

/// Can two copies of E be compared for being one computation: is every op's state empty or
/// its bytes (a pick's labels)? A custom rule's captures and an override's rule are not.
template <class E>
constexpr bool comparable_ops() {
  if constexpr (is_leaf_v<E>) {
    return true;
  } else {
    using Op = typename E::op_type;
    bool r = std::is_empty_v<Op> || std::has_unique_object_representations_v<Op>;
    static_for<E::arity>([&](auto k) { r = r && comparable_ops<child_t<k.value, E>>(); });
    return r;
  }
}

/// e as one node for a composite that reads it more than once: a let when an adjoint reaches a
/// rule not linear in the adjoint outside e's lets (each read would run that rule on its own
/// share of the adjoint), e itself otherwise (rules linear in the adjoint give the same numbers
/// either way, and the loops stay those of the plain expression). Left as it is, so that the
/// engine's check of repeated rules reports it and the user names it with a let
/// (eval/shared_rules.hpp): e holding a matrix product (a let of a product is not supported
/// yet), and e holding an op whose state cannot be compared (a custom_gradient's rule, an
/// override's: two composites of one argument type would share one node by name, whatever
/// their captures).
template <class E>
constexpr auto one_node(const E& e) {
  if constexpr (!is_leaf_v<E> && rule_outside_lets<E>() && !has_products_v<E> && comparable_ops<E>()) {
    constexpr auto name = auto_let_name<E>();
    return make<let_op<name>>(e);
  } else {
    return e;
  }
}

/// The op marking the argument of a matrix form of those composites (softmax and log_softmax
/// along an axis, the row-wise softmax cross-entropies) when it holds a rule not linear in the
/// adjoint: they read it twice per row, in two sweeps whose adjoints the engine does not sum
/// before a rule runs, so a gradient of such an expression is refused where it is computed
/// (eval/shared_rules.hpp); its value is not. The identity, forward and backward.
struct row_composite_op {
  static constexpr std::string_view name = "row_composite_argument";
  static constexpr bool is_row_composite = true;
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

/// e, marked (row_composite_op) when it holds a rule not linear in the adjoint outside its lets.
template <class E>
constexpr auto row_composite_argument(const E& e) {
  if constexpr (!is_leaf_v<E> && rule_outside_lets<E>()) return make<row_composite_op>(e);
  else return e;
}

}  // namespace tad::detail
