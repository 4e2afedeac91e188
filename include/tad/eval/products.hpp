#pragma once
/// The compile-time structure of an expression's stages, for the program (eval/program.hpp):
/// how many there are, their post-order indices, the leaves that stand for their values once
/// computed ("lowering"), and which of them a gradient needs. A stage is a matrix product
/// (ops/linalg.hpp) or a let the program evaluates on its own (is_stage_node; decisions.md 56);
/// "product" below means either, where the code does not say otherwise.
///
/// Stages are numbered in post-order (operands before the stage), so a stage's index is the
/// number of stages in its subtree before it plus its offset. Lowering replaces stage K by a
/// variable named `@prodK` that views its result buffer: the elementwise engine then evaluates
/// everything around the stages, and its gradient with respect to `@prodK` is the stage's
/// adjoint.

#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/leaf_types.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/gradient/rules.hpp>
#include <tad/eval/slots.hpp>
#include <tad/ops/linalg.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// `@prodK`, K < 1000: the name of product K's result in the lowered expression.
template <std::size_t K>
struct product_name_chars {
  static_assert(K < 1000, "tad: an expression holds more than 1000 matrix products");
  static constexpr char value[9] = {'@', 'p', 'r', 'o', 'd', char('0' + K / 100), char('0' + K / 10 % 10),
                                    char('0' + K % 10), '\0'};
};
template <std::size_t K>
inline constexpr fixed_string<9> product_name{product_name_chars<K>::value};

/// Is E a let a program evaluates as a stage of its own: an array whose body holds a product
/// or a rule not linear in the adjoint (its value in the workspace, its adjoint summed there
/// from every use, in every operand and around the products, its body's backward once), or a
/// stage the library made (stage_op)? A scalar let stays the engine's. Only a program asks:
/// an expression without products or stage_ops is the engine's whole.
template <class E>
constexpr bool is_stage_let() {
  if constexpr (is_stage_op_node_v<E>) return true;
  else if constexpr (is_let_node_v<E>) return props<E>::rank >= 1 && (has_products_v<E> || !adjoint_linear<E>());
  else return false;
}
/// Is E a stage: a product, a scan or a map (ops/scan.hpp) or a staged let?
template <class E>
inline constexpr bool is_stage_node_v =
    is_product_node_v<E> || is_scan_node_v<std::remove_cvref_t<E>> || is_map_node_v<std::remove_cvref_t<E>> ||
    is_custom_output_node_v<std::remove_cvref_t<E>> || is_stage_let<std::remove_cvref_t<E>>();

/// Is E a staged let that computes nothing of its own: its body is a stage (a let of a product),
/// whose buffers it shares? (A shift computes its own: its argument one element on.)
template <class E>
constexpr bool is_forwarding_let() {
  if constexpr (is_stage_let<E>() && !is_shift_node_v<E>)
    return is_stage_node_v<std::remove_cvref_t<decltype(std::declval<const E&>().arg)>>;
  else return false;
}

/// Does E hold a staged let or an output of a custom_gradient with several outputs (stages
/// whose backward must follow every use's: the program's backward then visits children last
/// to first)?
template <class E>
constexpr bool has_stage_lets() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return is_stage_let<E>() || is_custom_output_node_v<E> || (has_stage_lets<child_t<K, E>>() || ...);
    }(std::make_index_sequence<E::arity>{});
  }
}

/// The number of stages (products and staged lets) in E.
template <class E>
constexpr std::size_t count_products() {
  if constexpr (is_leaf_v<E>) {
    return 0;
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return (count_products<child_t<K, E>>() + ... + 0) + (is_stage_node_v<E> ? 1 : 0);
    }(std::make_index_sequence<E::arity>{});
  }
}

/// The offset of child K of node E when E's products start at Off.
template <class E, std::size_t K, std::size_t Off>
constexpr std::size_t child_offset() {
  return [&]<std::size_t... J>(std::index_sequence<J...>) {
    return Off + (count_products<child_t<J, E>>() + ... + 0);
  }(std::make_index_sequence<K>{});
}

/// Where a lowered product leaf finds its result: the workspace and, per product, the offset
/// and shape of its result (`rows x cols`; a vector result has rank 1).
template <class T, std::size_t NP>
struct product_results {
  T* ws = nullptr;
  std::array<std::size_t, NP> offset{};
  std::array<std::size_t, NP> rows{};
  std::array<std::size_t, NP> cols{};
  /// Will a backward follow this forward? (No: a loop's forward keeps nothing for it.)
  bool backward = true;
};

