#pragma once
/// Matrix products: `matmul(A, B)`, `transpose(A)` (as an operand of a product) and
/// `outer(u, v)`. A product is a node like any other (modifiers, traits, print and
/// strip_gradient_modifiers see through it), but no elementwise loop computes it: the program
/// that evaluates an expression holding one (eval/program.hpp, `<tad/linalg.hpp>`) materializes
/// its value and its adjoint in buffers and calls Eigen's GEMM/GEMV on them
/// (doc/linear-algebra.md).

#include <tad/core/expression.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace tad {

/// `A B`: (m x k)(k x n) -> m x n, (m x k)(k) -> m, (k)(k x n) -> n; `outer(u, v)`:
/// (m)(n) -> m x n.
struct matmul_op {
  static constexpr std::string_view name = "matmul";
  static constexpr bool is_product = true;
  /// The rank of the product of operands of ranks RA and RB.
  static constexpr int result_rank(int ra, int rb) noexcept { return ra == 2 && rb == 2 ? 2 : 1; }
};
struct outer_op {
  static constexpr std::string_view name = "outer";
  static constexpr bool is_product = true;
  static constexpr int result_rank(int, int) noexcept { return 2; }
};
/// `transpose(A)`: A's rows as columns, read in place (an Eigen transpose of the operand's
/// map, or of its buffer); only an operand of a product (doc/linear-algebra.md).
struct transpose_op {
  static constexpr std::string_view name = "transpose";
  static constexpr bool is_transpose = true;
};

namespace detail {

template <class E>
struct is_product_node : std::false_type {};
template <class Op, class A, class B>
  requires(op_is_product<Op>())
struct is_product_node<node<Op, A, B>> : std::true_type {};
template <class E>
inline constexpr bool is_product_node_v = is_product_node<std::remove_cvref_t<E>>::value;

template <class E>
inline constexpr bool is_transpose_node_v = false;
template <class A>
inline constexpr bool is_transpose_node_v<node<transpose_op, A>> = true;

/// Is E an output of a custom_gradient with several outputs (gradient/custom.hpp:
/// custom_output_op, a stage of one to three inputs whose group the program computes once)?
template <class E>
inline constexpr bool is_custom_output_node_v = false;
template <class Op, class... C>
  requires requires { Op::is_custom_output; }
inline constexpr bool is_custom_output_node_v<node<Op, C...>> = true;
/// The group of a custom output: the node type of the group's first output (its outputs differ
/// in their index only).
template <class N>
struct group_key {
  using type = N;
};
template <template <std::size_t, std::size_t, class, class> class Op, std::size_t J, std::size_t K, class B, class G,
          class... C>
  requires requires { Op<J, K, B, G>::is_custom_output; }
struct group_key<node<Op<J, K, B, G>, C...>> {
  using type = node<Op<0, K, B, G>, C...>;
};
template <class N>
using group_key_t = typename group_key<N>::type;
/// Does E hold an output of a custom_gradient with several outputs?
template <class E>
struct has_custom_outputs : std::false_type {};
template <class Op, class... C>
struct has_custom_outputs<node<Op, C...>>
    : std::bool_constant<is_custom_output_node_v<node<Op, C...>> || (has_custom_outputs<C>::value || ...)> {};
template <class E>
inline constexpr bool has_custom_outputs_v = has_custom_outputs<std::remove_cvref_t<E>>::value;
/// Is E a stage (core/let.hpp: stage_op; a shift), a let-like node of one argument?
template <class E>
inline constexpr bool is_stage_op_node_v = false;
template <class Op, class B>
  requires(requires { Op::is_stage; } && !requires { Op::is_custom_output; })
inline constexpr bool is_stage_op_node_v<node<Op, B>> = true;
/// Is E a shift (ops/shift.hpp: a stage whose value is its argument's one element on)?
template <class E>
inline constexpr bool is_shift_node_v = false;
template <class Op, class B>
  requires requires { Op::is_shift; }
inline constexpr bool is_shift_node_v<node<Op, B>> = true;

/// Is E a scan (ops/scan.hpp: a loop over time, which a program materializes)?
template <class E>
inline constexpr bool is_scan_node_v = false;
template <class Op, class A, class B, class C>
  requires requires { Op::is_scan; }
inline constexpr bool is_scan_node_v<node<Op, A, B, C>> = true;
/// Is E a map (ops/scan.hpp: a body over slices, for k = 0 .. K-1, stacked)?
template <class E>
inline constexpr bool is_map_node_v = false;
template <class Op, class... C>
  requires requires { Op::is_map; }
inline constexpr bool is_map_node_v<node<Op, C...>> = true;

/// Does E hold a product or a stage (a node whose program materializes it)? Such an expression
/// is evaluated by a tad::program (<tad/linalg.hpp>).
template <class E>
struct has_products : std::false_type {};
template <class Op, class... C>
struct has_products<node<Op, C...>>
    : std::bool_constant<is_product_node_v<node<Op, C...>> || is_transpose_node_v<node<Op, C...>> ||
                         is_stage_op_node_v<node<Op, C...>> || is_custom_output_node_v<node<Op, C...>> ||
                         is_scan_node_v<node<Op, C...>> ||
                         is_map_node_v<node<Op, C...>> || (has_products<C>::value || ...)> {};
template <class E>
inline constexpr bool has_products_v = has_products<std::remove_cvref_t<E>>::value;

/// Why the operands of `matmul(a, b)` are rejected (0: they are not).
template <class A, class B>
constexpr int matmul_problem() {
  if constexpr (!expression<A> || !expression<B>) return 1;
  else if constexpr (has_custom_input_v<A> || has_custom_input_v<B>) return 2;
  else if constexpr (props<A>::rank == 0 || props<B>::rank == 0) return 3;
  else if constexpr (props<A>::rank == 1 && props<B>::rank == 1) return 4;
  else if constexpr (props<A>::is_mask || props<B>::is_mask) return 5;
  else return 0;
}
}  // namespace detail

