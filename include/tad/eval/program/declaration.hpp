#pragma once
/// `tad::program`: evaluates an expression that holds matrix products (ops/linalg.hpp), with
/// every intermediate buffer in one workspace (doc/linear-algebra.md, decisions.md 38). Forward,
/// in post-order: each product's operands are read in place when they are views, or evaluated
/// by the engine into a buffer, then multiplied by Eigen into the product's result buffer; the
/// expression around the products is the engine's, each product replaced by a variable viewing
/// its result (eval/products.hpp). Backward: eval/program/backward.hpp. Every modifier is a node
/// of some expression the engine runs, so it applies where it stands, as elsewhere in tad.

#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/api.hpp>
#include <tad/eval/canonical.hpp>
#include <tad/eval/contract.hpp>
#include <tad/eval/eigen_maps.hpp>
#include <tad/eval/eigen_products.hpp>
#include <tad/eval/products.hpp>
#include <tad/eval/workspace_pool.hpp>
#include <tad/ops/linalg.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tad {

namespace detail {
/// The seed of program::grad_with for grad_into: none (the top is the scalar E).
struct no_seed {};
/// A loop body's forward values (its stages' results and evaluated operands), kept per step for
/// the backward: the buffers are saved_[begin .. end) of the program (offset, count), `size`
/// elements in all, kept at `store + slot * size` (eval/program/scan.hpp).
struct saved_values {
  std::size_t begin = 0, end = 0, size = 0, store = 0;
  std::size_t first = 0, last = 0;  // the body's stages: first .. last - 1
  std::size_t copied = 0;           // where in a slot the copied buffers start (the values before)
};
/// A scan's buffers in the workspace (offsets) and its shapes (eval/program/scan.hpp).
struct scan_layout {
  std::size_t steps = 0;                       // T
  std::size_t carry = 0;                       // elements of a carry (of a tuple: of all its arrays, in order)
  std::array<std::size_t, 4> part{};           // a tuple: where each array starts in the carry
  std::array<std::size_t, 4> part_rows{}, part_cols{};  // ... and its shape
  std::size_t first = 0;                       // elements of the first array (the scan's value)
  std::size_t values = 0;                      // a tuple with every_step: the first arrays, stacked
  std::size_t input = 0;                       // elements of a step's input
  std::size_t in_rows = 0, in_cols = 0;        // its shape (a vector of n: n x 1)
  std::size_t block = 0;                       // checkpointing: every block-th carry kept (0: every carry)
  std::size_t states = 0;                      // T + 1 carries, h0's first; checkpointed: T / block + 1
  std::size_t seg = 0;                         // checkpointed: a block's carries, recomputed
  std::size_t last = 0;                        // the last carry (checkpointed; else in states)
  std::size_t xs = 0;                          // xs, evaluated: T inputs
  std::size_t dc = 0, dn = 0;                  // the carry's adjoint after a step, and before it
  std::size_t dxs = 0;                         // xs's adjoint: T inputs
  std::size_t scratch = 0;                     // the placeholders' gradient scratch: a carry, an input
  saved_values saved{};                        // the body's forward values, per step
};
/// Where a body's placeholders look at one step, by slot (detail::placeholder_slot): the carry
/// (0; a tuple's others 4, 5, 6), the input or a map's first slice (1), a map's second and
/// third slices (2, 3), each with its shape (a scalar: 1 x 1).
template <class T>
struct scan_binding {
  std::array<const T*, 7> data{};
  std::array<std::size_t, 7> rows{}, cols{};
};
/// A map's buffers in the workspace (offsets) and its shapes (eval/program/scan.hpp).
struct map_layout {
  std::size_t count = 0;                          // K
  std::array<std::size_t, 3> in_rows{}, in_cols{};  // a slice's shape (a row of n: n x 1)
  std::array<std::size_t, 3> input{};             // elements of a slice
  std::array<std::size_t, 3> xs{}, dxs{};         // an input, evaluated, and its adjoint
  std::size_t out = 0;                            // elements of the body's value
  std::size_t scratch = 0;                        // the placeholders' gradient scratch
  saved_values saved{};                           // the body's forward values, per k
};
/// The buffers of a custom_gradient's group of outputs (eval/program/custom.hpp), kept by its
/// first output planned (its leader): one block of its K outputs' values, then its inputs'
/// values (a scalar input: one element), which a loop body keeps per step; and, apart, the K
/// outputs' summed adjoints and the inputs' adjoints.
struct custom_layout {
  std::size_t count = 0;                 // elements of an output (and of an array input)
  std::size_t block = 0, size = 0;       // the block: offset (before a loop's relocation), elements
  std::array<std::size_t, 3> in{};       // input i's values: from the block's start
  std::size_t dsum = 0;                  // the outputs' summed adjoints, K x count
  std::array<std::size_t, 3> dx{};       // input i's adjoint
};
template <class S>
inline constexpr bool is_wrt_target_v = false;
template <class X, class T>
inline constexpr bool is_wrt_target_v<wrt_target<X, T>> = true;
}  // namespace detail