/// The leaf standing for product K (rank R) of element type T.
template <std::size_t K, int R, class T>
using product_leaf_t = std::conditional_t<R == 2, matrix_var<product_name<K>, T>, array_var<product_name<K>, T>>;

/// e with its products replaced by leaves viewing their results. e's first product is product
/// `base + Off` of the program (base at run time), and its leaves are named from Off: product
/// `base + Off + j` is `@prod` of Off + j. Lowering a subtree with Off = 0 thus numbers its
/// products from 0 wherever it is, so that two subtrees of one type lower to one type, whose
/// engines (its forward, its vector-Jacobian product) are instantiated once.
template <std::size_t Off, class T, std::size_t NP, class E>
constexpr auto lower(const E& e, const product_results<T, NP>& r, std::size_t base = 0) {
  if constexpr (is_leaf_v<E>) {
    return e;
  } else if constexpr (is_stage_node_v<E>) {
    constexpr std::size_t j = Off + count_products<E>() - 1;
    const std::size_t k = base + j;
    const T* p = r.ws == nullptr ? nullptr : r.ws + r.offset[k];
    if constexpr (props<E>::rank == 2) {
      return matrix_var<product_name<j>, T>{p, r.rows[k] * r.cols[k], r.rows[k], r.cols[k]};
    } else {
      return array_var<product_name<j>, T>{p, r.rows[k] * r.cols[k]};
    }
  } else {
    static_assert(!is_transpose_node_v<E>,
                  "tad::transpose(a): a transpose is an operand of tad::matmul only (not yet of elementwise ops)");
    static_assert(!(is_let_node_v<E> && has_products_v<E>),
                  "tad::let: a let of a scalar whose body holds a matrix product (or a stage: a composite's "
                  "matrix argument or a vector broadcast across rows under a rule not linear in the adjoint) is "
                  "not supported yet; let the product (a matrix or vector) and reduce it where it is used "
                  "(doc/linear-algebra.md)");
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(e.op, lower<child_offset<E, K, Off>()>(child<K>(e), r, base)...);
    }(std::make_index_sequence<E::arity>{});
  }
}

/// The rank of each product's result (1: a vector, 2: a matrix), by index.
template <class E, std::size_t Off, std::size_t NP>
constexpr void mark_ranks(std::array<int, NP>& rank) {
  if constexpr (!is_leaf_v<E>) {
    if constexpr (is_stage_node_v<E>) rank[Off + count_products<E>() - 1] = props<E>::rank;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (mark_ranks<child_t<K, E>, child_offset<E, K, Off>(), NP>(rank), ...);
    }(std::make_index_sequence<E::arity>{});
  }
}
template <class E>
constexpr auto product_ranks() {
  std::array<int, count_products<E>()> rank{};
  mark_ranks<E, 0, count_products<E>()>(rank);
  return rank;
}

/// Does an adjoint reach child K of stage-holding node E, when one reaches E (Flows)? Every
/// child of a stage, whose backward pushes into them; a custom output's inputs whenever its
/// rule gives them one: its group's rule runs when an adjoint reaches any of its outputs, which
/// the program knows at run time (program::group_flows_), so its inputs' stages are taken to be
/// reached, and it runs their backward only when the group's rule ran.
template <class E, std::size_t K, bool Flows>
constexpr bool child_flows() {
  if constexpr (is_custom_output_node_v<E>) return adjoint_flows<E, K>::value;
  else return Flows && (is_stage_node_v<E> || adjoint_flows<E, K>::value);
}

/// For each stage, the custom output (its index) whose inputs hold it, innermost; `NP` if none.
template <class E, std::size_t Off, std::size_t Enc, std::size_t NP>
constexpr void mark_enclosing(std::array<std::size_t, NP>& enc) {
  if constexpr (!is_leaf_v<E>) {
    constexpr std::size_t k = Off + count_products<E>() - 1;
    if constexpr (is_stage_node_v<E>) enc[k] = Enc;
    constexpr std::size_t inner = is_custom_output_node_v<E> ? k : Enc;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (mark_enclosing<child_t<K, E>, child_offset<E, K, Off>(), inner, NP>(enc), ...);
    }(std::make_index_sequence<E::arity>{});
  }
}
template <class E>
constexpr auto enclosing_custom() {
  constexpr std::size_t NP = count_products<E>();
  std::array<std::size_t, NP> enc{};
  mark_enclosing<E, 0, NP, NP>(enc);
  return enc;
}