/// `matmul(a, b)`: the matrix product of two matrix or vector expressions (NumPy's `a @ b`):
/// `(m x k)(k x n)` is `m x n`; a matrix times a vector of k elements is a vector of m, a
/// vector of k times a matrix `k x n` a vector of n. The inner extents must agree (checked when
/// the expression is evaluated: tad::shape_error names both shapes). Computed by Eigen (GEMM,
/// GEMV) in the program that evaluates the expression (`<tad/linalg.hpp>`).
template <class A, class B>
constexpr auto matmul(const A& a, const B& b) {
  if constexpr (detail::poisoned_v<A, B>) {
    return invalid_expression{};
  } else {
    constexpr int problem = detail::matmul_problem<A, B>();
    static_assert(problem != 1, "tad::matmul(a, b): a and b must be tad expressions");
    static_assert(problem != 2, "tad::matmul(a, b): a product cannot be part of a custom_gradient's forward "
                                "(it is evaluated one element at a time)");
    static_assert(problem != 3, "tad::matmul(a, b): a and b must be matrices or vectors, not scalars; "
                                "multiply by a scalar with *");
    static_assert(problem != 4, "tad::matmul(a, b): both are vectors; their inner product is tad::dot(a, b), "
                                "their outer product tad::outer(a, b)");
    static_assert(problem != 5, "tad::matmul(a, b): a comparison (a mask) is not a matrix of numbers; "
                                "turn it into one with tad::select");
    if constexpr (problem != 0) return invalid_expression{};
    else return node<matmul_op, A, B>{a, b};
  }
}

/// `outer(u, v)`: the `m x n` matrix `u v^T` of the vectors u (m elements) and v (n elements).
template <class U, class V>
constexpr auto outer(const U& u, const V& v) {
  if constexpr (detail::poisoned_v<U, V>) {
    return invalid_expression{};
  } else {
    constexpr bool ok = expression<U> && expression<V> && detail::props<U>::rank == 1 &&
                        detail::props<V>::rank == 1 && !detail::has_custom_input_v<U> &&
                        !detail::has_custom_input_v<V>;
    static_assert(ok, "tad::outer(u, v): u and v must be vector expressions");
    if constexpr (!ok) return invalid_expression{};
    else return node<outer_op, U, V>{u, v};
  }
}

/// `transpose(a)`: the matrix expression a with rows and columns swapped, as an operand of
/// matmul (`matmul(transpose(X), Y)` is `X^T Y`, computed without a copy of X).
template <class A>
constexpr auto transpose(const A& a) {
  if constexpr (detail::poisoned_v<A>) {
    return invalid_expression{};
  } else {
    constexpr bool ok = expression<A> && detail::props<A>::rank == 2 && !detail::has_custom_input_v<A>;
    static_assert(ok, "tad::transpose(a): a must be a matrix expression");
    if constexpr (!ok) return invalid_expression{};
    else return node<transpose_op, A>{a};
  }
}

}  // namespace tad