/// Evaluates the expression E (which may hold matrix products) again and again: its value, its
/// gradient with respect to any of its variables, into the caller's buffers, with every
/// intermediate (products' results and adjoints, evaluated operands) in one workspace that the
/// program allocates at construction, or that the caller provides (`workspace_size()`
/// elements). Every member is const and may be called from any number of threads at once
/// (decisions.md 52): a call without a workspace argument leases one of the program's own for
/// its duration, the first if no other call holds it, else a spare, which it allocates only
/// when more calls overlap than ever before and which the program keeps for later calls; a call
/// with a workspace uses only the caller's. The expression's leaves view the caller's data, as
/// everywhere in tad: the program reads them at each call (threads that share a program share
/// its leaves' data, which no call writes; the gradient buffers are each call's own).
template <class E>
class program {
 public:
  using T = value_type_t<E>;
  /// The stages of E: its products and its staged lets (decisions.md 56), in post-order.
  static constexpr std::size_t stages = detail::count_products<E>();

  explicit program(E e) : e_(std::move(e)) {
    std::size_t size = 0;
    plan<E, true>(e_, size, 0);
    settle_groups();
    // Packing space for the GEMMs (one at a time): Eigen's would come from the heap above 128 KB.
    pack_ = size;
    size += pack_size_;
    // The expression around the products is checked here too, so that a call never writes a
    // gradient (a variable's zero, an absent one's) before finding a shape error.
    if constexpr (!detail::is_leaf_v<top_t>) (void)detail::bind_extents(detail::lower<0>(e_, shapes_));
    // The expression's arrays, for the checks of each call's buffers (the views are fixed).
    std::size_t variables = 0;
    detail::visit_arrays(e_, [&](const auto& leaf) {
      arrays_[n_arrays_++] = detail::view_info<T>(leaf);
      if constexpr (std::remove_cvref_t<decltype(leaf)>::is_variable) variables += leaf.size;
    });
    // Scratch for the variables' shares from operand expressions: at most every variable.
    scratch_ = size;
    size += variables;
    detail::visit_leaves<0>(e_, [&]<std::size_t I>(const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (L::is_variable && !L::is_array) ++size;
    });
    // Staging for gradient buffers with strides or in column-major order (eval/targets.hpp).
    staging_ = size;
    size += variables;
    size_ = size;
    node_.fill(nullptr);  // pointers into this object's e_, for plan only
    own_ = detail::workspace_pool<T>(size_);
  }

  /// The number of products an evaluation computes: the expression's, less those that repeat
  /// an outermost product (the same computation on the same data), which share its result, and
  /// those inside a repeated use of a let (which is one node).
  std::size_t computed_products() const noexcept {
    std::size_t n = 0;
    for (std::size_t k = 0; k < stages; ++k) {
      if (matmul_[k] && !skip_[k]) ++n;
    }
    return n;
  }
  /// The number of elements of T a caller-provided workspace needs.
  std::size_t workspace_size() const noexcept { return size_; }
  const E& expression() const noexcept { return e_; }
  /// The shape of an array E's value (a vector: `n x 1`), for the caller's output buffer.
  std::size_t result_rows() const { return top_shape().first; }
  std::size_t result_cols() const { return top_shape().second; }

  /// The value of a scalar E; for an array E, see evaluate.
  T value() const {
    const auto ws = own_.take();  // a workspace no other call holds, until this call returns
    return value_with(ws.span());
  }
  T value(std::span<T> ws) const { return value_with(ws); }

  /// Evaluates an array E into out (as tad::evaluate).
  template <class Out>
  void evaluate(Out&& out) const {
    const auto ws = own_.take();
    evaluate_with(ws.span(), out);
  }
  template <class Out>
  void evaluate(std::span<T> ws, Out&& out) const {
    evaluate_with(ws, out);
  }

