#pragma once
/// The `expression` concept and the structural properties every expression type has.

#include <tad/core/fixed_string.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/node.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad {

/// Any tad expression: a leaf or a `node`.
template <class E>
concept expression = requires { typename std::remove_cvref_t<E>::tad_kind; };

/// How the gradient of an op relates to its inputs, for schedule fusion (see doc/design.md).
enum class linearity {
  none,      ///< nonlinear: the derivative depends on the input values
  additive,  ///< every output is a sum/difference of inputs (`+`, `-`, negation, identity)
  product,   ///< `a * b`
  quotient,  ///< `a / b`
};

/// What a builder returns after its static_assert has reported a misuse: an expression that
/// every later builder and entry point passes on silently, so one mistake gives one error
/// instead of a cascade (doc/compile-time-checks.md). In namespace tad so that the operators
/// on expressions accept it.
struct invalid_expression {
  using tad_kind = detail::leaf_kind;
  using value_type = void;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  static constexpr bool is_invalid = true;
};

namespace detail {

using tad::invalid_expression;
template <class E>
struct poisoned_one {
  static constexpr bool value = std::is_same_v<E, invalid_expression>;
};
template <class Op, class... C>
struct poisoned_one<node<Op, C...>> {
  static constexpr bool value = (poisoned_one<C>::value || ...);
};
/// True when one of E... is, or contains, the result of an earlier, already reported misuse.
template <class... E>
inline constexpr bool poisoned_v = (poisoned_one<std::remove_cvref_t<E>>::value || ...);

template <class E>
inline constexpr bool is_leaf_v = std::is_same_v<typename E::tad_kind, leaf_kind>;

/// The first of the `std::type_identity`s I... whose type is not void (`type_identity<void>`
/// if none).
template <class... I>
constexpr auto first_non_void(I...) {
  if constexpr (sizeof...(I) == 0) {
    return std::type_identity<void>{};
  } else {
    return [](auto head, auto... tail) {
      if constexpr (std::is_void_v<typename decltype(head)::type>) return first_non_void(tail...);
      else return head;
    }(I{}...);
  }
}
/// The first of H... that is not void (void if all are).
template <class... H>
using first_non_void_t = typename decltype(first_non_void(std::type_identity<H>{}...))::type;

/// Does E contain an input placeholder of a custom_gradient's forward (`custom_input<K>`)? Then
/// E is being built by that forward, which is evaluated one element at a time.
template <class E>
struct has_custom_input {
  static constexpr bool value = requires { E::input_index; };
};
template <class Op, class... C>
struct has_custom_input<node<Op, C...>> {
  static constexpr bool value = (has_custom_input<C>::value || ...);
};
template <class E>
inline constexpr bool has_custom_input_v = has_custom_input<std::remove_cvref_t<E>>::value;

template <class Op>
constexpr bool op_differentiable() {
  if constexpr (requires { Op::differentiable; }) return Op::differentiable; else return true;
}
template <class Op>
constexpr bool op_is_reduction() {
  if constexpr (requires { Op::is_reduction; }) return Op::is_reduction; else return false;
}
/// A reduction along an axis (`sum(X, axis<1>)`, ops/axis_reductions.hpp): a reduction node to the
/// engine (a slot, its value read from the context), an array of rank 1 to its parent.
template <class Op>
constexpr bool op_is_point() {
  if constexpr (requires { Op::is_point; }) return Op::is_point; else return false;
}
/// The axis an axis point reduces along (1: along the rows, 0: down the columns; -1: not a point).
template <class Op>
constexpr int point_axis() {
  if constexpr (requires { Op::axis; }) return Op::axis; else return -1;
}
/// ... met by a matrix as a column (`as_column(sum(X, axis<1>))`): one value per row, a scalar
/// to the loop over that row's columns (its sweeps run per row before it, engine::row_loop).
template <class Op>
constexpr bool op_is_column_point() {
  if constexpr (requires { Op::is_column_point; }) return Op::is_column_point; else return false;
}
/// A product (ops/linalg.hpp: matmul, outer): its rank is `Op::result_rank` of its operands' (as a scan's).
template <class Op>
constexpr bool op_is_product() {
  if constexpr (requires { Op::is_product; }) return Op::is_product; else return false;
}
template <class E>
struct props;
template <class Op, class... C>
constexpr int node_rank(int elementwise) {
  // A product, a scan (ops/scan.hpp): the op says.
  if constexpr (requires { Op::result_rank(props<C>::rank...); }) return Op::result_rank(props<C>::rank...);
  else return elementwise;
}
/// A loop over time or over slices (ops/scan.hpp: scan, map): a stage whose body is a child.
/// To the expression around it, it is a leaf (the program lowers it to one): none of its
/// body's reductions, levels, invariants or columns are its own. So is a scan's tuple of
/// carries (tad::carries), which only a scan holds.
template <class Op>
constexpr bool op_is_loop() {
  return requires { Op::is_scan; } || requires { Op::is_map; } || requires { Op::is_carries; };
}
template <class Op>
constexpr bool op_is_mask() {
  if constexpr (requires { Op::is_mask; }) return Op::is_mask; else return false;
}
/// Is Op's backward rule linear in the adjoint? (clip_gradient, custom_gradient and overridden
/// ops declare `adjoint_linear = false`.)
template <class Op>
constexpr bool op_adjoint_linear() {
  if constexpr (requires { Op::adjoint_linear; }) return Op::adjoint_linear; else return true;
}
template <class Op>
constexpr linearity op_linearity() {
  if constexpr (requires { Op::linear; }) return Op::linear; else return linearity::none;
}

/// The rank of a leaf: 0 for a scalar, 1 for an array, or its own `rank` (2 for a matrix).
template <class E>
constexpr int leaf_rank() {
  if constexpr (requires { E::rank; }) return E::rank; else return E::is_array ? 1 : 0;
}

template <class E>
struct props;  // structural properties, specialized below

template <class E>
struct props {  // leaves
  static constexpr bool is_array = E::is_array;
  static constexpr int rank = leaf_rank<E>();
  static constexpr bool is_mask = false;
  static constexpr bool is_reduction = false;
  static constexpr bool is_point = false;
  static constexpr bool is_column_point = false;
  static constexpr std::size_t reductions = 0;  // number of reduction nodes
  static constexpr int level = 0;               // 1 + level of the argument, for reductions
  static constexpr bool is_root = false;
  static constexpr std::size_t roots = 0;
  static constexpr bool has_column = is_column_v<E>;  // as_column(v), not looking inside reductions
  static constexpr bool linear_rules = true;          // every rule in it linear in the adjoint
  static constexpr bool column_free_linear = true;    // ... every rule in its column-free parts
};

template <class Op, class... C>
struct props<node<Op, C...>> {
  static constexpr bool is_reduction = op_is_reduction<Op>();
  /// A reduction along an axis (an *axis point*): one value per row of its matrix argument.
  static constexpr bool is_point = op_is_point<Op>();
  /// An axis point as a column (as_column): to its parent one value per row, like a column leaf
  /// (not an array, has_column), to the engine a point whose sweeps run in its parent's rows.
  static constexpr bool is_column_point = op_is_column_point<Op>();
  static constexpr bool is_array = (is_point && !is_column_point) || (!is_reduction && (props<C>::is_array || ...));
  /// Elementwise, the highest rank of its children (a vector with a matrix is a row broadcast
  /// across the matrix's rows, extents.hpp); a (full) reduction is a scalar, an axis point a
  /// vector over its argument's rows.
  static constexpr int rank = is_column_point ? 0 : is_point ? 1 : is_reduction ? 0
                             : node_rank<Op, C...>(std::max({0, props<C>::rank...}));
  static constexpr bool is_mask = op_is_mask<Op>();
  static constexpr bool loop = op_is_loop<Op>();
  static constexpr std::size_t reductions = loop ? 0 : (props<C>::reductions + ... + 0) + (is_reduction ? 1 : 0);
  /// An axis point adds no level: its sweeps run inside the loop of its parent's rows.
  static constexpr int level = loop ? 0 : std::max({0, props<C>::level...}) + (is_reduction && !is_point ? 1 : 0);
  static constexpr bool has_column = !loop && (is_column_point || (!is_reduction && (props<C>::has_column || ...)));
  static constexpr bool linear_rules = op_adjoint_linear<Op>() && (props<C>::linear_rules && ...);
  static constexpr bool column_free_linear = has_column ? (props<C>::column_free_linear && ...) : linear_rules;
  /// A loop invariant: a scalar, non-mask subexpression. Inside a loop it is computed once
  /// before the loop, and its adjoint is summed over the loop and propagated once after it.
  /// One holding a column (as_column) is computed and propagated once per row: a rule of a
  /// part that holds the column then runs on that row's adjoint, as it should (the part is one
  /// value per row), but a column-free part is one value for the whole loop, so its rule must
  /// run once, on the adjoint summed over all rows. A node with a column-free part whose rule is
  /// not linear in the adjoint (clip_gradient(s) * as_column(c)) is therefore no invariant; its
  /// parts are (decisions.md 25).
  static constexpr bool is_root = !is_reduction && !is_array && !is_mask && (!has_column || column_free_linear);
  /// Number of maximal loop invariants below an array node (a reduction is opaque).
  static constexpr std::size_t roots = is_reduction || loop ? 0 : is_root ? 1 : (props<C>::roots + ... + 0);
};

/// Can an adjoint flow from node `E` into its child `K`? Not through an op without a gradient
/// (stop_gradient, a comparison, round), nor where a rule gives the child a structural zero
/// (straight_through's value, a user rule's tad::zero): those specialize it beside their op.
/// `reaches` follows it, and so does the schedule: no backward of a reduction below such a cut
/// runs (plan.hpp collect), and a reduction below one does not stop fusion (independent): its
/// adjoint is a structural zero, and running it would turn 0 * inf into NaN.
template <class E, std::size_t K>
struct adjoint_flows {
  static constexpr bool value = op_differentiable<typename E::op_type>();
};

/// Does the gradient of `E` reach a variable named `Name`? `Through` decides whether it looks
/// inside reductions (false: a reduction is an opaque scalar, as inside an elementwise loop).
template <class E, fixed_string Name, bool Through = true>
struct reaches {
  static constexpr bool value = [] {
    if constexpr (requires { E::name; }) {
      return same_name<E::name, Name>;
    } else {
      return false;
    }
  }();
};
/// A node's gradient reaches a variable through the children an adjoint flows into
/// (adjoint_flows: the one notion of a cut, which the schedule uses too).
template <class Op, class... C, fixed_string Name, bool Through>
struct reaches<node<Op, C...>, Name, Through> {
  template <std::size_t... K>
  static constexpr bool any(std::index_sequence<K...>) {
    return ((adjoint_flows<node<Op, C...>, K>::value && reaches<C, Name, Through>::value) || ...);
  }
  static constexpr bool value = [] {
    if constexpr (!op_differentiable<Op>() || (!Through && op_is_reduction<Op>())) return false;
    else return any(std::index_sequence_for<C...>{});
  }();
};

/// Does `E` contain a variable named `Name` at all (whether or not a gradient reaches it)?
template <class E, fixed_string Name>
struct contains_var {
  static constexpr bool value = reaches<E, Name>::value;
};
template <class Op, class... C, fixed_string Name>
struct contains_var<node<Op, C...>, Name> {
  static constexpr bool value = (contains_var<C, Name>::value || ...);
};

/// Does the gradient of `E` reach any of the variables `Vs`?
template <class E, class... Vs>
inline constexpr bool reaches_any_v = (reaches<E, Vs::name>::value || ...);

}  // namespace detail

