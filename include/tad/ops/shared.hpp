#pragma once
/// `detail::one_node(e)`: the argument of a composite op that reads it more than once
/// (softmax_cross_entropy, softmax, log_softmax) made one node when a rule not linear in the
/// adjoint would otherwise run once per read (doc/semantics.md, "Shared subexpressions";
/// decisions.md 54).

#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/let.hpp>
#include <tad/ops/linalg.hpp>
#include <tad/ops/make.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

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

/// e as one node for a composite that reads it more than once: a let when an adjoint reaches a
/// rule not linear in the adjoint outside e's lets (each read would run that rule on its own
/// share of the adjoint), e itself otherwise (rules linear in the adjoint give the same numbers
/// either way, and the loops stay those of the plain expression). e holding a matrix product is
/// left as it is (a let of a product is not supported yet); the engine's check of repeated
/// rules then reports it (eval/shared_rules.hpp).
template <class E>
constexpr auto one_node(const E& e) {
  if constexpr (!is_leaf_v<E> && rule_outside_lets<E>() && !has_products_v<E>) {
    constexpr auto name = auto_let_name<E>();
    return make<let_op<name>>(e);
  } else {
    return e;
  }
}

/// The matrix forms of those composites (softmax and log_softmax along an axis, the row-wise
/// softmax cross-entropies) read their argument twice per row, in two sweeps whose adjoints
/// the engine does not sum before a rule runs: a rule not linear in the adjoint in that
/// argument is refused rather than run once per read.
template <class E>
constexpr void check_row_composite() {
  static_assert(!rule_outside_lets<E>(),
                "tad::softmax / log_softmax / softmax_cross_entropy of a matrix: its argument holds a "
                "gradient rule not linear in the adjoint (clip_gradient, custom_gradient, an overridden "
                "op); the op reads it twice in each row, and running that rule once on each element's "
                "summed adjoint is not supported yet for matrices (it is for vectors); the rule would run "
                "once per read, which is not TensorFlow's result (doc/semantics.md, \"Shared subexpressions\")");
}

}  // namespace tad::detail
