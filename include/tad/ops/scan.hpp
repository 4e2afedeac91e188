#pragma once
/// `scan(step, h0, xs)`: a loop over time whose trip count is known only at run time (a
/// recurrent net over a sequence, an integrator's steps). The body is an ordinary tad
/// expression, built once, when the node is built, by calling `step` on two placeholder leaves:
/// the carry (h0's shape) and the step's input (one row of xs, or one block of h0's rows).
/// The node's children are h0, xs and that body, so every trait (the variables it reaches,
/// print, strip_gradient_modifiers) sees the parameters the body captured. Like a matrix
/// product, a scan is a stage: the program materializes it (eval/program/scan.hpp), running
/// the body's forward T times and its vector-Jacobian product T times in reverse.
/// doc/loops.md.

#include <tad/core/expression.hpp>
#include <tad/core/leaf_types.hpp>
#include <tad/core/node.hpp>
#include <tad/core/value_type.hpp>
#include <tad/ops/linalg.hpp>

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace tad {

/// What a scan's value is: the last carry (`scan(step, h0, xs)`), or every carry after a step,
/// stacked (`scan(step, h0, xs, tad::every_step)`): a vector carry of n gives a `T x n` matrix,
/// a matrix carry `B x n` a `(T B) x n` matrix (step t's rows `t B ..`).
enum class scan_result { last, every };
struct every_step_t {
  explicit every_step_t() = default;
};
inline constexpr every_step_t every_step{};

/// How a scan's backward runs (doc/loops.md).
struct scan_options {
  /// k > 0: truncated backpropagation through time. No gradient flows back through the carry
  /// into h_k, h_2k, ... (each block of k steps is backpropagated on its own, as if those
  /// carries were stop_gradient'ed where the next step reads them); h0 gets the first block's.
  /// A per-step output's gradient (every_step) still reaches its own step.
  std::size_t truncate = 0;
  /// k > 0: checkpointing. The forward keeps h0, h_k, h_2k, ... and the backward recomputes
  /// each block of k carries from its first before it runs that block's steps backward: about
  /// T / k + k carries instead of T + 1, for one more forward per step; the gradients are the
  /// same numbers, bit for bit. `scan_options::sqrt_steps`: k = ceil(sqrt(T)). Only for the last
  /// carry (with every_step, every carry is the value).
  std::size_t checkpoint = 0;
  static constexpr std::size_t sqrt_steps = static_cast<std::size_t>(-1);
};

/// The op of a scan node `node<scan_op<R>, H0, XS, Body>`: children h0, xs and the body.
template <scan_result R>
struct scan_op {
  static constexpr std::string_view name = R == scan_result::last ? "scan" : "scan_every";
  static constexpr bool is_scan = true;
  static constexpr scan_result result = R;
  scan_options options{};
  /// The rank of its value: the carry's, or a matrix of the stacked carries.
  static constexpr int result_rank(int carry, int, int) noexcept { return R == scan_result::last ? carry : 2; }
};

/// A scan's carry of two to four arrays (`tad::carries(h, c)`): h0, and what the step returns.
/// Not an expression: only tad::scan reads it (into a node of carries_op).
template <class... C>
struct carry_tuple {
  std::tuple<C...> items;
};

/// `tad::carries(h, c, ...)`: a scan's carry of two to four arrays (vectors or matrices), such
/// as an LSTM's hidden and cell states: h0 is `carries(h0, c0)`, and the step, called as
/// `step(h, c, x)`, returns `carries(h', c')`. The scan's value is the first array's (doc/loops.md).
template <class... C>
constexpr auto carries(const C&... c) {
  static_assert(sizeof...(C) >= 2 && sizeof...(C) <= 4, "tad::carries(c...): a tuple of carries holds two to four arrays");
  static_assert((expression<C> && ...), "tad::carries(c...): every carry must be a tad expression (a vector or a matrix)");
  return carry_tuple<C...>{{c...}};
}

/// The node of a tuple of carries in a scan (h0's arrays, and the body's new ones): its rank is
/// its first array's; to props it is a leaf, as a loop is (core/expression.hpp op_is_loop).
struct carries_op {
  static constexpr std::string_view name = "carries";
  static constexpr bool is_carries = true;
  template <class... R>
  static constexpr int result_rank(int first, R...) noexcept {
    return first;
  }
};

namespace detail {

template <class E>
inline constexpr bool is_carries_node_v = false;
template <class... C>
inline constexpr bool is_carries_node_v<node<carries_op, C...>> = true;
template <class E>
inline constexpr bool is_carry_tuple_v = false;
template <class... C>
inline constexpr bool is_carry_tuple_v<carry_tuple<C...>> = true;

/// The placeholders a body is built on: the carry (of a tuple: `@carry`, `@carry2`, ...) and the
/// step's input; a map's slices: `@in`, `@in2`, `@in3`, rank 0 (each_element) a scalar read
/// through a pointer. Their data and shape are set at each step (eval/program/scan.hpp
/// rebind_scan); in the node they view nothing.
template <fixed_string Name, int Rank, class T>
using slice_placeholder_t =
    std::conditional_t<Rank == 2, matrix_var<Name, T>, std::conditional_t<Rank == 1, array_var<Name, T>, scalar_var<Name, T, true>>>;
template <std::size_t J>
constexpr auto carry_name() {
  if constexpr (J == 0) return fixed_string("@carry");
  else if constexpr (J == 1) return fixed_string("@carry2");
  else if constexpr (J == 2) return fixed_string("@carry3");
  else return fixed_string("@carry4");
}
template <std::size_t J, int Rank, class T>
using scan_carry_at_t = slice_placeholder_t<carry_name<J>(), Rank, T>;
template <int Rank, class T>
using scan_carry_t = scan_carry_at_t<0, Rank, T>;
template <int Rank, class T>
using scan_input_t = slice_placeholder_t<"@in", Rank, T>;

/// Is E a loop's placeholder (a leaf with one of their names, which users cannot give)? A
/// column of one (as_column, which shares its vector's name) is not: bodies may not hold one.
template <class E>
constexpr bool scan_placeholder_leaf() {
  if constexpr (is_leaf_v<E> && !is_column_v<E> && requires { E::name; }) return placeholder_slot(E::name.view()) >= 0;
  else return false;
}
template <class E>
inline constexpr bool is_scan_placeholder_v = scan_placeholder_leaf<E>();

/// Does E hold a loop's placeholder?
template <class E>
struct holds_placeholder : std::bool_constant<is_scan_placeholder_v<E>> {};
template <class Op, class... C>
struct holds_placeholder<node<Op, C...>> : std::bool_constant<(holds_placeholder<C>::value || ...)> {};

/// Does E hold a column of a loop's placeholder (as_column of a body's carry, input or slice)?
template <class E>
constexpr bool placeholder_column() {
  if constexpr (is_leaf_v<E> && is_column_v<E> && requires { E::name; }) return placeholder_slot(E::name.view()) >= 0;
  else return false;
}
template <class E>
struct holds_placeholder_column : std::bool_constant<placeholder_column<E>()> {};
template <class Op, class... C>
struct holds_placeholder_column<node<Op, C...>> : std::bool_constant<(holds_placeholder_column<C>::value || ...)> {};

/// Does E hold a scan?
template <class E>
struct has_scan : std::false_type {};
template <class Op, class... C>
struct has_scan<node<Op, C...>>
    : std::bool_constant<is_scan_node_v<node<Op, C...>> || is_map_node_v<node<Op, C...>> || (has_scan<C>::value || ...)> {};

/// Why `scan(step, h0, xs)` is rejected (0: it is not).
template <class H0, class XS>
constexpr int scan_problem() {
  if constexpr (!expression<H0> || !expression<XS>) return 1;
  else if constexpr (props<H0>::rank == 0 || props<H0>::is_mask) return 2;
  else if constexpr (props<XS>::rank != 2 || props<XS>::is_mask) return 3;
  else if constexpr (!std::is_same_v<value_type_t<H0>, value_type_t<XS>>) return 4;
  else if constexpr (has_custom_input_v<H0> || has_custom_input_v<XS>) return 5;
  else return 0;
}
/// Why the body `step(carry, input)` is rejected (0: it is not).
template <class Step, class Carry, class In>
constexpr int scan_body_problem() {
  if constexpr (!std::is_invocable_v<const Step&, const Carry&, const In&>) {
    return 1;
  } else {
    using B = std::remove_cvref_t<std::invoke_result_t<const Step&, const Carry&, const In&>>;
    if constexpr (is_carry_tuple_v<B>) return 6;
    else if constexpr (!expression<B>) return 2;
    else if constexpr (poisoned_v<B>) return 0;  // reported where the body was built
    else if constexpr (props<B>::rank != props<Carry>::rank || props<B>::is_mask) return 3;
    else if constexpr (!std::is_same_v<value_type_t<B>, typename Carry::value_type>) return 4;
    else if constexpr (has_scan<B>::value) return 5;
    else if constexpr (holds_placeholder_column<B>::value) return 7;
    else return 0;
  }
}

template <scan_result R, class Step, class H0, class XS>
constexpr auto make_scan(const Step& step, const H0& h0, const XS& xs, const scan_options& options) {
  if constexpr (poisoned_v<H0, XS>) {
    return invalid_expression{};
  } else {
    constexpr int problem = scan_problem<H0, XS>();
    static_assert(problem != 1, "tad::scan(step, h0, xs): h0 and xs must be tad expressions");
    static_assert(problem != 2, "tad::scan(step, h0, xs): the carry h0 must be a vector or a matrix (a batch of "
                                "carries, one per row), not a scalar or a comparison");
    static_assert(problem != 3, "tad::scan(step, h0, xs): xs must be a matrix: row t is step t's input (with a "
                                "matrix carry of B rows, rows t B .. t B + B - 1)");
    static_assert(problem != 4, "tad::scan(step, h0, xs): h0 and xs must have the same element type");
    static_assert(problem != 5, "tad::scan(step, h0, xs): a scan cannot be part of a custom_gradient's forward");
    if constexpr (problem != 0) {
      return invalid_expression{};
    } else {
      using T = value_type_t<H0>;
      constexpr int rank = props<H0>::rank;
      using Carry = scan_carry_t<rank, T>;
      using In = scan_input_t<rank, T>;
      constexpr int body = scan_body_problem<Step, Carry, In>();
      static_assert(body != 1, "tad::scan(step, h0, xs): step must be callable as step(carry, input) on two tad "
                               "expressions (a generic lambda: [&](auto h, auto x) { ... })");
      static_assert(body != 2, "tad::scan(step, h0, xs): step(carry, input) must return a tad expression");
      static_assert(body != 3, "tad::scan(step, h0, xs): step(carry, input) must return the new carry: an "
                               "expression of the carry's rank (h0's), not a scalar, a reduction or a comparison");
      static_assert(body != 4, "tad::scan(step, h0, xs): step(carry, input) must have the carry's element type");
      static_assert(body != 5, "tad::scan(step, h0, xs): a scan inside a scan's body is not supported yet");
      static_assert(body != 6, "tad::scan(step, h0, xs): step returns tad::carries(...), a tuple of carries: pass "
                               "the first carries as one too, tad::scan(step, tad::carries(h0, c0), xs)");
      static_assert(body != 7, "tad::scan(step, h0, xs): as_column of the carry or of the input inside the body is "
                               "not supported yet (as_column of a vector the body captures is)");
      if constexpr (body != 0) {
        return invalid_expression{};
      } else {
        using B = std::remove_cvref_t<std::invoke_result_t<const Step&, const Carry&, const In&>>;
        if constexpr (poisoned_v<B>) {
          return invalid_expression{};
        } else {
          if (R == scan_result::every && options.checkpoint != 0)
            throw std::invalid_argument("tad::scan(step, h0, xs, every_step, options): checkpointing keeps only "
                                        "some carries, and with every_step every carry is the scan's value");
          return node<scan_op<R>, H0, XS, B>{h0, xs, step(Carry{}, In{}), scan_op<R>{options}};
        }
      }
    }
  }
}

/// Why the carries `h0` of a tuple (tad::carries) and xs are rejected (0: they are not; as
/// scan_problem, for each array).
template <class XS, class... H>
constexpr int tuple_scan_problem() {
  if constexpr (!expression<XS>) return 1;
  else if constexpr (((props<H>::rank == 0 || props<H>::is_mask) || ...)) return 2;
  else if constexpr (props<XS>::rank != 2 || props<XS>::is_mask) return 3;
  else if constexpr (!(std::is_same_v<value_type_t<H>, value_type_t<XS>> && ...)) return 4;
  else if constexpr ((has_custom_input_v<H> || ...) || has_custom_input_v<XS>) return 5;
  else return 0;
}
/// Why the body `step(carries..., input)` of a tuple is rejected (0: it is not).
template <class Step, class In, class... P>
constexpr int tuple_body_problem() {
  if constexpr (!std::is_invocable_v<const Step&, const P&..., const In&>) {
    return 1;
  } else {
    using B = std::remove_cvref_t<std::invoke_result_t<const Step&, const P&..., const In&>>;
    if constexpr (!is_carry_tuple_v<B>) {
      return 2;
    } else {
      return []<class... C>(std::type_identity<carry_tuple<C...>>) {
        if constexpr (sizeof...(C) != sizeof...(P)) return 3;
        else if constexpr (poisoned_v<C...>) return 0;  // reported where the body was built
        else if constexpr (((props<C>::rank != props<P>::rank || props<C>::is_mask) || ...)) return 4;
        else if constexpr (!(std::is_same_v<value_type_t<C>, typename P::value_type> && ...)) return 5;
        else if constexpr ((has_scan<C>::value || ...)) return 6;
        else if constexpr ((holds_placeholder_column<C>::value || ...)) return 7;
        else return 0;
      }(std::type_identity<B>{});
    }
  }
}

/// A scan of a tuple of carries: `node<scan_op<R>, node<carries_op, H...>, XS, node<carries_op, B...>>`.
template <scan_result R, class Step, class... H, class XS>
constexpr auto make_scan(const Step& step, const carry_tuple<H...>& h0, const XS& xs, const scan_options& options) {
  if constexpr (poisoned_v<H..., XS>) {
    return invalid_expression{};
  } else {
    constexpr int problem = tuple_scan_problem<XS, H...>();
    static_assert(problem != 1, "tad::scan(step, carries(h0...), xs): xs must be a tad expression");
    static_assert(problem != 2, "tad::scan(step, carries(h0...), xs): every carry must be a vector or a matrix, "
                                "not a scalar or a comparison");
    static_assert(problem != 3, "tad::scan(step, carries(h0...), xs): xs must be a matrix: row t is step t's input "
                                "(with a matrix first carry of B rows, rows t B .. t B + B - 1)");
    static_assert(problem != 4, "tad::scan(step, carries(h0...), xs): the carries and xs must have the same element type");
    static_assert(problem != 5, "tad::scan(step, carries(h0...), xs): a scan cannot be part of a custom_gradient's "
                                "forward");
    if constexpr (problem != 0) {
      return invalid_expression{};
    } else {
      using T = value_type_t<XS>;
      using In = scan_input_t<props<std::tuple_element_t<0, std::tuple<H...>>>::rank, T>;
      return [&]<std::size_t... J>(std::index_sequence<J...>) {
        constexpr int body = tuple_body_problem<Step, In, scan_carry_at_t<J, props<H>::rank, T>...>();
        static_assert(body != 1, "tad::scan(step, carries(h0...), xs): step must be callable as step(h, c, ..., x): "
                                 "one placeholder per carry, then the input (a generic lambda)");
        static_assert(body != 2, "tad::scan(step, carries(h0...), xs): step must return the new carries as "
                                 "tad::carries(h, c, ...)");
        static_assert(body != 3, "tad::scan(step, carries(h0...), xs): step must return as many carries as h0 holds");
        static_assert(body != 4, "tad::scan(step, carries(h0...), xs): each new carry must have its carry's rank "
                                 "(h0's), and not be a comparison");
        static_assert(body != 5, "tad::scan(step, carries(h0...), xs): each new carry must have the carries' element type");
        static_assert(body != 6, "tad::scan(step, carries(h0...), xs): a scan inside a scan's body is not supported "
                                 "yet");
        static_assert(body != 7, "tad::scan(step, carries(h0...), xs): as_column of a carry or of the input inside "
                                 "the body is not supported yet (as_column of a vector the body captures is)");
        if constexpr (body != 0) {
          return invalid_expression{};
        } else {
          const auto b = step(scan_carry_at_t<J, props<H>::rank, T>{}..., In{});
          using Items = std::remove_cvref_t<decltype(b.items)>;
          if constexpr (poisoned_v<std::tuple_element_t<J, Items>...>) {
            return invalid_expression{};
          } else {
            if (R == scan_result::every && options.checkpoint != 0)
              throw std::invalid_argument("tad::scan(step, h0, xs, every_step, options): checkpointing keeps only "
                                          "some carries, and with every_step every carry is the scan's value");
            using Hs = node<carries_op, H...>;
            using Bs = node<carries_op, std::tuple_element_t<J, Items>...>;
            return node<scan_op<R>, Hs, XS, Bs>{Hs{std::get<J>(h0.items)..., carries_op{}}, xs,
                                                Bs{std::get<J>(b.items)..., carries_op{}}, scan_op<R>{options}};
          }
        }
      }(std::index_sequence_for<H...>{});
    }
  }
}

}  // namespace detail

/// The last carry of the recurrence `h_{t+1} = step(h_t, x_t)`, t = 0 .. T-1, from h0: a
/// vector or matrix expression (a matrix: a batch of B carries, one per row). xs is a matrix
/// expression: with a vector carry, row t is x_t (T = its rows); with a matrix carry of B rows,
/// rows `t B .. t B + B - 1` are x_t (T = its rows / B; a tad::shape_error unless B divides
/// them). `step(h, x)` is called once, here, on placeholders of those shapes, and returns the
/// new carry, of h's shape: any tad expression of h, x and the parameters it captures
/// (matmul, modifiers, custom rules). Evaluated by a tad::program (`<tad/linalg.hpp>`): the
/// body's forward T times, then its vector-Jacobian product T times in reverse, accumulating
/// the parameters' gradients. doc/loops.md.
template <class Step, class H0, class XS>
constexpr auto scan(const Step& step, const H0& h0, const XS& xs) {
  return detail::make_scan<scan_result::last>(step, h0, xs, scan_options{});
}
/// With a tuple of carries, `scan(step, tad::carries(h0, c0), xs)`: the step is called as
/// `step(h, c, x)` and returns `tad::carries(h', c')`; each carry is a vector or a matrix of
/// its own shape (with a matrix first carry of B rows, step t reads xs's rows t B ..). The
/// value is the first carry's (the last, or every step's with every_step): an LSTM's h, say,
/// while c stays inside the loop. A per-step output other than the state is a first carry that
/// the step does not read. doc/loops.md.
///
/// With options: truncated backpropagation through time, checkpointing (scan_options).
template <class Step, class H0, class XS>
constexpr auto scan(const Step& step, const H0& h0, const XS& xs, const scan_options& options) {
  return detail::make_scan<scan_result::last>(step, h0, xs, options);
}
/// Every carry after a step, stacked: `T x n` for a vector carry of n, `(T B) x n` for a
/// matrix carry of `B x n` (a per-step output for a loss that reads every step).
template <class Step, class H0, class XS>
constexpr auto scan(const Step& step, const H0& h0, const XS& xs, every_step_t) {
  return detail::make_scan<scan_result::every>(step, h0, xs, scan_options{});
}
template <class Step, class H0, class XS>
constexpr auto scan(const Step& step, const H0& h0, const XS& xs, every_step_t, const scan_options& options) {
  return detail::make_scan<scan_result::every>(step, h0, xs, options);
}

// ---- map ---------------------------------------------------------------------------------

/// How a map slices an input (each_row, each_block, each_element).
enum class slicing { rows, blocks, elements };
template <class M, slicing S>
struct sliced {
  M m;
};
/// `each_row(M)`: a map's k-th slice of the matrix expression M is its row k (a vector); M has K rows.
template <class M>
constexpr sliced<M, slicing::rows> each_row(const M& m) {
  static_assert(expression<M> && detail::props<M>::rank == 2, "tad::each_row(m): m must be a matrix expression");
  return {m};
}
/// `each_element(v)`: a map's k-th slice of the vector expression v is its element k (a scalar);
/// v has K elements.
template <class V>
constexpr sliced<V, slicing::elements> each_element(const V& v) {
  static_assert(expression<V> && detail::props<V>::rank == 1, "tad::each_element(v): v must be a vector expression");
  return {v};
}
/// `each_block(M)`: a map's k-th slice of the matrix expression M is its k-th block of rows (a
/// matrix of M's rows / K rows, rows k r .. k r + r - 1).
template <class M>
constexpr sliced<M, slicing::blocks> each_block(const M& m) {
  static_assert(expression<M> && detail::props<M>::rank == 2, "tad::each_block(m): m must be a matrix expression");
  return {m};
}

/// The op of a map node `node<map_op<S...>, M..., Body>` (one to three sliced inputs M, then the
/// body): the body's values for k = 0 .. count - 1, stacked.
template <slicing... S>
struct map_op {
  static constexpr std::string_view name = "map";
  static constexpr bool is_map = true;
  static constexpr slicing slicings[] = {S...};
  std::size_t count = 0;  // K
  /// Stacked: a matrix (K rows of the body's vector, or K blocks of its matrix's rows).
  template <class... R>
  static constexpr int result_rank(R...) noexcept {
    return 2;
  }
};

namespace detail {
template <slicing S>
inline constexpr int slice_rank = S == slicing::rows ? 1 : S == slicing::blocks ? 2 : 0;
/// The placeholder of slice J (of kind S) of an input M.
template <std::size_t J, int R, class T>
struct slice_of;
template <int R, class T>
struct slice_of<0, R, T> {
  using type = slice_placeholder_t<"@in", R, T>;
};
template <int R, class T>
struct slice_of<1, R, T> {
  using type = slice_placeholder_t<"@in2", R, T>;
};
template <int R, class T>
struct slice_of<2, R, T> {
  using type = slice_placeholder_t<"@in3", R, T>;
};
template <std::size_t J, slicing S, class M>
using map_placeholder_t = typename slice_of<J, slice_rank<S>, value_type_t<M>>::type;

template <class F, class... P>
constexpr int map_body_problem() {
  if constexpr (!std::is_invocable_v<const F&, const P&...>) {
    return 1;
  } else {
    using B = std::remove_cvref_t<std::invoke_result_t<const F&, const P&...>>;
    if constexpr (!expression<B>) return 2;
    else if constexpr (poisoned_v<B>) return 0;
    else if constexpr (props<B>::rank == 0 || props<B>::is_mask) return 3;
    else if constexpr (has_scan<B>::value) return 4;
    else if constexpr (holds_placeholder_column<B>::value) return 5;
    else return 0;
  }
}

template <class F, class... M, slicing... S>
constexpr auto make_map(std::size_t count, const F& f, const sliced<M, S>&... in) {
  if constexpr (poisoned_v<M...>) {
    return invalid_expression{};
  } else {
    using T0 = value_type_t<std::tuple_element_t<0, std::tuple<M...>>>;
    constexpr bool same = (std::is_same_v<value_type_t<M>, T0> && ...);
    static_assert(same, "tad::map(K, f, slices...): the sliced inputs must have one element type");
    static_assert(!(has_custom_input_v<M> || ...), "tad::map: a map cannot be part of a custom_gradient's forward");
    if constexpr (!same || (has_custom_input_v<M> || ...)) {
      return invalid_expression{};
    } else {
      const auto build = [&](const auto&... p) {
        constexpr int problem = map_body_problem<F, std::remove_cvref_t<decltype(p)>...>();
        static_assert(problem != 1, "tad::map(K, f, slices...): f must be callable on the slices' placeholders (a "
                                    "generic lambda: [&](auto mu, auto q) { ... })");
        static_assert(problem != 2, "tad::map(K, f, slices...): f must return a tad expression");
        static_assert(problem != 3, "tad::map(K, f, slices...): f must return a vector or a matrix (its values for "
                                    "each k are stacked), not a scalar or a comparison; for one number per k, "
                                    "return a vector of one");
        static_assert(problem != 4, "tad::map(K, f, slices...): a scan or a map inside a map's body is not "
                                    "supported yet");
        static_assert(problem != 5, "tad::map(K, f, slices...): as_column of a slice inside f is not supported yet "
                                    "(as_column of a vector f captures is)");
        if constexpr (problem != 0) {
          return invalid_expression{};
        } else {
          using B = std::remove_cvref_t<std::invoke_result_t<const F&, const std::remove_cvref_t<decltype(p)>&...>>;
          if constexpr (poisoned_v<B>) return invalid_expression{};
          else return node<map_op<S...>, M..., B>{in.m..., f(p...), map_op<S...>{count}};
        }
      };
      return [&]<std::size_t... J>(std::index_sequence<J...>) {
        return build(map_placeholder_t<J, S, M>{}...);
      }(std::index_sequence_for<M...>{});
    }
  }
}
}  // namespace detail

/// `map(K, f, slices...)`: `f` of the k-th slices, for k = 0 .. K-1 (K at run time), stacked:
/// a `K x n` matrix when f returns a vector of n (row k is f's value for k), `(K r) x c` when f
/// returns an `r x c` matrix. The slices (one to three) are `each_row(M)` (row k of M, which
/// has K rows), `each_block(M)` (the k-th of K blocks of M's rows) and `each_element(v)` (v[k],
/// a scalar; v has K elements). f is called once, here, on
/// placeholders, and may use any expression of the slices and of the parameters and data it
/// captures (a Gaussian mixture's per-component terms: doc/loops.md). Evaluated by a
/// tad::program: f's forward K times, then its vector-Jacobian product K times.
template <class F, class M, slicing S>
constexpr auto map(std::size_t count, const F& f, const sliced<M, S>& in) {
  return detail::make_map(count, f, in);
}
template <class F, class M0, slicing S0, class M1, slicing S1>
constexpr auto map(std::size_t count, const F& f, const sliced<M0, S0>& in0, const sliced<M1, S1>& in1) {
  return detail::make_map(count, f, in0, in1);
}
template <class F, class M0, slicing S0, class M1, slicing S1, class M2, slicing S2>
constexpr auto map(std::size_t count, const F& f, const sliced<M0, S0>& in0, const sliced<M1, S1>& in1,
                   const sliced<M2, S2>& in2) {
  return detail::make_map(count, f, in0, in1, in2);
}

}  // namespace tad
