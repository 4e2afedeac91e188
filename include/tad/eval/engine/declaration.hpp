#pragma once
/// The tape-free engine's class: its state, the members defined in the class, and the
/// declarations of those defined by concern in the other headers of eval/engine/ (each includes
/// this one; tad/eval/engine.hpp includes them all).

#include <tad/config.hpp>
#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/elementwise.hpp>
#include <tad/eval/engine/state.hpp>
#include <tad/eval/extents.hpp>
#include <tad/eval/deferred_lets.hpp>
#include <tad/eval/let.hpp>
#include <tad/eval/plan.hpp>
#include <tad/eval/shared_rules.hpp>
#include <tad/ops/cross_entropy.hpp>
#include <tad/ops/reductions.hpp>
#include <tad/simd/batch.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace tad::detail {

/// What an axis point's sweep and its element step do beyond the op's own accumulate and
/// backward (engine::sweep, engine::point_step; eval/engine/points.hpp). Named, not positional:
/// `point_step<K, S, V, point_mode{.lanes = true}>`.
struct point_mode {
  bool shift = false;      ///< the first of a shifted op's two forward sweeps: accumulate its shift_op
  bool stash = false;      ///< the second sweep keeps its terms in the argument's gradient (plan::stash_var)
  bool lanes = false;      ///< a point down the columns (down_loop): value, aux and adjoint per lane, from *ln
  bool keep_rows = false;  ///< the row vectors' adjoints stay in the sink, for block_backward to sum
};

template <class E, class T, class W>
class engine {
 public:
  using P = plan<E, W>;
  static constexpr std::size_t NR = P::reductions;
  static constexpr std::size_t NI = P::invariants;
  static constexpr std::size_t NV = W::size;
  static constexpr std::size_t NC = P::nests;
  static constexpr bool has_row_nests = [] {
    for (std::size_t n = 0; n < NC; ++n) if (extents<E>::t.nest_rows[n]) return true;
    return false;
  }();
  static constexpr std::size_t U = leaf_count<E>() > TAD_UNROLL_MAX_LEAVES ? 1 : TAD_UNROLL;
  /// Does the engine evaluate a frozen copy of e (see freeze)? With reductions, columns, or a
  /// leaf reading the caller's lvalue (`value(X * constant_ref(k))`: the store loop reads the
  /// frozen value).
  ///
  /// Without loops (no reduction: a scalar expression) nothing is copied: the scalar code reads
  /// every leaf before the gradients are stored, so no store can change what it reads.
  static constexpr bool copies = NR > 0 || P::has_columns || (NC > 0 && holds_ref<E>());
  static_assert([] {
    for (std::size_t k = 0; k < NV; ++k)
      for (std::size_t n = 0; n < NC; ++n)
        if (P::row_in(k, n) && P::column_in(k, n)) return false;
    return true;
  }(), "tad: a vector variable is used both as a row (b) and as a column (tad::as_column(b)) of one matrix "
       "computation; not supported yet: use two variables");
  using B = simd::batch<T>;
  using ctx_t = context<T, NR, NI, W>;

  /// outs[k]: where the k-th variable's gradient goes (one T for a scalar variable).
  /// sizes[k]: the length of the k-th variable (its gradient's length).
  /// ext: the length of each extent class (bind_extents).
  constexpr engine(const E& e, T* const* outs, const std::size_t* sizes, const extent_array<E>& ext)
      : e_(e), outs_(outs), sizes_(sizes) {
    if constexpr (has_lets_v<E>) check_lets<E, W>();
    if constexpr (W::size > 0) check_shared_rules<E>();
    if constexpr (copies) freeze(e_);
    validate<T>(e_);
    if constexpr (NC > 0) ctx_.n = ext[0];
    if constexpr (NC > 1) ext_ = ext.len;
    if constexpr (has_row_nests) rows_ = ext.rows, cols_ = ext.cols;
    // Each scalar variable is read once, from its first occurrence in e.
    visit_leaves<0>(e_, [&]<std::size_t I>(const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (L::is_variable && !L::is_array && !is_column_v<L>) {
        constexpr std::size_t k = W::template index<L::name>;
        if constexpr (k < NV && I == first_leaf<E, L::name>(0)) ctx_.wval[k] = leaf.value();
      }
    });
  }