  /// Value of a scalar E; the gradients go into the caller's buffers, as tad::grad_into.
  template <class... X, class... T2>
  T grad_into(const wrt_target<X, T2>&... targets) const {
    const auto ws = own_.take();
    return grad_with(ws.span(), detail::no_seed{}, targets...);
  }
  template <class... X, class... T2>
  T grad_into(std::span<T> ws, const wrt_target<X, T2>&... targets) const {
    return grad_with(ws, detail::no_seed{}, targets...);
  }

  /// Value and gradients, as tad::grad (the gradients are allocated per call).
  template <class... X>
  auto grad(const X&... x) const {
    std::tuple<T, detail::gradient_t<T, X>...> result{T(0), detail::make_gradient<T>(x)...};
    const auto ws = own_.take();
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      std::get<0>(result) = grad_with(ws.span(), detail::no_seed{}, wrt(x, std::get<K + 1>(result))...);
    }(std::index_sequence_for<X...>{});
    return result;
  }

  /// Vector-Jacobian product of an array E, as tad::vjp_into: the value of `sum(seed * E)`; the
  /// gradients of it go into the caller's buffers. `seed` is contiguous storage of E's element
  /// type and E's shape (result_rows() x result_cols(), row-major; a tad::matrix's shape is
  /// checked); the seeded top is the engine's, then the products' backward as for grad_into.
  template <class Seed, class... X, class... T2>
  T vjp_into(const Seed& seed, const wrt_target<X, T2>&... targets) const {
    const std::span<const T> s = seed_of(seed, "tad::program::vjp_into(seed, ...): seed");
    const auto ws = own_.take();
    return grad_with(ws.span(), s, targets...);
  }
  template <class Seed, class... X, class... T2>
    requires(!detail::is_wrt_target_v<Seed>)
  T vjp_into(std::span<T> ws, const Seed& seed, const wrt_target<X, T2>&... targets) const {
    return grad_with(ws, seed_of(seed, "tad::program::vjp_into(seed, ...): seed"), targets...);
  }
  /// The same, the gradients allocated per call (as tad::vjp): `auto [v, gW, gx] = p.vjp(seed, W, x)`.
  template <class Seed, class... X>
  auto vjp(const Seed& seed, const X&... x) const {
    const std::span<const T> s = seed_of(seed, "tad::program::vjp(seed, x...): seed");
    std::tuple<T, detail::gradient_t<T, X>...> result{T(0), detail::make_gradient<T>(x)...};
    const auto ws = own_.take();
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      std::get<0>(result) = grad_with(ws.span(), s, wrt(x, std::get<K + 1>(result))...);
    }(std::index_sequence_for<X...>{});
    return result;
  }

 private:
  using results = detail::product_results<T, stages>;
  using layout = detail::product_layout;

  E e_;
  std::array<layout, stages> layout_{};
  results shapes_{};  // ws == nullptr: the shapes and offsets of the products' results
  /// Outermost products that are the same computation (softmax_cross_entropy(z, labels) holds
  /// z twice; a loss may use a product twice) are computed once: alias_[k] is the earlier one
  /// product k shares its result with (k itself if none); skip_[k]: product k's stage does not
  /// run (k is such an alias, or inside one). The alias's adjoint is added to the original's
  /// before the backward, whose rules then run once, on the sum.
  std::array<std::size_t, stages> alias_{};
  std::array<bool, stages> skip_{};
  std::array<bool, stages> has_alias_{};  // some later stage is an alias of this one
  std::array<bool, stages> matmul_{};     // a product (not a staged let)
  std::array<const void*, stages> tag_{};   // the node type of an outermost product
  std::array<const void*, stages> node_{};  // ... and the node, during construction
  std::array<detail::scan_layout, stages> scans_{};  // a scan's buffers (eval/program/scan.hpp)
  std::array<detail::map_layout, stages> maps_{};    // a map's
  /// The first stage an alias may share with: 0, or a scan body's first while it is planned
  /// (a let in a body is one node per step, not one with a let outside it).
  std::size_t alias_floor_ = 0;
  /// The loops' bodies' forward values. A stage's value is computed in its step's slot (its
  /// offset there: slot_at_[k]; none: not relocated), where the backward reads it; the
  /// products' operand copies are copied there and back: (offset, count) of each such buffer
  /// (detail::saved_values).
  std::vector<std::array<std::size_t, 2>> saved_;
  std::array<std::size_t, stages> slot_at_ = filled<stages>(layout::none);
  std::array<bool, stages> shift_{};  // a shift (ops/shift.hpp): its value buffer holds one more element
  /// custom_gradient with several outputs (eval/program/custom.hpp): each output's group, as the
  /// index of its leader (the first output planned; none: not an output), the call's id, the
  /// leader's buffers; whether an adjoint reaches an output (flows_: as
  /// detail::flowing_products, and, inside a group's inputs, only when an adjoint reaches some
  /// output of that group) and a group (group_flows_, by leader). Settled at construction
  /// (settle_groups).
  std::array<std::size_t, stages> group_ = filled<stages>(layout::none);
  std::array<std::uint64_t, stages> group_id_{};
  std::array<std::size_t, stages> group_out_{};  // which output of its group
  /// Inside a subtree that never runs (an alias's, another use of a group's output's): its
  /// adjoint is never written.
  std::array<bool, stages> buried_{};
  std::array<detail::custom_layout, stages> customs_{};
  std::array<bool, stages> flows_{};
  std::array<bool, stages> group_flows_{};
  template <std::size_t K>
  static constexpr std::array<std::size_t, K> filled(std::size_t v) {
    std::array<std::size_t, K> a{};
    a.fill(v);
    return a;
  }
  template <class N>
  static constexpr char type_tag = 0;
  using top_t = std::remove_cvref_t<decltype(detail::lower<0>(std::declval<const E&>(), std::declval<const results&>()))>;
  std::array<detail::array_view_info<T>, detail::leaf_count<E>()> arrays_{};
  std::size_t n_arrays_ = 0;
  std::size_t pack_ = 0;       // the GEMMs' packing buffers: offset
  std::size_t pack_size_ = 0;  // ... and elements
  std::size_t scratch_ = 0;
  std::size_t staging_ = 0;
  std::size_t size_ = 0;
  detail::workspace_pool<T> own_;  // for the calls without a workspace argument (thread-safe)

  std::pair<std::size_t, std::size_t> top_shape() const {
    const auto top = detail::lower<0>(e_, shapes_);
    using L = std::remove_cvref_t<decltype(top)>;
    if constexpr (!is_array_v<E>) {
      return {1, 1};
    } else if constexpr (detail::is_leaf_v<L>) {
      if constexpr (rank_v<E> == 2) return {top.rows, top.cols}; else return {top.size, 1};
    } else if constexpr (rank_v<E> == 2) {
      const detail::matrix_shape s = detail::top_shape(top);
      return {s.rows, s.cols};
    } else {
      return {detail::top_length<L>(detail::bind_extents(top)), 1};
    }
  }

  void check_workspace(std::span<T> ws) const {
    if (ws.size() < size_) throw shape_error("tad::program: workspace", size_, ws.size());
  }
  std::span<T> pack(const results& r) const { return {r.ws + pack_, pack_size_}; }
  results bind(std::span<T> ws) const {
    results r = shapes_;
    r.ws = ws.data();
    return r;
  }

  // ---- construction: shapes and offsets, post-order ------------------------------------

  template <class O>
  static std::array<std::size_t, 2> operand_shape(const O& o, const results& r, std::size_t base, bool left,
                                                  bool outer) {
    using op = detail::operand_of<O>;
    const auto& inner = op::inner_of(o);
    const auto lowered = detail::lower<0>(inner, r, base);
    using L = std::remove_cvref_t<decltype(lowered)>;
    if constexpr (op::rank == 2) {
      if constexpr (op::view) {
        return {lowered.rows, lowered.cols};
      } else {
        (void)detail::bind_extents(lowered);  // throws for operands of different shapes
        const detail::matrix_shape s = detail::top_shape(lowered);
        return {s.rows, s.cols};
      }
    } else {
      std::size_t n = 0;
      if constexpr (op::view) n = lowered.size;
      else n = detail::top_length<L>(detail::bind_extents(lowered));
      // matmul: a row on the left, a column on the right; outer: the other way round.
      const bool row = left != outer;
      return row ? std::array<std::size_t, 2>{1, n} : std::array<std::size_t, 2>{n, 1};
    }
  }

  /// Node n's products, its first one product `base` (Outer: no product is an ancestor of n).
  /// The first product's index is a run-time argument here and in the forward and the
  /// backward, so that two subtrees of one type (softmax_cross_entropy's two uses of its
  /// logits) share their code.
  template <class N, bool Outer>
  void plan(const N& n, std::size_t& size, std::size_t base) {
    if constexpr (detail::is_scan_node_v<N>) {
      plan_scan(n, size, base);
    } else if constexpr (detail::is_map_node_v<N>) {
      plan_map(n, size, base);
    } else if constexpr (detail::is_custom_output_node_v<N>) {
      plan_custom(n, size, base);  // (its inputs' stages too)
    } else if constexpr (!detail::is_leaf_v<N>) {
      constexpr bool product = detail::is_product_node_v<N>;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (plan<detail::child_t<K, N>, Outer && !detail::is_stage_node_v<N>>(detail::child<K>(n), size,
                                                                           base + detail::child_offset<N, K, 0>()),
         ...);
      }(std::make_index_sequence<N::arity>{});
      if constexpr (detail::is_stage_let<N>()) plan_let(n, size, base);
      if constexpr (product) {
        const std::size_t k = base + detail::count_products<N>() - 1;
        constexpr bool outer = std::is_same_v<typename detail::forward_op_of<typename N::op_type>::type, outer_op>;
        using A = detail::operand_of<std::remove_cvref_t<decltype(n.lhs)>>;
        using B = detail::operand_of<std::remove_cvref_t<decltype(n.rhs)>>;
        layout& p = layout_[k];
        const auto a = operand_shape(n.lhs, shapes_, base, true, outer);
        const auto b = operand_shape(n.rhs, shapes_, base + detail::child_offset<N, 1, 0>(), false, outer);
        p.a_rows = a[0], p.a_cols = a[1], p.b_rows = b[0], p.b_cols = b[1];
        const std::size_t am = A::transposed ? a[1] : a[0], ak = A::transposed ? a[0] : a[1];
        const std::size_t bk = B::transposed ? b[1] : b[0], bn = B::transposed ? b[0] : b[1];
        if (ak != bk) {
          throw shape_error::with_message("tad::matmul(a, b): a is " + detail::shape_string(am, ak) + ", b is " +
                                              detail::shape_string(bk, bn) + ": a's columns must be b's rows",
                                          ak, bk);
        }
        // No overflow: each extent is some array's (matrix_area checked it) but the result's.
        if (am != 0 && bn > static_cast<std::size_t>(-1) / 4 / am)
          throw std::length_error("tad::matmul(a, b): the result's size overflows");
        const auto take = [&](std::size_t count) {
          const std::size_t at = size;
          size += count;
          return at;
        };
        matmul_[k] = true;
        shapes_.rows[k] = am, shapes_.cols[k] = bn;
        shapes_.offset[k] = take(am * bn);
        p.dy = take(am * bn);
        if constexpr (!A::view) p.a = take(a[0] * a[1]), p.da = take(a[0] * a[1]);
        if constexpr (!B::view) p.b = take(b[0] * b[1]), p.db = take(b[0] * b[1]);
        // The forward's GEMM and the backward's (either orientation of a transposed operand's).
        for (const auto& g : {std::array{am, bn, ak}, std::array{am, ak, bn}, std::array{ak, am, bn},
                              std::array{ak, bn, am}, std::array{bn, ak, am}})
          pack_size_ = std::max(pack_size_, detail::gemm_pack_elements<T>(g[0], g[1], g[2]));
        alias_[k] = k;
        // Shared only when every rule in it is linear in the adjoint: the backward then runs
        // once on the sum of the uses' adjoints, the same numbers. A product with another rule
        // is used twice only inside per_use (else a compile error, eval/shared_rules.hpp), one
        // rule per use (decisions.md 46, 54).
        if constexpr (Outer && detail::adjoint_linear<N>()) {
          constexpr auto flows = detail::flowing_products<E>();
          tag_[k] = &type_tag<N>;
          node_[k] = &n;
          for (std::size_t j = alias_floor_; j < k; ++j) {
            if (tag_[j] == tag_[k] && alias_[j] == j && flows[j] == flows[k] &&
                detail::same_computation(*static_cast<const N*>(node_[j]), n)) {
              make_alias(base, k, j);
              break;
            }
          }
        }
      }
    }
  }

  // ---- scans (eval/program/scan.hpp) --------------------------------------------------

  /// The shape of the value of l (lowered; a vector: n x 1), checked (a tad::shape_error).
  template <int R, class L>
  static std::array<std::size_t, 2> value_shape(const L& l);
  /// l's value into `count` elements at out.
  template <class L>
  static void evaluate_into(const L& l, T* out, std::size_t count);
  template <class N>
  void plan_scan(const N& n, std::size_t& size, std::size_t base);
  template <class N>
  void scan_forward(const N& n, const results& r, std::size_t base) const;
  template <class N, class... X, class... T2>
  void scan_backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                     const wrt_target<X, T2>&... t) const;
  template <class N>
  void scan_steps(const N& n, const results& r, std::size_t base, const T* from, T* into, std::size_t start,
                  std::size_t count) const;
  detail::saved_values plan_saved(std::size_t first, std::size_t last, std::size_t slots, std::size_t& size);
  void save(const detail::saved_values& v, T* ws, std::size_t slot) const;
  void restore(const detail::saved_values& v, T* ws, std::size_t slot) const;
  results at_slot(const results& r, const detail::saved_values& v, std::size_t slot) const;
  template <class N>
  void plan_map(const N& n, std::size_t& size, std::size_t base);
  template <class N>
  void map_forward(const N& n, const results& r, std::size_t base) const;
  template <class N, class... X, class... T2>
  void map_backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                    const wrt_target<X, T2>&... t) const;
  template <class N>
  detail::scan_binding<T> map_bound(const N& n, const results& r, std::size_t base, std::size_t k) const;
  template <class I, class L, class... X, class... T2>
  void carry_backward(const L& lowered, const results& r, std::size_t base, const detail::scan_layout& s,
                      std::size_t seed, const std::array<T*, sizeof...(X)>& scratch,
                      const wrt_target<X, T2>&... t) const;
  template <class N, class... X, class... T2>
  void scan_body_backward(const N& n, const results& r, std::size_t base, const T* carry, const T* input,
                          std::size_t slot, std::size_t seed, const std::array<T*, sizeof...(X)>& scratch,
                          const wrt_target<X, T2>&... t) const;

  /// Stage k, whose subtree's stages start at base, is stage j's value: it shares j's result,
  /// and neither it nor the stages inside it run (forward or backward); its adjoint is added
  /// to j's before j's backward (the stages inside it are nobody's aliases: their adjoints are
  /// never written).
  void make_alias(std::size_t base, std::size_t k, std::size_t j) {
    alias_[k] = j;
    has_alias_[j] = true;
    shapes_.offset[k] = shapes_.offset[j];
    for (std::size_t q = base; q <= k; ++q) skip_[q] = true;
    for (std::size_t q = base; q < k; ++q) alias_[q] = q, buried_[q] = true;
  }

  /// A staged let (detail::is_stage_let; decisions.md 56), its body's stages planned: its value
  /// and adjoint buffers (a body that is a product: that product's), or those of the earlier
  /// occurrence of the same let that an adjoint reaches alike (a tad::let's name is one node;
  /// a stage_op's id, core/let.hpp).
  template <class N>
  void plan_let(const N& n, std::size_t& size, std::size_t base) {
    using B = decltype(n.arg);
    const std::size_t k = base + detail::count_products<N>() - 1;
    const auto lowered = detail::lower<0>(n.arg, shapes_, base);
    using L = std::remove_cvref_t<decltype(lowered)>;
    if constexpr (detail::is_leaf_v<L> && detail::is_stage_node_v<B>) {
      shapes_.rows[k] = shapes_.rows[k - 1], shapes_.cols[k] = shapes_.cols[k - 1];
    } else if constexpr (detail::props<N>::rank == 2) {
      (void)detail::bind_extents(lowered);  // throws for arguments of different shapes
      const detail::matrix_shape sh = detail::top_shape(lowered);
      shapes_.rows[k] = sh.rows, shapes_.cols[k] = sh.cols;
    } else {
      shapes_.rows[k] = detail::top_length<L>(detail::bind_extents(lowered)), shapes_.cols[k] = 1;
    }
    const std::size_t count = shapes_.rows[k] * shapes_.cols[k];
    if constexpr (detail::is_shift_node_v<N>) {
      // A shift: a zero, then its argument (the result views the first `count`); its adjoint,
      // then a zero (its argument's adjoint is read from the second element on).
      shift_[k] = true;
      shapes_.offset[k] = size, size += count + 1;
      layout_[k].dy = size, size += count + 1;
    } else if constexpr (detail::is_stage_node_v<B>) {
      // The let of a product (or of another stage): its buffers, of which the let is the only user.
      shapes_.offset[k] = shapes_.offset[k - 1];
      layout_[k].dy = layout_[k - 1].dy;
    } else {
      shapes_.offset[k] = size, size += count;
      layout_[k].dy = size, size += count;
    }
    alias_[k] = k;
    constexpr auto flows = detail::flowing_products<E>();
    tag_[k] = &type_tag<N>;
    node_[k] = &n;
    const auto same = [&](std::size_t j) {
      if constexpr (detail::is_let_node_v<N>) {
        return true;
      } else if constexpr (detail::is_shift_node_v<N>) {
        return detail::same_computation(*static_cast<const N*>(node_[j]), n);  // (no id: linear, any copy may share)
      } else {
        // One build (a composite's two reads), or two builds of one computation on the same
        // data (two copies of one expression: one node, as a let's copies are). Stages built in
        // constant evaluation have no id: one node per type.
        const N& other = *static_cast<const N*>(node_[j]);
        return other.op.id == n.op.id || detail::same_computation(other, n);
      }
    };
    for (std::size_t j = alias_floor_; j < k; ++j) {
      if (tag_[j] == tag_[k] && alias_[j] == j && !skip_[j] && flows[j] == flows[k] && same(j)) {
        make_alias(base, k, j);
        break;
      }
    }
  }

  // ---- custom_gradient with several outputs (eval/program/custom.hpp) -------------------------

  template <class N>
  void plan_custom(const N& n, std::size_t& size, std::size_t base);
  void settle_groups();
  template <class N>
  void custom_forward(const N& n, const results& r, std::size_t base) const;
  template <class N, class... X, class... T2>
  void custom_backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                       const wrt_target<X, T2>&... t) const;
  template <class N, class... X, class... T2>
  void rule_backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                     const wrt_target<X, T2>&... t) const;

  // ---- forward, post-order ----------------------------------------------------------------

  /// Calls f with the Eigen view of operand O (inner, then transposed if it is): the view's
  /// map, or its buffer's, which `Evaluate` fills first (the forward; the backward reads what
  /// the forward left there).
  template <bool Evaluate, class O, class F>
  void with_operand(const O& o, const results& r, std::size_t base, std::size_t rows, std::size_t cols,
                    std::size_t buf, F&& f) const {
    using op = detail::operand_of<O>;
    const auto lowered = detail::lower<0>(op::inner_of(o), r, base);
    const auto use = [&](const auto& m) {
      if constexpr (op::transposed) f(m.transpose()); else f(m);
    };
    if constexpr (op::view) {
      use(detail::view_map<T>(lowered, rows, cols));
    } else {
      if constexpr (Evaluate) tad::evaluate(detail::canonical(lowered), detail::ws_span(r.ws, buf, rows * cols));
      use(detail::const_map<T>(r.ws + buf, rows, cols));
    }
  }

  /// Node n's products, its first one product `base`, post-order.
  template <class N>
  void forward(const N& n, const results& r, std::size_t base) const {
    if constexpr (detail::is_stage_node_v<N>) {
      if (skip_[base + detail::count_products<N>() - 1]) return;  // an alias: its original computes it
    }
    if constexpr (detail::is_scan_node_v<N>) {
      scan_forward(n, r, base);
    } else if constexpr (detail::is_map_node_v<N>) {
      map_forward(n, r, base);
    } else if constexpr (detail::is_custom_output_node_v<N>) {
      custom_forward(n, r, base);  // (its inputs' stages too)
    } else if constexpr (!detail::is_leaf_v<N>) {
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (forward(detail::child<K>(n), r, base + detail::child_offset<N, K, 0>()), ...);
      }(std::make_index_sequence<N::arity>{});
      if constexpr (detail::is_shift_node_v<N>) {
        // A shift: a zero, then its argument, its stages computed.
        const std::size_t k = base + detail::count_products<N>() - 1, count = r.rows[k] * r.cols[k];
        r.ws[r.offset[k]] = T(0);
        tad::evaluate(detail::canonical(detail::lower<0>(n.arg, r, base)),
                      detail::ws_span(r.ws, r.offset[k] + 1, count));
      } else if constexpr (detail::is_stage_let<N>() && !detail::is_forwarding_let<N>()) {
        // A staged let: its body, its stages computed, into its buffer.
        const std::size_t k = base + detail::count_products<N>() - 1;
        tad::evaluate(detail::canonical(detail::lower<0>(n.arg, r, base)),
                      detail::ws_span(r.ws, r.offset[k], r.rows[k] * r.cols[k]));
      }
      if constexpr (detail::is_product_node_v<N>) {
        const std::size_t k = base + detail::count_products<N>() - 1;
        const std::size_t base_b = base + detail::child_offset<N, 1, 0>();
        const layout& p = layout_[k];
        auto y = detail::dense_map<T>(r.ws + r.offset[k], r.rows[k], r.cols[k]);
        with_operand<true>(n.lhs, r, base, p.a_rows, p.a_cols, p.a, [&](const auto& a) {
          with_operand<true>(n.rhs, r, base_b, p.b_rows, p.b_cols, p.b,
                             [&](const auto& b) { detail::assign_product<false>(y, a * b, pack(r)); });
        });
      }
    }
  }

  // ---- backward, pre-order (eval/program/backward.hpp) -------------------------------------

  template <std::size_t P, int R>
  auto product_target(const results& r, std::size_t q) const;
  template <class L, class S, bool Flows, class... X>
  auto inner_product_targets(const results& r, std::size_t base) const;
  template <class L, class... X, class... T2>
  static void add_scratch(const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t);
  template <class O, class G, class... X, class... T2>
  void operand_backward(const O& o, const results& r, std::size_t base, std::size_t rows, std::size_t cols,
                        std::size_t buf, const std::array<T*, sizeof...(X)>& scratch, G&& g,
                        const wrt_target<X, T2>&... t) const;
  template <class I, class L, class... X, class... T2>
  void seeded_backward(const L& lowered, const results& r, std::size_t base, std::size_t seed, std::size_t count,
                       const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const;
  template <class I, class L, class S, class... X, class... T2>
  void seeded_backward_with(const L& lowered, const results& r, std::size_t base, const S& seeded_of,
                            const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const;
  template <class... X>
  void gather_aliases(const results& r, std::size_t k) const;
  template <class N, bool Flows, class... X, class... T2>
  void backward(const N& n, const results& r, std::size_t base, const std::array<T*, sizeof...(X)>& scratch,
                const wrt_target<X, T2>&... t) const;

  // ---- entry points ------------------------------------------------------------------------

  T value_with(std::span<T> ws) const {
    static_assert(!is_array_v<E>, "tad::program::value(): the expression is array-valued; use evaluate(out)");
    check_workspace(ws);
    results r = bind(ws);
    r.backward = false;  // (a value only: no loop keeps its forward values)
    forward(e_, r, 0);
    return tad::value(detail::lower<0>(e_, r));
  }

  template <class Out>
  void evaluate_with(std::span<T> ws, Out&& out) const {
    check_workspace(ws);
    results r = bind(ws);
    r.backward = false;  // (a value only: no loop keeps its forward values)
    forward(e_, r, 0);
    const auto top = detail::lower<0>(e_, r);
    if constexpr (detail::is_leaf_v<std::remove_cvref_t<decltype(top)>>) {
      // The expression is one product: copy its result.
      const std::size_t n = top.size;
      if (std::ranges::size(out) != n) throw shape_error("tad::evaluate(e, out): out", n, std::ranges::size(out));
      for (std::size_t i = 0; i < n; ++i) std::ranges::data(out)[i] = top.data[i];
    } else {
      tad::evaluate(top, out);
    }
  }

  /// The seed of vjp: checked against E's shape (`what` names the caller), as a span.
  template <class Seed>
  std::span<const T> seed_of(const Seed& seed, const char* what) const {
    constexpr bool ok = std::ranges::contiguous_range<const Seed&> &&
                        std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<const Seed&>>, T>;
    if constexpr (!is_array_v<E>) {
      static_assert(is_array_v<E>, "tad::program::vjp(seed, x...): the expression must be array-valued; use grad");
      return {};
    } else if constexpr (!ok) {
      static_assert(ok, "tad::program::vjp(seed, x...): the seed must be contiguous storage of the expression's "
                        "element type");
      return {};
    } else {
      const auto [rows, cols] = top_shape();
      detail::check_seed(seed, {rows, cols}, rank_v<E> == 2, what);
      return {std::ranges::data(seed), std::ranges::size(seed)};
    }
  }

  /// grad_into (Seed: detail::no_seed) and vjp_into (a std::span<const T> of E's shape).
  template <class Seed, class... X, class... T2>
  T grad_with(std::span<T> ws, const Seed& seed, const wrt_target<X, T2>&... t) const;
  template <class Seed, class... X>
  T grad_checked(const E& e, std::span<T> ws, const Seed& seed, const wrt_target<X, T>&... t) const;
};

template <class E>
program(const E&) -> program<E>;


}  // namespace tad