/// Which products a gradient with respect to `Vs` needs (their adjoint is computed and their
/// backward runs): those reached from the top through ops an adjoint flows through
/// (adjoint_flows: not below stop_gradient, a straight-through value, ...) and whose operands
/// reach a variable of Vs.
template <class E, std::size_t Off, bool Flows, std::size_t NP, class... Vs>
constexpr void mark_live(std::array<bool, NP>& live) {
  if constexpr (!is_leaf_v<E>) {
    constexpr bool here = is_stage_node_v<E>;
    if constexpr (here) live[Off + count_products<E>() - 1] = Flows && reaches_any_v<E, Vs...>;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (mark_live<child_t<K, E>, child_offset<E, K, Off>(), child_flows<E, K, Flows>(), NP, Vs...>(live), ...);
    }(std::make_index_sequence<E::arity>{});
  }
}
/// live_products<E, Flows, Vs...>: for E, whose products are numbered from 0, and which an
/// adjoint reaches (Flows: the whole expression, or a subtree an adjoint flows into) or not.
template <class E, bool Flows, class... Vs>
constexpr auto live_products() {
  std::array<bool, count_products<E>()> live{};
  mark_live<E, 0, Flows, count_products<E>(), Vs...>(live);
  return live;
}

/// Which products an adjoint reaches from the top at all (as mark_live, whatever the variables).
template <class E, std::size_t Off, bool Flows, std::size_t NP>
constexpr void mark_flows(std::array<bool, NP>& flows) {
  if constexpr (!is_leaf_v<E>) {
    constexpr bool here = is_stage_node_v<E>;
    if constexpr (here) flows[Off + count_products<E>() - 1] = Flows;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (mark_flows<child_t<K, E>, child_offset<E, K, Off>(), child_flows<E, K, Flows>(), NP>(flows), ...);
    }(std::make_index_sequence<E::arity>{});
  }
}
template <class E>
constexpr auto flowing_products() {
  std::array<bool, count_products<E>()> flows{};
  mark_flows<E, 0, true, count_products<E>()>(flows);
  return flows;
}

/// Are a and b (of one type) the same computation: the same views, the same scalars (bit for
/// bit), the same op parameters? False when that cannot be told (an op or leaf whose bytes do
/// not represent its value uniquely): then two products are computed twice, never shared wrongly.
template <class V>
inline constexpr bool comparable_bits_v =
    (std::is_floating_point_v<V> && (sizeof(V) == 4 || sizeof(V) == 8)) || std::has_unique_object_representations_v<V>;
template <class V>
bool same_bits(const V& a, const V& b) {
  if constexpr (!comparable_bits_v<V>) {
    return false;  // not decidable from its bytes: never shared
  } else if constexpr (std::is_floating_point_v<V>) {
    using U = std::conditional_t<sizeof(V) == 8, std::uint64_t, std::uint32_t>;
    static_assert(sizeof(U) == sizeof(V));
    return std::bit_cast<U>(a) == std::bit_cast<U>(b);
  } else {
    // Unique object representations: every byte is value.
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
    return std::memcmp(&a, &b, sizeof(V)) == 0;
  }
}
template <class N>
bool same_computation(const N& a, const N& b) {
  if constexpr (is_leaf_v<N>) {
    if constexpr (std::is_empty_v<N>) return true;
    else if constexpr (N::is_array && !is_column_v<N>) return same_view(a, b);
    else if constexpr (requires { a.src; a.val; }) return a.src == b.src && (a.src != nullptr || same_bits(a.val, b.val));
    else if constexpr (requires { a.val; }) return same_bits(a.val, b.val);
    else return false;
  } else {
    using Op = typename N::op_type;
    bool same = true;
    if constexpr (is_custom_output_node_v<N>) {
      same = a.op.id == b.op.id;  // (its bodies and rule cannot be told from bytes: one call, one node)
    } else if constexpr (!std::is_empty_v<Op> && !requires { Op::is_stage; }) {  // (a stage's id is not data)
      same = same_bits(a.op, b.op);
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      same = same && (same_computation(child<K>(a), child<K>(b)) && ...);
    }(std::make_index_sequence<N::arity>{});
    return same;
  }
}

}  // namespace tad::detail