  /// Does E hold a pick (`pick(z, labels)`, also in `softmax_cross_entropy(z, labels)`)?
  static constexpr bool has_picks = [] {
    bool any = false;
    static_for<NR>([&](auto S) { any = any || is_pick_v<typename slot_node_t<E, S.value>::op_type>; });
    return any;
  }();
  /// Value and gradients: every pass of the plan. A scalar expression (no loops) runs inline, so
  /// the caller's code holds the whole computation in registers: its fixed cost per call is what
  /// the W5 benchmark measures (doc/benchmarks.md, "Fixed costs").
  TAD_INLINE constexpr T run() {
    if constexpr (NR == 0) {
      const T value = top(true);
      if constexpr (has_scalar_deferred) scalar_deferred_rules();
      store_gradients();
      return value;
    } else {
      return run_passes();
    }
  }
  /// run() of an expression with loops.
  constexpr T run_passes() {
    {
      reject_empty();
      if constexpr (has_picks) check_labels();
      static_for<P::levels - 1>([&](auto l) { loops<pass_kind::forward, static_cast<int>(l.value) + 1>(); });
      if constexpr (P::fused) {
        top(false);
        loops<pass_kind::fused, P::levels>();
      } else if constexpr (P::scaled) {
        loops<pass_kind::scaled, P::levels>();
      } else {
        loops<pass_kind::forward, P::levels>();
      }
    }
    const T value = top(true);
    if constexpr (P::scaled) apply_scale();
    if constexpr (NR > 0) {
      static_for<P::max_depth + 1>([&](auto d) {
        if constexpr (P::wants_depth(static_cast<int>(d.value)) && !((P::fused || P::scaled) && d.value == 0))
          loops<pass_kind::backward, static_cast<int>(d.value)>();
      });
    }
    if constexpr (has_scalar_deferred) scalar_deferred_rules();
    store_gradients();
    return value;
  }
  /// The scalar variables' gradients, and zeros for the array variables no pass wrote.
  TAD_INLINE constexpr void store_gradients() {
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>()) {
        if constexpr (P::writes[k.value].how == P::first_write::none && !W::adds(k.value)) {
          for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
        }
      } else if constexpr (W::adds(k.value)) {
        *outs_[k.value] += scalar_grad_[k.value];
      } else {
        *outs_[k.value] = scalar_grad_[k.value];
      }
    });
  }

  /// Evaluates an array expression into out (length n).
  void store(T* out) {
    if constexpr (P::rejects_empty) reject_empty();
    if constexpr (has_picks) check_labels();
    static_for<P::levels>([&](auto l) { loops<pass_kind::forward, static_cast<int>(l.value) + 1>(); });
    out_ = out;
    loops<pass_kind::store, 0>();
  }

 private:
  /// The length of extent class C.
  template <std::size_t C>
  constexpr std::size_t len() const {
    if constexpr (NC <= 1) return ctx_.n;
    else return ext_[C];
  }

  /// The loops of pass K, level or depth A: one per nest that has work in it, of the nest's
  /// kind (extents::kind_of).
  template <pass_kind K, int A>
  constexpr void loops() {
    static_for<NC>([&](auto c) {
      if constexpr (P::template runs<K, A>(c.value)) {
        constexpr nest_kind kind = extents<E>::t.kind[c.value];
        if constexpr (kind == nest_kind::down) down_loop<K, A, c.value>();
        else if constexpr (kind == nest_kind::points) point_loop<K, A, c.value>();
        else if constexpr (kind == nest_kind::rows) row_loop<K, A, c.value>();
        else loop<K, A, c.value>();
      }
    });
  }

  template <pass_kind K, int A, std::size_t N>
  static constexpr bool forward_here(const reduction_info& r) {
    return forward_in<K, A>(r) && r.nest == N;
  }
  template <pass_kind K, int A, std::size_t N>
  static constexpr bool backward_here(const reduction_info& r) {
    return backward_in<K, A>(r) && r.nest == N;
  }
  /// Does the loop over nest N of the backward pass at depth d write the k-th variable's gradient?
  static constexpr bool touches_here(int d, std::size_t k, std::size_t n) { return P::touches_own(d, k, n); }
  template <std::size_t K>
  static constexpr bool is_array_k() { return std::tuple_element_t<K, typename W::types>::is_array; }
  /// Is the K-th variable a vector (a row vector where it meets a matrix)?
  template <std::size_t K>
  static constexpr bool row_var_k() { return is_array_k<K>() && leaf_rank<std::tuple_element_t<K, typename W::types>>() == 1; }

  template <class V>
  struct acc {
    std::array<reduction_state<V>, NR> fs;
    sink<V, W, NR, NI, invariant_adjoints::summed> sk;
  };

  template <class V>
  constexpr acc<V> make_acc() {
    acc<V> a{};
    auto init = [&]<std::size_t S>(const auto& r) { a.fs[S] = decltype(r.op)::template init<V>(); };
    visit_reductions<0>(e_, init);
    for (auto& v : a.sk.var) v = simd::splat<V>(0);
    for (auto& v : a.sk.red) v = simd::splat<V>(0);
    for (auto& v : a.sk.inv) v = simd::splat<V>(0);
    return a;
  }

  // Checks before the loops; the scalar code above the loops (eval/engine/scalar.hpp)
  constexpr void reject_empty() const;
  void check_labels();
  template <std::size_t S, class N>
  constexpr void backward_scalar(const N& e, T dy);
  template <std::size_t S, class N>
  constexpr void backward_scalar_lets(const N& e, T dy);
  constexpr T top_lets(bool final);
  TAD_INLINE constexpr T top(bool final);
  constexpr void scalar_deferred_rules();

  /// Per-loop copies of the engine's state: locals whose address never escapes the loop
  /// function, so no gradient store can alias them and the compiler keeps them in registers.
  struct local {
    E e;
    ctx_t ctx;
    std::array<T*, NV + 1> outs;
    T* out;
  };

  // One element of a loop (eval/engine/step.hpp)
  template <pass_kind K, int A, std::size_t N, class V>
  TAD_INLINE static void step(const local& l, acc<V>& a, std::size_t i);
  template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R>
  TAD_INLINE static void step_lets(const R& r, const local& l, acc<V>& a, std::size_t i);
  template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R, class X>
  TAD_INLINE static void step_lets_x(const R& r, const local& l, acc<V>& a, std::size_t i, X& x);
  template <std::size_t S, class V, class R, class X>
  TAD_INLINE static void recompute_deferred(const R& r, const local& l, std::size_t i, X& x);
  template <int D, std::size_t N, class V, class X>
  TAD_INLINE static void deferred_rules(const local& l, acc<V>& a, std::size_t i, X& x);

  /// Lets deferred across loops (eval/deferred_lets.hpp; doc/design.md "Lets across loops").
  using deferral = let_deferral<E, W>;
  using all_lets = typename deferral::all_lets;
  static constexpr bool has_deferred = deferral::has_deferred;
  static constexpr bool has_scalar_deferred = deferral::has_scalar_deferred;
  template <int D, std::size_t N>
  static constexpr bool finalizes = deferral::template finalizes<D, N>;
  template <int D, std::size_t N, std::size_t S>
  static constexpr bool recomputes = deferral::template recomputes<D, N, S>;
  template <std::size_t S>
  static constexpr bool holds_deferred = deferral::template holds_deferred<S>;
  /// ... is it recomputed by the loop of pass K, level or depth A, over nest N?
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  static constexpr bool recomputed_in() {
    if constexpr (!has_deferred || !(K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled)) return false;
    else return recomputes<K == pass_kind::backward ? A : 0, N, S>;
  }

  // Loop invariants, the flat loop, the end of a loop, the end of a scaled pass (eval/engine/flat.hpp)
  template <pass_kind K, int A, std::size_t N>
  void compute_invariants();
  template <pass_kind K, int A, std::size_t N>
  void loop();
  template <pass_kind K, int A, std::size_t N>
  void finish(std::array<acc<B>, U>& ab, acc<T>& at);
  void apply_scale();

  // Row nests (eval/engine/rows.hpp)
  template <std::size_t Nest, std::size_t I, class N>
  TAD_INLINE static void rebase_rows(N& dst, const N& src, std::size_t offset, std::size_t r);
  template <std::size_t Nest, std::size_t I, class N>
  static void set_columns(N& e, std::size_t r);
  template <pass_kind K, int A, std::size_t N>
  void finish_row(std::array<acc<B>, U>& ab, acc<T>& at, std::size_t row);
  template <int D, std::size_t N>
  void zero_fill();
  template <pass_kind K, int A, std::size_t N>
  void row_loop();
  template <pass_kind K, int A, std::size_t N>
  void column_point_invariants();
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  TAD_INLINE std::size_t point_row(local& l, std::size_t r);
  template <pass_kind K, int A, std::size_t N, pass_kind D>
  TAD_INLINE void column_point_sweeps(local& l, std::array<acc<B>, U>& ab, acc<T>& pt, std::size_t r,
                                      acc<T>* at = nullptr);
  template <pass_kind K, int A, std::size_t N>
  void push_point_invariants(std::array<acc<B>, U>& ab, const acc<T>& pt);

  /// The region that holds axis point S: the slot of the reduction whose argument it is in, or
  /// P::reductions for E itself.
  template <std::size_t S>
  static constexpr std::size_t point_parent = extents<E>::t.region_of[extents<E>::leaves + S];
  /// The op of reduction slot S.
  template <std::size_t S>
  using slot_op_t = typename slot_node_t<E, S>::op_type;
  /// Does the loop of pass K, level or depth A, over nest N need the value of slot S, an axis
  /// point of N: does it run the code that holds S?
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  static constexpr bool point_forward() {
    if constexpr (!P::info[S].point || P::info[S].outer_nest != N) return false;
    else if constexpr (point_parent<S> == NR) return K == pass_kind::store;
    else return forward_here<K, A, N>(P::info[point_parent<S>]) || backward_here<K, A, N>(P::info[point_parent<S>]);
  }
  /// ... and push an adjoint into S's argument?
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  static constexpr bool point_backward() {
    if constexpr (!point_forward<K, A, N, S>() || point_parent<S> == NR) return false;
    else return P::info[S].wants && backward_here<K, A, N>(P::info[point_parent<S>]);
  }

  /// Do the sweeps of axis point S in that loop keep their terms in the argument's gradient
  /// (plan::stash_var)? Only where they run backward too: the forward sweep of a row stores, its
  /// backward sweep, in the same loop, scales.
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  static constexpr bool stash_here = P::stash_var[S] < NV && point_backward<K, A, N, S>();

  /// Is slot S an axis point met by a matrix as a column (as_column(sum(X, axis<1>)))?
  template <std::size_t S>
  static constexpr bool column_point_slot = props<slot_node_t<E, S>>::is_column_point;
  /// Does the loop of pass K, level or depth A, over row nest N run the sweeps of a column point?
  template <pass_kind K, int A, std::size_t N>
  static constexpr bool has_column_points = [] {
    bool any = false;
    static_for<NR>([&](auto S) { any = any || (column_point_slot<S.value> && point_forward<K, A, N, S.value>()); });
    return any;
  }();

  /// The numbers of a point along axis 0 at one batch of columns (down_loop): each column's
  /// value, auxiliary number and adjoint, and the number of rows the point reduces.
  struct lane_numbers {
    const T *value, *aux, *adj;
    std::size_t n;
  };

  // Points along the rows (eval/engine/points.hpp)
  template <pass_kind K, std::size_t S, class V, point_mode M = point_mode{}>
  TAD_INLINE static void point_step(const local& l, acc<V>& a, std::size_t j, const lane_numbers* ln = nullptr);
  template <std::size_t S>
  static constexpr bool block_columns_ok();
  using block_numbers = std::array<std::array<T, simd::width<T>>, NR>;  // per point, a number per row of a block
  template <pass_kind K, int A, std::size_t N, class ToRow>
  TAD_INLINE void block_backward(local& l, std::array<acc<B>, U>& ab, acc<T>& pt, std::size_t r, const ToRow& to_row,
                                 const block_numbers& pv, const block_numbers& pa, const block_numbers& px);
  template <pass_kind K, std::size_t S, point_mode M = point_mode{}>
  TAD_INLINE void sweep(local& l, std::array<acc<B>, U>& ab, acc<T>& at, std::size_t cols);
  template <pass_kind K, std::size_t S>
  TAD_INLINE void pick_sweep(local& l, acc<T>& at, std::size_t r);
  template <class Op, std::size_t S>
  TAD_INLINE static reduction_state<T> merged_state(std::array<acc<B>, U>& ab, const acc<T>& at);
  template <pass_kind K, int A, std::size_t N>
  void point_loop();

  /// Is slot S a pick (`pick(z, labels)`, one element per row)?
  template <std::size_t S>
  static constexpr bool picks = is_pick_v<slot_op_t<S>>;
  /// Per point along axis 0, the numbers of a block of L columns (down_loop): each column's
  /// value, auxiliary number and adjoint.
  template <std::size_t L>
  struct lane_block {
    alignas(64) std::array<std::array<T, L>, NR> value;
    alignas(64) std::array<std::array<T, L>, NR> aux;
    alignas(64) std::array<std::array<T, L>, NR> adj;
  };

  // Points down the columns (eval/engine/down.hpp)
  template <class Op, class V>
  TAD_INLINE static void finish_lanes(const reduction_state<V>& s, std::size_t n, T* value, T* aux);
  template <pass_kind D, std::size_t S, class V, std::size_t NB, std::size_t L>
  TAD_INLINE void down_sweep(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb);
  template <pass_kind K, int A, std::size_t N, class V, std::size_t NB, std::size_t L>
  TAD_INLINE void down_block(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb);
  template <class V>
  static void fold_acc(acc<V>& a, const acc<V>& o);
  template <pass_kind K, int A, std::size_t N>
  void down_loop();

  // With loops, a frozen copy (see freeze); with columns, a copy whose columns hold the current
  // row's elements; otherwise the caller's expression itself.
  std::conditional_t<copies, E, const E&> e_;
  T* const* outs_;
  const std::size_t* sizes_;
  T* out_ = nullptr;
  ctx_t ctx_{};
  std::array<T, NV> scalar_grad_{};
  // What a scaled pass produced with a unit adjoint, until the true adjoint is known.
  std::array<T, NV> stash_var_{};
  std::array<T, NR> stash_red_{};
  std::array<T, NI> stash_inv_{};
  // The lengths of the extent classes, when there are several (one: ctx_.n). Last, and empty for
  // one class, so the members above keep their offsets: g++'s code for the loops follows them.
  [[no_unique_address]] std::array<std::size_t, (NC > 1 ? NC : 0)> ext_{};
  // Rows and columns of each nest, when one is a row nest (a vector broadcast across rows).
  [[no_unique_address]] std::array<std::size_t, (has_row_nests ? NC : 0)> rows_{}, cols_{};
  // The adjoints of the lets deferred to the end of the run (scalar_deferred_rules).
  [[no_unique_address]] std::conditional_t<has_scalar_deferred, deferred_acc<T, all_lets>, std::array<T, 0>> sdl_{};
};

}  // namespace tad::detail