/// True when `E` is an array-valued expression.
template <expression E>
inline constexpr bool is_array_v = detail::props<std::remove_cvref_t<E>>::is_array;

/// The rank of `E`'s value: 0 (a scalar), 1 (an array) or 2 (a matrix).
template <expression E>
inline constexpr int rank_v = detail::props<std::remove_cvref_t<E>>::rank;

/// True when `E` contains the variable `X` (by name), whether or not a gradient reaches it.
template <expression E, class X>
inline constexpr bool depends_on_v = detail::contains_var<std::remove_cvref_t<E>, X::name>::value;

/// True when no gradient of `E` can reach the variable `X`: it is zero by construction.
template <expression E, class X>
inline constexpr bool gradient_is_zero_v = !detail::reaches<std::remove_cvref_t<E>, X::name>::value;

}  // namespace tad

namespace tad {
/// A differentiable leaf: a scalar, vector or matrix variable, or one of a view (not a
/// column of one: its gradient is the vector's).
template <class X>
concept variable = expression<X> && requires { std::remove_cvref_t<X>::is_variable; } &&
                   std::remove_cvref_t<X>::is_variable && !detail::is_column_v<std::remove_cvref_t<X>>;
}  // namespace tad

namespace tad {
namespace detail {
/// What as_column takes: a vector leaf (variable or constant).
template <class V>
concept column_source = expression<V> && is_leaf_v<V> && !is_column_v<V> && V::is_array && leaf_rank<V>() == 1;
}  // namespace detail

/// `as_column(v)`: the vector v (a variable or a constant made from contiguous storage) as an
/// `n x 1` column, broadcast across the columns of the matrix it is combined with: in
/// `X - as_column(m)` row r of X has `m[r]` subtracted from each of its elements (NumPy's
/// `X - m[:, None]`). Its length must be the matrix's number of rows. doc/shapes.md, "Columns".
template <class V>
constexpr auto as_column(const V& v) noexcept {
  if constexpr (detail::poisoned_v<V>) {
    return invalid_expression{};
  } else {
    constexpr bool ok = detail::column_source<V>;
    if constexpr (ok) {
      return column_leaf<V>{{}, v, typename V::value_type{}};
    } else {
      static_assert(ok, "tad::as_column(v): v must be a vector (a tad::var or tad::constant of contiguous "
                        "storage) or a reduction along the rows (tad::sum(X, tad::axis<1>)), not a matrix, a "
                        "scalar or another expression; for an expression of a vector, apply the ops to its "
                        "column: tad::exp(tad::as_column(c))");
      return invalid_expression{};
    }
  }
}
}  // namespace tad
