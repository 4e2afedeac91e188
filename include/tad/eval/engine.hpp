#pragma once
/// The tape-free engine: runs the passes of a plan over the data, in SIMD loops.

#include <tad/config.hpp>
#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/elementwise.hpp>
#include <tad/eval/extents.hpp>
#include <tad/eval/let.hpp>
#include <tad/eval/plan.hpp>
#include <tad/ops/reductions.hpp>
#include <tad/simd/batch.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace tad::detail {

template <class T, std::size_t NR, std::size_t NI, class W>
struct context {
  using value_type = T;
  using wrt = W;
  std::array<T, W::size> wval{};  // values of the scalar variables of W, read once
  std::array<T, NR> val{};  // reduction values
  std::array<T, NR> aux{};  // reduction auxiliaries (e.g. the count of maxima)
  std::array<T, NR> adj{};  // reduction adjoints
  std::array<T, NI> inv{};  // loop invariants of the current loop
  std::size_t n = 0;
};

/// Adjoint accumulators: one per variable (array variables: the current element's sum of
/// contributions; scalar variables: a running sum), one per reduction, and (in a loop, where
/// `Defers`) one per loop invariant.
template <class V, class W, std::size_t NR, std::size_t NI, bool Defers>
struct sink {
  static constexpr bool defers = Defers;
  std::array<V, W::size> var;
  std::array<V, NR> red;
  std::array<V, Defers ? NI : 0> inv;
  template <class E>
  static constexpr bool wants = W::template reached<E>;
  template <class Leaf, class D>
  TAD_INLINE constexpr void add_var(const D& dy) {
    auto& a = var[W::template index<Leaf::name>];
    a = accumulate_adjoint(a, dy);
  }
  template <std::size_t S, class D>
  TAD_INLINE constexpr void add_reduction(const D& dy) {
    red[S] = accumulate_adjoint(red[S], dy);
  }
  template <std::size_t R, class D>
  TAD_INLINE constexpr void add_invariant(const D& dy) {
    inv[R] = accumulate_adjoint(inv[R], dy);
  }
};

/// Makes scalar leaves hold their current values, so loops read registers, not memory that a
/// gradient store might alias.
template <class E>
constexpr void freeze(E& e) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { e.src; }) {
      e.val = e.value();
      e.src = nullptr;
    }
  } else {
    static_for<E::arity>([&](auto k) { freeze(child<k.value>(e)); });
  }
}

/// Does E hold a leaf that reads the caller's lvalue (`constant_ref`, a scalar variable bound to
/// an lvalue)? freeze copies its value for the loops.
template <class E>
constexpr bool holds_ref() {
  if constexpr (is_leaf_v<E>) {
    return requires(E e) { e.src; };
  } else {
    bool r = false;
    static_for<E::arity>([&](auto k) { r = r || holds_ref<child_t<k.value, E>>(); });
    return r;
  }
}

/// Position (left to right, from `base`) of the first leaf of E named Name, or SIZE_MAX.
template <class E, fixed_string Name>
constexpr std::size_t first_leaf(std::size_t base) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (requires { E::name; }) {
      if constexpr (same_name<E::name, Name>) return base;
    }
    return static_cast<std::size_t>(-1);
  } else {
    std::size_t found = static_cast<std::size_t>(-1), b = base;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      if (found == static_cast<std::size_t>(-1)) found = first_leaf<C, Name>(b);
      b += leaf_count<C>();
    });
    return found;
  }
}

/// Ops with parameters checked at evaluation time (clip_gradient's lo <= hi, read through
/// constant_ref) declare `validate<T>(node)`; the engine calls it on every such node before any
/// loop, so a bad parameter throws before anything is written.
template <class T, class E>
constexpr void validate(const E& e) {
  if constexpr (!is_leaf_v<E>) {
    static_for<E::arity>([&](auto k) { validate<T>(child<k.value>(e)); });
    if constexpr (requires { E::op_type::template validate<T>(e); }) E::op_type::template validate<T>(e);
  }
}

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
  static constexpr std::size_t U = TAD_UNROLL;
  /// Does the engine evaluate a frozen copy of e (see freeze)? With reductions, columns, or a
  /// leaf reading the caller's lvalue (`value(X * constant_ref(k))`: the store loop reads the
  /// frozen value).
  static constexpr bool copies = NR > 0 || P::has_columns || holds_ref<E>();
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

  /// max and min of no elements are errors: of an empty array, or along a row of no columns
  /// (with no rows, an axis point has nothing to reduce).
  constexpr void reject_empty() const {
    if constexpr (NC <= 1 && !P::has_points_anywhere) {
      if (P::rejects_empty && ctx_.n == 0) throw std::domain_error("tad::max(e) / tad::min(e): e is an empty array");
    } else {
      static_for<NR>([&](auto S) {
        constexpr reduction_info I = P::info[S.value];
        if constexpr (I.rejects_empty && I.down) {
          if (cols_[I.nest] > 0 && rows_[I.nest] == 0)
            throw std::domain_error("tad::max(e, axis<0>) / tad::min(e, axis<0>): e has columns but no rows "
                                    "(the maximum of no elements)");
        } else if constexpr (I.rejects_empty && I.point) {
          if (rows_[I.nest] > 0 && cols_[I.nest] == 0)
            throw std::domain_error("tad::max(e, axis<1>) / tad::min(e, axis<1>): e has rows but no columns "
                                    "(the maximum of no elements)");
        } else if constexpr (I.rejects_empty) {
          if (len<I.nest>() == 0) throw std::domain_error("tad::max(e) / tad::min(e): e is an empty array");
        }
      });
    }
  }

  /// Does E hold a pick (`pick(z, labels)`, also in `softmax_cross_entropy(z, labels)`)?
  static constexpr bool has_picks = [] {
    bool any = false;
    static_for<NR>([&](auto S) { any = any || is_pick_v<typename slot_node_t<E, S.value>::op_type>; });
    return any;
  }();
  /// A pick's labels: one per row of its argument, each one of its columns.
  void check_labels() {
    static_for<NR>([&](auto S) {
      if constexpr (is_pick_v<slot_op_t<S.value>>) {
        constexpr std::size_t In = P::info[S.value].nest;
        const auto& op = slot_ref<S.value>(e_).op;
        const std::size_t rows = rows_[In], cols = cols_[In];
        if (op.count != rows)
          throw shape_error::with_message("tad::pick(z, labels): " + std::to_string(op.count) + " labels for " +
                                              std::to_string(rows) + " rows of z (one class index per row)",
                                          rows, op.count);
        for (std::size_t r = 0; r < rows; ++r) {
          const auto c = op.labels[r];
          bool inside = true;
          if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(c)>>) inside = c >= 0;
          if (inside) inside = static_cast<std::size_t>(c) < cols;
          if (!inside)
            throw std::out_of_range("tad::pick(z, labels): label " + std::to_string(c) + " of row " + std::to_string(r) +
                                    " is not a column of z (0 <= label < " + std::to_string(cols) + ")");
        }
      }
    });
  }

  /// Value and gradients: every pass of the plan.
  constexpr T run() {
    if constexpr (NR > 0) {
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
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>()) {
        if constexpr (P::first_touch(k.value) < 0) {
          for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
        }
      } else {
        *outs_[k.value] = scalar_grad_[k.value];
      }
    });
    return value;
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

  /// The loops of pass K, level or depth A: one per extent class that has work in it.
  template <pass_kind K, int A>
  constexpr void loops() {
    static_for<NC>([&](auto c) {
      if constexpr (P::template runs<K, A>(c.value)) {
        if constexpr (extents<E>::t.nest_down[c.value]) down_loop<K, A, c.value>();
        else if constexpr (extents<E>::t.nest_points[c.value]) point_loop<K, A, c.value>();
        else if constexpr (extents<E>::t.nest_rows[c.value]) row_loop<K, A, c.value>();
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
  static constexpr bool is_array_k() {
    using X = std::tuple_element_t<K, typename W::types>;
    return X::is_array;
  }

  template <class V>
  struct acc {
    std::array<reduction_state<V>, NR> fs;
    sink<V, W, NR, NI, true> sk;
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

  /// Pushes the scalar adjoint dy of the scalar subexpression e (first reduction slot S) into
  /// the scalar variables' gradients and the reductions' adjoints.
  template <std::size_t S, class N>
  constexpr void backward_scalar(const N& e, T dy) {
    if constexpr (region_has_lets<N, false>()) {
      backward_scalar_lets<S>(e, dy);
    } else {
      const auto t = forward<T, S>(e, ctx_, 0);
      sink<T, W, NR, NI, false> s{};
      backward<S>(e, t, dy, s);
      static_for<NR>([&](auto r) { ctx_.adj[r.value] += s.red[r.value]; });
      static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
    }
  }

  /// backward_scalar for a loop invariant with lets in it (eval/let.hpp): each let once.
  template <std::size_t S, class N>
  constexpr void backward_scalar_lets(const N& e, T dy) {
    using Lets = lets_of_t<N, true, false>;
    std::array<T, Lets::size> env{};
    const auto lc = make_let_context<T, Lets>(ctx_, env);
    sink<T, W, NR, NI, false> s{};
    auto ls = make_let_sink<T, Lets>(s);
    auto main = [&]() {
      const auto t = forward<T, S>(e, lc, 0);
      backward<S>(e, t, dy, ls);
    };
    with_lets<0, true, false, T, S, 0, false>(e, lc, 0, ls, main);
    static_for<NR>([&](auto r) { ctx_.adj[r.value] += s.red[r.value]; });
    static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
  }

  /// top() for an expression with lets in its scalar code (eval/let.hpp): each let once.
  constexpr T top_lets(bool final) {
    using Lets = lets_of_t<E, true, false>;
    std::array<T, Lets::size> env{};
    const auto lc = make_let_context<T, Lets>(ctx_, env);
    sink<T, W, NR, NI, false> s{};
    auto ls = make_let_sink<T, Lets>(s);
    T value = T(0);
    auto main = [&]() { value = forward_backward<T, 0, 0, false>(e_, lc, 0, T(1), ls).v; };
    with_lets<0, true, false, T, 0, 0, false>(e_, lc, 0, ls, main);
    static_for<NR>([&](auto S) {
      if constexpr (P::info[S.value].depth == 0) ctx_.adj[S.value] = s.red[S.value];
    });
    if (final) {
      static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
    }
    return value;
  }

  /// The scalar part above the reductions: its value, and (with final) the gradients of the
  /// scalar variables; the adjoints of the outermost reductions in any case.
  constexpr T top(bool final) {
    if constexpr (region_has_lets<E, false>()) return top_lets(final);
    sink<T, W, NR, NI, false> s{};
    const T value = forward_backward<T, 0, 0, false>(e_, ctx_, 0, T(1), s).v;
    static_for<NR>([&](auto S) {
      if constexpr (P::info[S.value].depth == 0) ctx_.adj[S.value] = s.red[S.value];
    });
    if (final) {
      static_for<NV>([&](auto k) { scalar_grad_[k.value] += s.var[k.value]; });
    }
    return value;
  }

  /// Per-loop copies of the engine's state: locals whose address never escapes the loop
  /// function, so no gradient store can alias them and the compiler keeps them in registers.
  struct local {
    E e;
    ctx_t ctx;
    std::array<T*, NV + 1> outs;
    T* out;
  };

  template <pass_kind K, int A, std::size_t N, class V>
  TAD_INLINE static void step(const local& l, acc<V>& a, std::size_t i) {
    constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
    constexpr int depth = K == pass_kind::backward ? A : 0;
    if constexpr (K == pass_kind::store) {
      simd::store_any(l.out + i, forward<V, 0, P::reduction_roots, true>(l.e, l.ctx, i).v);
    } else {
      if constexpr (bwd) {
        static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
          if constexpr (is_array_k<k.value>() && touches_here(depth, k.value, N) && !P::column_in(k.value, N))
            a.sk.var[k.value] = simd::splat<V>(-0.0);
        });
      }
      // The adjoints of the lets deferred across loops (deferred_let) in this element.
      [[maybe_unused]] std::conditional_t<has_deferred && bwd, deferred_acc<V, all_lets>, char> xacc{};
      if constexpr (has_deferred && bwd) {
        for (auto& v : xacc.adj) v = simd::splat<V>(0);
      }
      auto visit = [&]<std::size_t S>(const auto& r) TAD_INLINE_LAMBDA {
        constexpr reduction_info I = P::info[S];
        using R = std::remove_cvref_t<decltype(r)>;
        using Op = typename R::op_type;
        constexpr std::size_t AS = S + 1 - props<R>::reductions;
        using Arg = std::remove_cvref_t<decltype(r.arg)>;
        if constexpr (has_deferred && bwd && backward_here<K, A, N>(I) && holds_deferred<S>) {
          step_lets_x<K, A, N, V, S>(r, l, a, i, xacc);
        } else if constexpr ((forward_here<K, A, N>(I) || backward_here<K, A, N>(I)) && region_has_lets<Arg, true>()) {
          step_lets<K, A, N, V, S>(r, l, a, i);
        } else if constexpr (backward_here<K, A, N>(I) && !Op::needs_value) {
          // The argument's adjoint is known before its value: differentiate as it is evaluated.
          const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
          const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
          const auto t = forward_backward<V, AS, I.root_base, true>(r.arg, l.ctx, i, da, a.sk);
          if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, std::remove_cvref_t<decltype(r.arg)>>(a.fs[S], t);
        } else if constexpr (forward_here<K, A, N>(I) || backward_here<K, A, N>(I)) {
          const auto t = forward<V, AS, I.root_base, true>(r.arg, l.ctx, i);
          if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, std::remove_cvref_t<decltype(r.arg)>>(a.fs[S], t);
          if constexpr (backward_here<K, A, N>(I)) {
            const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
            backward<AS, I.root_base>(r.arg, t, da, a.sk);
          }
        }
      };
      visit_reductions<0>(l.e, visit);
      if constexpr (has_deferred && bwd) {
        if constexpr (finalizes<depth, N>) deferred_rules<depth, N, V>(l, a, i, xacc);
      }
      if constexpr (bwd) {
        static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
          if constexpr (is_array_k<k.value>() && touches_here(depth, k.value, N) && !P::column_in(k.value, N)) {
            T* p = l.outs[k.value] + i;
            if constexpr (P::stores(depth, k.value, N)) {
              simd::store_any(p, a.sk.var[k.value]);
            } else {
              simd::store_any(p, simd::load_any<V>(p) + a.sk.var[k.value]);
            }
          }
        });
      }
    }
  }

  /// One element of reduction S's argument when it has lets (eval/let.hpp): the lets' bodies
  /// once, then what step() does without lets, then the bodies' rules on their summed adjoints.
  template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R>
  TAD_INLINE static void step_lets(const R& r, const local& l, acc<V>& a, std::size_t i) {
    constexpr reduction_info I = P::info[S];
    using Op = typename R::op_type;
    using Arg = std::remove_cvref_t<decltype(r.arg)>;
    using Lets = lets_of_t<Arg, true, true>;
    constexpr std::size_t AS = S + 1 - props<R>::reductions;
    std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets assigns each before use
    const auto lc = make_let_context<V, Lets>(l.ctx, env);
    auto ls = make_let_sink<V, Lets>(a.sk);
    auto main = [&]() TAD_INLINE_LAMBDA {
      if constexpr (backward_here<K, A, N>(I) && !Op::needs_value) {
        const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
        const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        const auto t = forward_backward<V, AS, I.root_base, true>(r.arg, lc, i, da, ls);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
      } else {
        const auto t = forward<V, AS, I.root_base, true>(r.arg, lc, i);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
        if constexpr (backward_here<K, A, N>(I)) {
          const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
          backward<AS, I.root_base>(r.arg, t, da, ls);
        }
      }
    };
    with_lets<0, backward_here<K, A, N>(I), true, V, AS, I.root_base, true>(r.arg, lc, i, ls, main);
  }

  /// Lets deferred across loops (eval/let.hpp, deferred_let; doc/design.md "Lets across loops").
  using all_lets = std::conditional_t<has_lets_v<E>, lets_of_t<E>, let_list<>>;
  /// Does E hold a deferred let?
  static constexpr bool has_deferred = [] {
    bool any = false;
    static_for<all_lets::size>([&](auto k) { any = any || deferred_let<E, W, typename all_lets::template at<k.value>>::deferred; });
    return any;
  }();
  /// Does the backward loop of depth D over nest N run the rule of a deferred let?
  template <int D, std::size_t N>
  static constexpr bool finalizes = [] {
    bool any = false;
    static_for<all_lets::size>([&](auto k) {
      using Def = deferred_let<E, W, typename all_lets::template at<k.value>>;
      any = any || (Def::deferred && Def::depth == D && Def::nest == N);
    });
    return any;
  }();
  /// Does it recompute the argument of reduction S for one (S holds it and ran backward earlier)?
  template <int D, std::size_t N, std::size_t S>
  static constexpr bool recomputes = [] {
    bool any = false;
    static_for<all_lets::size>([&](auto k) {
      using Def = deferred_let<E, W, typename all_lets::template at<k.value>>;
      any = any || (Def::deferred && Def::depth == D && Def::nest == N && Def::in(S) && P::info[S].wants && P::info[S].depth < D);
    });
    return any;
  }();
  /// Does the argument of reduction S hold a deferred let?
  template <std::size_t S>
  static constexpr bool holds_deferred = [] {
    bool any = false;
    static_for<all_lets::size>([&](auto k) {
      using Def = deferred_let<E, W, typename all_lets::template at<k.value>>;
      any = any || (Def::deferred && Def::in(S));
    });
    return any;
  }();
  /// ... is it recomputed by the loop of pass K, level or depth A, over nest N?
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  static constexpr bool recomputed_in() {
    if constexpr (!has_deferred || !(K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled)) return false;
    else return recomputes<K == pass_kind::backward ? A : 0, N, S>;
  }

  /// step_lets for reduction S's argument holding a deferred let, in a backward pass: a deferred
  /// let's summed adjoint goes to x (the pass that runs its rule) or is dropped (an earlier one).
  template <pass_kind K, int A, std::size_t N, class V, std::size_t S, class R, class X>
  TAD_INLINE static void step_lets_x(const R& r, const local& l, acc<V>& a, std::size_t i, X& x) {
    constexpr reduction_info I = P::info[S];
    using Op = typename R::op_type;
    using Arg = std::remove_cvref_t<decltype(r.arg)>;
    using Lets = lets_of_t<Arg, true, true>;
    constexpr std::size_t AS = S + 1 - props<R>::reductions;
    constexpr int depth = K == pass_kind::backward ? A : 0;
    std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets_x assigns each before use
    const auto lc = make_let_context<V, Lets>(l.ctx, env);
    auto ls = make_let_sink<V, Lets>(a.sk);
    auto main = [&]() TAD_INLINE_LAMBDA {
      if constexpr (!Op::needs_value) {
        const T seed = K == pass_kind::scaled ? T(1) : l.ctx.adj[S];
        const V da = Op::backward(simd::splat<V>(seed), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        const auto t = forward_backward<V, AS, I.root_base, true>(r.arg, lc, i, da, ls);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
      } else {
        const auto t = forward<V, AS, I.root_base, true>(r.arg, lc, i);
        if constexpr (forward_here<K, A, N>(I)) accumulate_tree<Op, Arg>(a.fs[S], t);
        const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        backward<AS, I.root_base>(r.arg, t, da, ls);
      }
    };
    with_lets_x<0, defer_mode<E, W, depth, false>, true, V, AS, I.root_base, true>(r.arg, lc, i, ls, main, x);
  }

  /// The adjoints that the argument of reduction S, whose backward pass ran earlier, sends to the
  /// deferred lets it holds, recomputed at element i (its adjoint is known): its code forward
  /// and backward into a scratch sink, the lets' summed adjoints into x.
  template <std::size_t S, class V, class R, class X>
  TAD_INLINE static void recompute_deferred(const R& r, const local& l, std::size_t i, X& x) {
    constexpr reduction_info I = P::info[S];
    using Op = typename R::op_type;
    using Arg = std::remove_cvref_t<decltype(r.arg)>;
    using Lets = lets_of_t<Arg, true, true>;
    constexpr std::size_t AS = S + 1 - props<R>::reductions;
    sink<V, W, NR, NI, true> scratch;  // NOLINT(cppcoreguidelines-pro-type-member-init): zeroed below
    for (auto& v : scratch.var) v = simd::splat<V>(0);
    for (auto& v : scratch.red) v = simd::splat<V>(0);
    for (auto& v : scratch.inv) v = simd::splat<V>(0);
    std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets_x assigns each before use
    const auto lc = make_let_context<V, Lets>(l.ctx, env);
    auto ls = make_let_sink<V, Lets>(scratch);
    auto main = [&]() TAD_INLINE_LAMBDA {
      if constexpr (!Op::needs_value) {
        const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        forward_backward<V, AS, I.root_base, true>(r.arg, lc, i, da, ls);
      } else {
        const auto t = forward<V, AS, I.root_base, true>(r.arg, lc, i);
        const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
        backward<AS, I.root_base>(r.arg, t, da, ls);
      }
    };
    with_lets_x<0, defer_mode<E, W, 0, true>, true, V, AS, I.root_base, true>(r.arg, lc, i, ls, main, x);
  }

  /// At the end of element i of the backward loop of depth D over nest N: the recomputed
  /// contributions of the arguments whose passes ran earlier, then the rule of each deferred let
  /// of this loop, once, on its adjoint summed over all its occurrences (its body evaluated as
  /// at its occurrence in its owner, a reduction handled by this loop).
  template <int D, std::size_t N, class V, class X>
  TAD_INLINE static void deferred_rules(const local& l, acc<V>& a, std::size_t i, X& x) {
    static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
      if constexpr (recomputes<D, N, S.value>) recompute_deferred<S.value, V>(slot_ref<S.value>(l.e), l, i, x);
    });
    static_for<all_lets::size>([&](auto k) TAD_INLINE_LAMBDA {
      using Let = typename all_lets::template at<k.value>;
      using Def = deferred_let<E, W, Let>;
      if constexpr (Def::deferred && Def::depth == D && Def::nest == N) {
        constexpr std::size_t O = Def::owner;
        const auto& owner = slot_ref<O>(l.e);
        constexpr std::size_t AS = O + 1 - props<std::remove_cvref_t<decltype(owner)>>::reductions;
        auto rule = [&]<std::size_t S2, std::size_t R2>(const Let& node) TAD_INLINE_LAMBDA {
          const auto t = forward<V, S2, R2, true>(node.arg, l.ctx, i);
          backward<S2, R2>(node.arg, t, x.adj[k.value], a.sk);
        };
        visit_first_let<Let, true, AS, P::info[O].root_base>(owner.arg, rule);
      }
    });
  }

  /// Computes the loop invariants of the reductions this loop handles (or of E, to store it).
  template <pass_kind K, int A, std::size_t N>
  void compute_invariants() {
    auto eval_root = [&]<std::size_t S, std::size_t R>(const auto& node) {
      ctx_.inv[R] = forward<T, S>(node, ctx_, 0).v;
    };
    if constexpr (K == pass_kind::store) {
      visit_roots<0, P::reduction_roots>(e_, eval_root);
    } else {
      auto per_reduction = [&]<std::size_t S>(const auto& r) {
        constexpr reduction_info I = P::info[S];
        if constexpr (forward_here<K, A, N>(I) || backward_here<K, A, N>(I) || recomputed_in<K, A, N, S>()) {
          visit_roots<S + 1 - props<std::remove_cvref_t<decltype(r)>>::reductions, I.root_base>(r.arg, eval_root);
        }
      };
      visit_reductions<0>(e_, per_reduction);
    }
  }

  template <pass_kind K, int A, std::size_t N>
  void loop() {
    constexpr std::size_t W_ = simd::width<T>;
    const std::size_t n = len<N>();
    compute_invariants<K, A, N>();
    std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (auto& a : ab) a = make_acc<B>();
    local l{e_, ctx_, {}, out_};
    if constexpr (NC > 1) l.ctx.n = n;  // what mean's rule reads in this loop
    for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
    std::size_t i = 0;
    if constexpr (U > 1) {
      for (; i + U * W_ <= n; i += U * W_) {
        static_for<U>([&](auto u) TAD_INLINE_LAMBDA { step<K, A, N>(l, ab[u.value], i + u.value * W_); });
      }
    }
    for (; i + W_ <= n; i += W_) step<K, A, N>(l, ab[0], i);
    acc<T> at = make_acc<T>();
    for (; i < n; ++i) step<K, A, N>(l, at, i);
    if constexpr (K != pass_kind::store) finish<K, A, N>(ab, at);
  }

  /// Points the matrix leaves of nest Nest in dst at row r of the same leaves of src (offset
  /// r * cols) and sets its columns to their r-th elements; I is the position of dst's first
  /// leaf. Leaves of other nests are left alone: their extents differ, so the offset could
  /// point past them.
  template <std::size_t Nest, std::size_t I, class N>
  TAD_INLINE static void rebase_rows(N& dst, const N& src, std::size_t offset, std::size_t r) {
    if constexpr (is_leaf_v<N>) {
      if constexpr (extents<E>::t.nest_of[I] == Nest) {
        if constexpr (is_strided_v<N>) dst.data = src.data + r * src.ld;
        else if constexpr (N::is_array && leaf_rank<N>() == 2) dst.data = src.data + offset;
        else if constexpr (is_gathered_column_v<N>) dst.val = element_of(src.vec, r);
        else if constexpr (is_column_v<N>) dst.val = src.vec.data[r];
      }
    } else {
      static_for<N::arity>([&](auto k) TAD_INLINE_LAMBDA {
        rebase_rows<Nest, child_leaf_offset<N, k.value, I>()>(child<k.value>(dst), child<k.value>(src), offset, r);
      });
    }
  }

  /// Sets the columns of nest Nest in e to their r-th elements (for the loop invariants, which
  /// are computed from e_).
  template <std::size_t Nest, std::size_t I, class N>
  static void set_columns(N& e, std::size_t r) {
    if constexpr (is_leaf_v<N>) {
      if constexpr (is_column_v<N> && extents<E>::t.nest_of[I] == Nest) e.val = element_of(e.vec, r);
    } else {
      static_for<N::arity>([&](auto k) { set_columns<Nest, child_leaf_offset<N, k.value, I>()>(child<k.value>(e), r); });
    }
  }

  /// The end of row r of nest N when it holds columns: the adjoints of its loop invariants that
  /// hold a column (one value per row) are propagated, and each column variable's summed
  /// adjoint is its gradient's element r; those accumulators restart at zero. Invariants without
  /// a column keep summing over all rows and are propagated once, by finish.
  template <pass_kind K, int A, std::size_t N>
  void finish_row(std::array<acc<B>, U>& ab, acc<T>& at, std::size_t row) {
    constexpr int depth = K == pass_kind::backward ? A : 0;
    auto fin = [&]<std::size_t S>(const auto& r) {
      using R = std::remove_cvref_t<decltype(r)>;
      constexpr reduction_info I = P::info[S];
      if constexpr (backward_here<K, A, N>(I)) {
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          using Node = std::remove_cvref_t<decltype(node)>;
          if constexpr (W::template reached<Node> && props<Node>::has_column) {
            B s = ab[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
            backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
            for (auto& a : ab) a.sk.inv[RR] = simd::splat<B>(0);
            at.sk.inv[RR] = T(0);
          }
        };
        visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push);
      }
    };
    visit_reductions<0>(e_, fin);
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>() && P::column_in(k.value, N) && touches_here(depth, k.value, N)) {
        B s = ab[0].sk.var[k.value];
        for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.var[k.value];
        // scalar_grad_ holds what the loop invariants pushed into this row's element.
        const T g = simd::hsum(s) + at.sk.var[k.value] + scalar_grad_[k.value];
        T* p = outs_[k.value] + row;
        if constexpr (P::stores(depth, k.value, N)) *p = g;
        else *p += g;
        for (auto& a : ab) a.sk.var[k.value] = simd::splat<B>(0);
        at.sk.var[k.value] = T(0);
        scalar_grad_[k.value] = T(0);
      }
    });
  }

  /// Zeroes the gradients that the loop over nest N of the backward pass at depth D adds to
  /// first (plan::zero_fills: a row vector's, or one an axis point's sweeps write).
  template <int D, std::size_t N>
  void zero_fill() {
    static_for<NV>([&](auto k) {
      if constexpr (is_array_k<k.value>() && P::zero_fills(D, k.value, N)) {
        for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
      }
    });
  }

  /// The loop of a row nest (a vector broadcast across a matrix's rows; extents.hpp): per row,
  /// the matrix leaves, the matrix variables' gradients and the output are rebased to that row
  /// and today's flat loop runs over its columns, so a vector leaf reads (and its gradient
  /// sums into) the same columns in every row. The reductions' accumulators span all rows; with
  /// columns, the column variables' and the column invariants' restart per row (finish_row).
  template <pass_kind K, int A, std::size_t N>
  void row_loop() {
    constexpr std::size_t W_ = simd::width<T>;
    constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
    constexpr int depth = K == pass_kind::backward ? A : 0;
    constexpr bool columns = extents<E>::t.nest_columns[N];  // per-row invariants and gradients
    const std::size_t rows = rows_[N], cols = cols_[N];
    if constexpr (!columns) compute_invariants<K, A, N>();
    // zero_fill's body, written out: calling it moved g++ 12's register allocation in this
    // function (benchmarks.md, "Codegen of the existing workloads after axis points").
    if constexpr (bwd) {
      static_for<NV>([&](auto k) {
        if constexpr (is_array_k<k.value>() && P::zero_fills(depth, k.value, N)) {
          for (std::size_t i = 0; i < sizes_[k.value]; ++i) outs_[k.value][i] = T(0);
        }
      });
    }
    constexpr bool cpoints = has_column_points<K, A, N>;  // as_column(sum(X, axis<1>)): sweeps per row
    if constexpr (cpoints) column_point_invariants<K, A, N>();
    std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (auto& a : ab) a = make_acc<B>();
    acc<T> at = make_acc<T>();
    // The column points' sweeps' single elements (nothing without column points).
    [[maybe_unused]] std::conditional_t<cpoints, acc<T>, char> pt{};
    if constexpr (cpoints) pt = make_acc<T>();
    local l{e_, ctx_, {}, out_};
    l.ctx.n = rows * cols;  // what mean's rule reads in this loop
    for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t offset = r * cols;
      rebase_rows<N, 0>(l.e, e_, offset, r);
      if constexpr (cpoints) {
        column_point_sweeps<K, A, N, pass_kind::forward>(l, ab, pt, r);
        l.ctx.n = rows * cols;
      }
      if constexpr (columns) {
        set_columns<N, 0>(e_, r);
        compute_invariants<K, A, N>();
        l.ctx.inv = ctx_.inv;
      }
      static_for<NV>([&](auto k) {
        if constexpr (bwd && is_array_k<k.value>() && !P::row_in(k.value, N) && !P::column_in(k.value, N) &&
                      touches_here(depth, k.value, N))
          l.outs[k.value] = outs_[k.value] + offset;
      });
      if constexpr (K == pass_kind::store) l.out = out_ + offset;
      std::size_t j = 0;
      if constexpr (U > 1) {
        for (; j + U * W_ <= cols; j += U * W_) {
          static_for<U>([&](auto u) TAD_INLINE_LAMBDA { step<K, A, N>(l, ab[u.value], j + u.value * W_); });
        }
      }
      for (; j + W_ <= cols; j += W_) step<K, A, N>(l, ab[0], j);
      for (; j < cols; ++j) step<K, A, N>(l, at, j);
      if constexpr (columns && bwd) finish_row<K, A, N>(ab, at, r);
      if constexpr (cpoints && bwd) column_point_sweeps<K, A, N, pass_kind::backward>(l, ab, pt, r, &at);
    }
    if constexpr (cpoints && K != pass_kind::store) {
      static_for<NV>([&](auto k) {
        if constexpr (!is_array_k<k.value>()) at.sk.var[k.value] += pt.sk.var[k.value];
      });
    }
    if constexpr (K != pass_kind::store) finish<K, A, N>(ab, at);
    if constexpr (cpoints && bwd) push_point_invariants<K, A, N>(ab, pt);
  }

  /// The loop invariants of the arguments of the column points whose sweeps the loop of pass K
  /// over nest N runs: computed once, before the loop. (point_loop has the same code for its
  /// points written out, as its own row mapping and push: as functions they moved g++ 12's code
  /// for bench.rowlse's loop.)
  template <pass_kind K, int A, std::size_t N>
  void column_point_invariants() {
    static_for<NR>([&](auto S) {
      if constexpr (column_point_slot<S.value> && point_forward<K, A, N, S.value>()) {
        auto eval_root = [&]<std::size_t SS, std::size_t R>(const auto& node) { ctx_.inv[R] = forward<T, SS>(node, ctx_, 0).v; };
        auto per_point = [&]<std::size_t PS>(const auto& red) {
          if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, eval_root);
        };
        visit_reductions<0>(e_, per_point);
      }
    });
  }

  /// Row r of the argument of column point S, whose sweeps run in the loop over nest N: its
  /// leaves (when its nest is another one) and its matrix variables' gradients; returns its
  /// columns, which mean's rule reads in the sweeps.
  template <pass_kind K, int A, std::size_t N, std::size_t S>
  TAD_INLINE std::size_t point_row(local& l, std::size_t r) {
    constexpr std::size_t In = P::info[S].nest;
    const std::size_t cols = cols_[In];
    if constexpr (In != N) rebase_rows<In, 0>(l.e, e_, r * cols, r);
    if constexpr (point_backward<K, A, N, S>()) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        using X = std::tuple_element_t<k.value, typename W::types>;
        if constexpr (X::is_array && leaf_rank<X>() == 2 && P::vars[S].test(k.value)) l.outs[k.value] = outs_[k.value] + r * cols;
      });
    }
    l.ctx.n = cols;
    return cols;
  }

  /// The sweeps of nest N's column points over row r (D forward: each point's value at that row,
  /// into l.ctx and ctx_ for the row's code and loop invariants; D backward: each seeded with the
  /// adjoint the row's code summed for it, in the sink (*at and ab) and, from the row's loop
  /// invariants, in ctx_.adj).
  template <pass_kind K, int A, std::size_t N, pass_kind D>
  TAD_INLINE void column_point_sweeps(local& l, std::array<acc<B>, U>& ab, acc<T>& pt, std::size_t r,
                                      acc<T>* at = nullptr) {
    static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
      constexpr std::size_t s = S.value;
      if constexpr (column_point_slot<s> && D == pass_kind::forward && point_forward<K, A, N, s>()) {
        const std::size_t cols = point_row<K, A, N, s>(l, r);
        if constexpr (picks<s>) pick_sweep<pass_kind::forward, s>(l, pt, r);
        else sweep<pass_kind::forward, s>(l, ab, pt, cols);
        ctx_.val[s] = l.ctx.val[s];
        ctx_.aux[s] = l.ctx.aux[s];
      } else if constexpr (column_point_slot<s> && D == pass_kind::backward && point_backward<K, A, N, s>()) {
        B sum = ab[0].sk.red[s];
        for (std::size_t u = 1; u < U; ++u) sum = sum + ab[u].sk.red[s];
        l.ctx.adj[s] = simd::hsum(sum) + at->sk.red[s] + ctx_.adj[s];
        for (auto& a : ab) a.sk.red[s] = simd::splat<B>(0);
        at->sk.red[s] = T(0);
        ctx_.adj[s] = T(0);
        const std::size_t cols = point_row<K, A, N, s>(l, r);
        if constexpr (picks<s>) pick_sweep<pass_kind::backward, s>(l, pt, r);
        else sweep<pass_kind::backward, s>(l, ab, pt, cols);
      }
    });
  }

  /// After the loop: the summed adjoints of the loop invariants of the arguments of the column
  /// points whose sweeps it ran backward, propagated once.
  template <pass_kind K, int A, std::size_t N>
  void push_point_invariants(std::array<acc<B>, U>& ab, const acc<T>& pt) {
    static_for<NR>([&](auto S) {
      if constexpr (column_point_slot<S.value> && point_backward<K, A, N, S.value>()) {
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
            B s = ab[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
            backward_scalar<SS>(node, simd::hsum(s) + pt.sk.inv[RR]);
          }
        };
        auto per_point = [&]<std::size_t PS>(const auto& red) {
          if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, push);
        };
        visit_reductions<0>(e_, per_point);
      }
    });
  }

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
    const T* value;
    const T* aux;
    const T* adj;
    std::size_t n;
  };

  /// One element (V: a batch or one T) of the argument of axis point S at column j of the
  /// current row: accumulated (K forward) or differentiated with the row's adjoint (K backward),
  /// its array variables' adjoints added to their gradients (a matrix variable's row, a row
  /// vector's columns).
  /// First: the first of a shifted op's two forward sweeps (logsumexp's shift, lse_shift_op).
  /// Stash: the second keeps its terms in the gradient of the argument (plan::stash_var).
  /// Lanes: a point along axis 0 (down_loop), whose value, auxiliary number and adjoint differ
  /// per lane (per column), read from *ln.
  template <pass_kind K, std::size_t S, class V, bool First = false, bool Stash = false, bool Lanes = false>
  TAD_INLINE static void point_step(const local& l, acc<V>& a, std::size_t j, const lane_numbers* ln = nullptr) {
    constexpr bool bwd = K == pass_kind::backward;
    constexpr reduction_info I = P::info[S];
    if constexpr (bwd) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        if constexpr (is_array_k<k.value>() && P::vars[S].test(k.value)) a.sk.var[k.value] = simd::splat<V>(-0.0);
      });
    }
    auto visit = [&]<std::size_t SS>(const auto& r) TAD_INLINE_LAMBDA {
      if constexpr (SS == S) {
        using R = std::remove_cvref_t<decltype(r)>;
        using Op = typename R::op_type;
        using Arg = std::remove_cvref_t<decltype(r.arg)>;
        // c: the context (with lets, their values too), sk: the sink (with lets, their adjoints).
        auto body = [&](const auto& c, [[maybe_unused]] auto& sk) TAD_INLINE_LAMBDA {
          if constexpr (!bwd) {
            const auto t = forward<V, S, I.root_base, true>(r.arg, c, j);
            if constexpr (First) lse_shift_op::accumulate(a.fs[S], t.v);
            else if constexpr (Stash) simd::store_any(l.outs[P::stash_var[S]] + j, Op::accumulate_kept(a.fs[S], t.v));
            else accumulate_tree<Op, Arg>(a.fs[S], t);
          } else if constexpr (Lanes && !Op::needs_value) {
            const V da = lane_backward<Op>(simd::load_any<V>(ln->adj), simd::splat<V>(0), simd::load_any<V>(ln->value),
                                           simd::load_any<V>(ln->aux), ln->n);
            forward_backward<V, S, I.root_base, true>(r.arg, c, j, da, sk);
          } else if constexpr (Lanes) {
            const auto t = forward<V, S, I.root_base, true>(r.arg, c, j);
            const V da = lane_backward<Op>(simd::load_any<V>(ln->adj), t.v, simd::load_any<V>(ln->value),
                                           simd::load_any<V>(ln->aux), ln->n);
            backward<S, I.root_base>(r.arg, t, da, sk);
          } else if constexpr (!Op::needs_value) {
            const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), simd::splat<V>(0), l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
            forward_backward<V, S, I.root_base, true>(r.arg, c, j, da, sk);
          } else {
            const auto t = forward<V, S, I.root_base, true>(r.arg, c, j);
            const V da = Op::backward(simd::splat<V>(l.ctx.adj[S]), t.v, l.ctx.val[S], l.ctx.aux[S], l.ctx.n);
            backward<S, I.root_base>(r.arg, t, da, sk);
          }
        };
        if constexpr (region_has_lets<Arg, true>()) {
          // A let inside the argument is shared per element of each sweep, as in step_lets:
          // its body once, the argument's code, then the body's rule on the summed adjoint.
          using Lets = lets_of_t<Arg, true, true>;
          std::array<V, Lets::size> env;  // NOLINT(cppcoreguidelines-pro-type-member-init): with_lets assigns each before use
          const auto lc = make_let_context<V, Lets>(l.ctx, env);
          auto ls = make_let_sink<V, Lets>(a.sk);
          auto main = [&]() TAD_INLINE_LAMBDA { body(lc, ls); };
          with_lets<0, bwd, true, V, S, I.root_base, true>(r.arg, lc, j, ls, main);
        } else {
          body(l.ctx, a.sk);
        }
      }
    };
    visit_reductions<0>(l.e, visit);
    if constexpr (bwd) {
      static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
        if constexpr (is_array_k<k.value>() && P::vars[S].test(k.value)) {
          T* p = l.outs[k.value] + j;
          if constexpr (P::point_stores(S, k.value)) simd::store_any(p, a.sk.var[k.value]);
          else simd::store_any(p, simd::load_any<V>(p) + a.sk.var[k.value]);
        }
      });
    }
  }

  /// A sweep of axis point S over the current row (cols elements): today's loop body, U
  /// batches, one batch, then single elements. Forward: the row's reduction, into
  /// l.ctx.val[S] and aux[S].
  ///
  /// A shifted op (logsumexp_op) sweeps twice forward: First, the shift (lse_shift_op's maximum,
  /// 0 if not finite), which then sits in every state's b while the second sweep sums.
  ///
  /// Stash (plan::stash_var): the second forward sweep stores its terms exp(x - shift) in the
  /// argument's gradient row and leaves the shift in l.ctx.aux[S]; the backward sweep scales
  /// that row by kept_scale, one number per row (the argument is the variable itself).
  template <pass_kind K, std::size_t S, bool First = false, bool Stash = false>
  TAD_INLINE void sweep(local& l, std::array<acc<B>, U>& ab, acc<T>& at, std::size_t cols) {
    constexpr std::size_t W_ = simd::width<T>;
    using Op = typename slot_node_t<E, S>::op_type;
    if constexpr (K == pass_kind::backward && Stash) {
      T* p = l.outs[P::stash_var[S]];
      const T c = Op::kept_scale(l.ctx.adj[S], l.ctx.val[S], l.ctx.aux[S]);
      const B cb = simd::splat<B>(c);
      std::size_t j = 0;
      for (; j + W_ <= cols; j += W_) simd::store_any(p + j, simd::load_any<B>(p + j) * cb);
      for (; j < cols; ++j) p[j] *= c;
      return;
    }
    if constexpr (K == pass_kind::forward && First) {
      for (auto& a : ab) a.fs[S] = lse_shift_op::template init<B>();
      at.fs[S] = lse_shift_op::template init<T>();
    } else if constexpr (K == pass_kind::forward && requires { Op::shifted; }) {
      sweep<K, S, true>(l, ab, at, cols);
      const T m = l.ctx.val[S];
      for (auto& a : ab) a.fs[S] = reduction_state<B>{simd::splat<B>(0), simd::splat<B>(m)};
      at.fs[S] = reduction_state<T>{T(0), m};
    } else if constexpr (K == pass_kind::forward) {
      for (auto& a : ab) a.fs[S] = Op::template init<B>();
      at.fs[S] = Op::template init<T>();
    }
    std::size_t j = 0;
    if constexpr (U > 1) {
      for (; j + U * W_ <= cols; j += U * W_) {
        static_for<U>([&](auto u) TAD_INLINE_LAMBDA { point_step<K, S, B, First, Stash>(l, ab[u.value], j + u.value * W_); });
      }
    }
    for (; j + W_ <= cols; j += W_) point_step<K, S, B, First, Stash>(l, ab[0], j);
    for (; j < cols; ++j) point_step<K, S, T, First, Stash>(l, at, j);
    if constexpr (K == pass_kind::forward && First) {
      l.ctx.val[S] = lse_shift_op::finish(merged_state<lse_shift_op, S>(ab, at), cols).value;
    } else if constexpr (K == pass_kind::forward) {
      const auto res = Op::finish(merged_state<Op, S>(ab, at), cols);
      l.ctx.val[S] = res.value;
      l.ctx.aux[S] = res.aux;
      if constexpr (Stash) l.ctx.aux[S] = at.fs[S].b;  // the shift, for kept_scale
    }
  }

  /// Is slot S a pick (`pick(z, labels)`, one element per row)?
  template <std::size_t S>
  static constexpr bool picks = is_pick_v<slot_op_t<S>>;
  /// The "sweep" of a pick over row r: its one element, at column labels[r] (check_labels has
  /// checked it), forward into l.ctx.val[S], backward seeded with the row's adjoint.
  template <pass_kind K, std::size_t S>
  TAD_INLINE void pick_sweep(local& l, acc<T>& at, std::size_t r) {
    const auto j = static_cast<std::size_t>(slot_ref<S>(l.e).op.labels[r]);
    if constexpr (K == pass_kind::forward) at.fs[S] = slot_op_t<S>::template init<T>();
    point_step<K, S, T>(l, at, j);
    if constexpr (K == pass_kind::forward) {
      l.ctx.val[S] = at.fs[S].a;
      l.ctx.aux[S] = T(0);
    }
  }

  /// The per-lane states of reduction S in ab and at, merged into one (a sum's by hsum).
  template <class Op, std::size_t S>
  TAD_INLINE static reduction_state<T> merged_state(std::array<acc<B>, U>& ab, const acc<T>& at) {
    for (std::size_t u = 1; u < U; ++u) Op::merge(ab[0].fs[S], ab[u].fs[S]);
    if constexpr (std::is_base_of_v<sum_op, Op> || std::is_base_of_v<mean_op, Op>) {
      return {simd::hsum(ab[0].fs[S].a) + at.fs[S].a, T(0)};
    }
    alignas(64) T la[simd::width<T>];
    alignas(64) T lb[simd::width<T>];
    ab[0].fs[S].a.store_aligned(la);
    ab[0].fs[S].b.store_aligned(lb);
    reduction_state<T> s = at.fs[S];
    for (std::size_t k = 0; k < simd::width<T>; ++k) Op::merge(s, reduction_state<T>{la[k], lb[k]});
    return s;
  }

  /// The loop of a nest whose code reads axis points (`mean(softplus(sum(X * w, axis<1>)))`).
  /// Per block of W rows (W the SIMD width): each point's forward sweep over each row of its
  /// argument (the row's value, into the block's buffer pv), the nest's own code at those W
  /// elements as one batch (it accumulates the nest's reductions and, in a backward pass,
  /// pushes the points' adjoints, one per row), then each point's backward sweep over each
  /// row, seeded with its row's adjoint. The remaining rows run the same one at a time (the
  /// nest's code on one T). A block's rows (W x cols elements) stay in L1 between the sweeps,
  /// so X is read from memory once per pass. Scalar variables' and loop invariants' adjoints
  /// of the sweeps sum over all rows, as in loop().
  template <pass_kind K, int A, std::size_t N>
  void point_loop() {
    constexpr std::size_t W_ = simd::width<T>;
    constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
    constexpr int depth = K == pass_kind::backward ? A : 0;
    const std::size_t rows = len<N>();
    compute_invariants<K, A, N>();
    static_for<NR>([&](auto S) {
      if constexpr (point_forward<K, A, N, S.value>()) {
        auto eval_root = [&]<std::size_t SS, std::size_t R>(const auto& node) { ctx_.inv[R] = forward<T, SS>(node, ctx_, 0).v; };
        auto per_point = [&]<std::size_t PS>(const auto& red) {
          if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, eval_root);
        };
        visit_reductions<0>(e_, per_point);
      }
    });
    if constexpr (bwd) zero_fill<depth, N>();
    std::array<acc<B>, U> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (auto& a : ab) a = make_acc<B>();
    acc<T> pt = make_acc<T>();  // the sweeps' single elements
    acc<T> at = make_acc<T>();  // the nest's own code on single rows
    local l{e_, ctx_, {}, out_};
    for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
    // Per point: a block's values and adjoints, one per row.
    alignas(64) std::array<std::array<T, W_>, NR> pv{}, pa{};
    // ... and the auxiliary numbers of the points whose rules read them (max's count of maxima).
    alignas(64) std::array<std::array<T, W_>, NR> px{};
    static_for<NR>([&](auto S) {
      if constexpr (point_forward<K, A, N, S.value>()) slot_ref<S.value>(l.e).op.rows = pv[S.value].data();
    });
    // Row r of every point of this nest: the argument's leaves, its matrix variables' gradients.
    auto to_row = [&]<std::size_t S>(std::size_t r) TAD_INLINE_LAMBDA {
      constexpr std::size_t In = P::info[S].nest;
      const std::size_t cols = cols_[In];
      rebase_rows<In, 0>(l.e, e_, r * cols, r);
      if constexpr (point_backward<K, A, N, S>()) {
        static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
          using X = std::tuple_element_t<k.value, typename W::types>;
          if constexpr (X::is_array && leaf_rank<X>() == 2 && P::vars[S].test(k.value))
            l.outs[k.value] = outs_[k.value] + r * cols;
        });
      }
      l.ctx.n = cols;  // what mean's rule reads in the sweeps
      return cols;
    };
    auto forward_sweeps = [&](std::size_t r) TAD_INLINE_LAMBDA {
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_forward<K, A, N, S.value>()) {
          const std::size_t cols = to_row.template operator()<S.value>(r);
          if constexpr (picks<S.value>) pick_sweep<pass_kind::forward, S.value>(l, pt, r);
          else sweep<pass_kind::forward, S.value, false, stash_here<K, A, N, S.value>>(l, ab, pt, cols);
        }
      });
    };
    auto backward_sweeps = [&](std::size_t r) TAD_INLINE_LAMBDA {
      static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
        if constexpr (point_backward<K, A, N, S.value>()) {
          const std::size_t cols = to_row.template operator()<S.value>(r);
          if constexpr (picks<S.value>) pick_sweep<pass_kind::backward, S.value>(l, pt, r);
          else sweep<pass_kind::backward, S.value, false, stash_here<K, A, N, S.value>>(l, ab, pt, cols);
        }
      });
    };
    // A backward pass sweeps a block of rows forward, runs the nest's code on it, then sweeps it
    // backward: the block must stay in L1 in between. Rows too long for that run one at a time
    // (each row's sweeps back to back, as a hand-written loop does).
    std::size_t widest = 0;
    static_for<NR>([&](auto S) {
      if constexpr (point_backward<K, A, N, S.value>()) widest = std::max(widest, cols_[P::info[S.value].nest]);
    });
    const bool blocks = widest * W_ * sizeof(T) <= TAD_POINT_BLOCK_BYTES;
    std::size_t r = 0;
    for (; blocks && r + W_ <= rows; r += W_) {
      for (std::size_t k = 0; k < W_; ++k) {
        forward_sweeps(r + k);
        static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
          if constexpr (point_forward<K, A, N, S.value>()) pv[S.value][k] = l.ctx.val[S.value];
          if constexpr (point_backward<K, A, N, S.value>() && slot_op_t<S.value>::needs_value) px[S.value][k] = l.ctx.aux[S.value];
        });
      }
      l.ctx.n = rows;
      step<K, A, N>(l, ab[0], r);
      if constexpr (bwd) {
        static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
          if constexpr (point_backward<K, A, N, S.value>()) {
            ab[0].sk.red[S.value].store_aligned(pa[S.value].data());
            ab[0].sk.red[S.value] = simd::splat<B>(0);
          }
        });
        for (std::size_t k = 0; k < W_; ++k) {
          static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
            if constexpr (point_backward<K, A, N, S.value>()) {
              l.ctx.val[S.value] = pv[S.value][k];
              l.ctx.adj[S.value] = pa[S.value][k];
              if constexpr (slot_op_t<S.value>::needs_value) l.ctx.aux[S.value] = px[S.value][k];
            }
          });
          backward_sweeps(r + k);
        }
      }
    }
    for (; r < rows; ++r) {
      forward_sweeps(r);
      l.ctx.n = rows;
      step<K, A, N>(l, at, r);
      if constexpr (bwd) {
        static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
          if constexpr (point_backward<K, A, N, S.value>()) {
            l.ctx.adj[S.value] = at.sk.red[S.value];
            at.sk.red[S.value] = T(0);
          }
        });
        backward_sweeps(r);
      }
    }
    if constexpr (K != pass_kind::store) {
      // The sweeps' adjoints of scalar variables join the nest's own (finish sums both), those
      // of the points' loop invariants are propagated once.
      static_for<NV>([&](auto k) {
        if constexpr (!is_array_k<k.value>()) at.sk.var[k.value] += pt.sk.var[k.value];
      });
      finish<K, A, N>(ab, at);
      static_for<NR>([&](auto S) {
        if constexpr (point_backward<K, A, N, S.value>()) {
          auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
            if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
              B s = ab[0].sk.inv[RR];
              for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
              backward_scalar<SS>(node, simd::hsum(s) + pt.sk.inv[RR]);
            }
          };
          auto per_point = [&]<std::size_t PS>(const auto& red) {
            if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, push);
          };
          visit_reductions<0>(e_, per_point);
        }
      });
    }
  }

  /// Per point along axis 0, the numbers of a block of L columns (down_loop): each column's
  /// value, auxiliary number and adjoint.
  template <std::size_t L>
  struct lane_block {
    alignas(64) std::array<std::array<T, L>, NR> value;
    alignas(64) std::array<std::array<T, L>, NR> aux;
    alignas(64) std::array<std::array<T, L>, NR> adj;
  };

  /// Op's finish of each lane of s (a reduction of n elements per lane) into value[k], aux[k].
  template <class Op, class V>
  TAD_INLINE static void finish_lanes(const reduction_state<V>& s, std::size_t n, T* value, T* aux) {
    if constexpr (simd::is_batch_v<V>) {
      alignas(64) T la[simd::width<T>];
      alignas(64) T lb[simd::width<T>];
      s.a.store_aligned(la);
      s.b.store_aligned(lb);
      for (std::size_t k = 0; k < simd::width<T>; ++k) {
        const auto res = Op::finish(reduction_state<T>{la[k], lb[k]}, n);
        value[k] = res.value;
        aux[k] = res.aux;
      }
    } else {
      const auto res = Op::finish(s, n);
      *value = res.value;
      *aux = res.aux;
    }
  }

  /// A sweep of point S along axis 0 down the rows of its argument at NB batches of columns from
  /// column j (V one T: one column), each batch in its own accumulator a[u]: the lanes are
  /// columns. Forward: each column's value and auxiliary number, into lb (a shifted op,
  /// logsumexp, sweeps twice: the shift per column, then the shifted sum). Backward: each
  /// element's adjoint from its column's numbers in lb, added to the argument's gradients (a
  /// matrix variable's row r, a row vector's columns).
  template <pass_kind D, std::size_t S, class V, std::size_t NB, std::size_t L>
  TAD_INLINE void down_sweep(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb) {
    using Op = slot_op_t<S>;
    constexpr std::size_t In = P::info[S].nest;
    constexpr std::size_t WV = simd::is_batch_v<V> ? simd::width<T> : 1;
    const std::size_t rows = rows_[In], cols = cols_[In];
    auto to_row = [&](std::size_t r) TAD_INLINE_LAMBDA {
      rebase_rows<In, 0>(l.e, e_, r * cols, r);
      if constexpr (D == pass_kind::backward) {
        static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
          using Var = std::tuple_element_t<k.value, typename W::types>;
          if constexpr (Var::is_array && leaf_rank<Var>() == 2 && P::vars[S].test(k.value)) l.outs[k.value] = outs_[k.value] + r * cols;
        });
      }
    };
    if constexpr (D == pass_kind::forward) {
      if constexpr (requires { Op::shifted; }) {
        for (std::size_t u = 0; u < NB; ++u) a[u].fs[S] = lse_shift_op::template init<V>();
        for (std::size_t r = 0; r < rows; ++r) {
          to_row(r);
          static_for<NB>([&](auto u) TAD_INLINE_LAMBDA { point_step<D, S, V, true>(l, a[u.value], j + u.value * WV); });
        }
        for (std::size_t u = 0; u < NB; ++u) {
          T* shift = lb.aux[S].data() + u * WV;  // the shifts, until the second sweep's state holds them
          finish_lanes<lse_shift_op>(a[u].fs[S], rows, shift, lb.value[S].data() + u * WV);
          a[u].fs[S] = reduction_state<V>{simd::splat<V>(0), simd::load_any<V>(shift)};
        }
      } else {
        for (std::size_t u = 0; u < NB; ++u) a[u].fs[S] = Op::template init<V>();
      }
      for (std::size_t r = 0; r < rows; ++r) {
        to_row(r);
        static_for<NB>([&](auto u) TAD_INLINE_LAMBDA { point_step<D, S, V>(l, a[u.value], j + u.value * WV); });
      }
      for (std::size_t u = 0; u < NB; ++u)
        finish_lanes<Op>(a[u].fs[S], rows, lb.value[S].data() + u * WV, lb.aux[S].data() + u * WV);
    } else {
      std::array<lane_numbers, NB> ln;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
      for (std::size_t u = 0; u < NB; ++u)
        ln[u] = {lb.value[S].data() + u * WV, lb.aux[S].data() + u * WV, lb.adj[S].data() + u * WV, rows};
      for (std::size_t r = 0; r < rows; ++r) {
        to_row(r);
        static_for<NB>([&](auto u) TAD_INLINE_LAMBDA {
          point_step<D, S, V, false, false, true>(l, a[u.value], j + u.value * WV, &ln[u.value]);
        });
      }
    }
  }

  /// One block of NB batches of columns from column j (V one T: one column) of a nest whose code
  /// reads points along axis 0: their forward sweeps, the nest's own code at those columns (a
  /// vector nest: once; a matrix nest, where a point meets the matrix as a row: once per row),
  /// the points' adjoints per column, their backward sweeps.
  template <pass_kind K, int A, std::size_t N, class V, std::size_t NB, std::size_t L>
  TAD_INLINE void down_block(local& l, acc<V>* a, std::size_t j, lane_block<L>& lb) {
    constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
    constexpr int depth = K == pass_kind::backward ? A : 0;
    constexpr std::size_t WV = simd::is_batch_v<V> ? simd::width<T> : 1;
    static_for<NR>([&](auto S) {
      if constexpr (point_forward<K, A, N, S.value>()) down_sweep<pass_kind::forward, S.value, V, NB>(l, a, j, lb);
    });
    // The nest's own code: each point's values read from lb (a batch through the node's pointer,
    // one T from the context).
    auto own = [&]() TAD_INLINE_LAMBDA {
      static_for<NB>([&](auto u) TAD_INLINE_LAMBDA {
        static_for<NR>([&](auto S) TAD_INLINE_LAMBDA {
          if constexpr (point_forward<K, A, N, S.value>()) {
            if constexpr (simd::is_batch_v<V>) slot_ref<S.value>(l.e).op.rows = lb.value[S.value].data() + u.value * WV;
            else l.ctx.val[S.value] = lb.value[S.value][0];
          }
        });
        step<K, A, N>(l, a[u.value], j + u.value * WV);
      });
    };
    if constexpr (extents<E>::t.nest_row[N] == no_class) {
      l.ctx.n = cols_[N];  // what mean's rule reads in this code
      own();
    } else {
      const std::size_t rows = rows_[N], cols = cols_[N];
      l.ctx.n = rows * cols;
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t offset = r * cols;
        rebase_rows<N, 0>(l.e, e_, offset, r);
        static_for<NV>([&](auto k) TAD_INLINE_LAMBDA {
          if constexpr (bwd && is_array_k<k.value>() && !P::row_in(k.value, N) && touches_here(depth, k.value, N))
            l.outs[k.value] = outs_[k.value] + offset;
        });
        if constexpr (K == pass_kind::store) l.out = out_ + offset;
        own();
      }
    }
    if constexpr (bwd) {
      static_for<NR>([&](auto S) {
        if constexpr (point_backward<K, A, N, S.value>()) {
          for (std::size_t u = 0; u < NB; ++u) {
            simd::store_any(lb.adj[S.value].data() + u * WV, a[u].sk.red[S.value]);
            a[u].sk.red[S.value] = simd::splat<V>(0);
          }
        }
      });
      static_for<NR>([&](auto S) {
        if constexpr (point_backward<K, A, N, S.value>()) down_sweep<pass_kind::backward, S.value, V, NB>(l, a, j, lb);
      });
    }
  }

  /// Adds the accumulator o into a: reduction states merged, adjoint sums added (down_loop's
  /// TAD_DOWN_BATCHES accumulators into finish's U).
  template <class V>
  static void fold_acc(acc<V>& a, const acc<V>& o) {
    static_for<NR>([&](auto S) { slot_op_t<S.value>::merge(a.fs[S.value], o.fs[S.value]); });
    for (std::size_t k = 0; k < NV; ++k) a.sk.var[k] = a.sk.var[k] + o.sk.var[k];
    for (std::size_t k = 0; k < NR; ++k) a.sk.red[k] = a.sk.red[k] + o.sk.red[k];
    for (std::size_t k = 0; k < a.sk.inv.size(); ++k) a.sk.inv[k] = a.sk.inv[k] + o.sk.inv[k];
  }

  /// The loop of a nest whose code reads reductions along axis 0 (`sum(X, axis<0>)`, one value
  /// per column): over its columns in blocks of U batches, then single batches, then single
  /// columns (down_block). The lanes of a batch are columns, so each point's sweep down the rows
  /// of a block accumulates W columns at once in one register per batch, and the nest's code
  /// reads the block's values as a batch; a block's columns (rows x U W elements) are read once
  /// per sweep. Scalar variables' and loop invariants' adjoints sum over all blocks, as in loop().
  template <pass_kind K, int A, std::size_t N>
  void down_loop() {
    constexpr std::size_t W_ = simd::width<T>;
    const std::size_t cols = cols_[N];
    compute_invariants<K, A, N>();
    static_for<NR>([&](auto S) {
      if constexpr (point_forward<K, A, N, S.value>()) {
        auto eval_root = [&]<std::size_t SS, std::size_t R>(const auto& node) { ctx_.inv[R] = forward<T, SS>(node, ctx_, 0).v; };
        auto per_point = [&]<std::size_t PS>(const auto& red) {
          if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, eval_root);
        };
        visit_reductions<0>(e_, per_point);
      }
    });
    if constexpr (K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled)
      zero_fill<K == pass_kind::backward ? A : 0, N>();
    constexpr std::size_t DB = TAD_DOWN_BATCHES;
    std::array<acc<B>, DB> ab;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
    for (auto& a : ab) a = make_acc<B>();
    std::array<acc<T>, 1> at{make_acc<T>()};
    local l{e_, ctx_, {}, out_};
    for (std::size_t k = 0; k < NV; ++k) l.outs[k] = outs_[k];
    lane_block<DB * W_> lb{};
    std::size_t j = 0;
    for (; j + DB * W_ <= cols; j += DB * W_) down_block<K, A, N, B, DB>(l, ab.data(), j, lb);
    if constexpr (DB > 1) {
      for (; j + W_ <= cols; j += W_) down_block<K, A, N, B, 1>(l, ab.data(), j, lb);
    }
    for (; j < cols; ++j) down_block<K, A, N, T, 1>(l, at.data(), j, lb);
    if constexpr (K != pass_kind::store) {
      // finish merges U accumulators: fold the others into the first U (DB may be fewer).
      for (std::size_t u = U; u < DB; ++u) fold_acc(ab[u % U], ab[u]);
      std::array<acc<B>, U> first;  // NOLINT(cppcoreguidelines-pro-type-member-init): assigned below
      for (std::size_t u = 0; u < U; ++u) first[u] = u < DB ? ab[u] : make_acc<B>();
      finish<K, A, N>(first, at[0]);
      static_for<NR>([&](auto S) {
        if constexpr (point_backward<K, A, N, S.value>()) {
          auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
            if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
              B s = first[0].sk.inv[RR];
              for (std::size_t u = 1; u < U; ++u) s = s + first[u].sk.inv[RR];
              backward_scalar<SS>(node, simd::hsum(s) + at[0].sk.inv[RR]);
            }
          };
          auto per_point = [&]<std::size_t PS>(const auto& red) {
            if constexpr (PS == S.value) visit_roots<PS, P::info[PS].root_base>(red.arg, push);
          };
          visit_reductions<0>(e_, per_point);
        }
      });
    }
  }

  template <pass_kind K, int A, std::size_t N>
  void finish(std::array<acc<B>, U>& ab, acc<T>& at) {
    constexpr bool bwd = K == pass_kind::backward || K == pass_kind::fused || K == pass_kind::scaled;
    auto fin = [&]<std::size_t S>(const auto& r) {
      using R = std::remove_cvref_t<decltype(r)>;
      using Op = typename R::op_type;
      constexpr reduction_info I = P::info[S];
      if constexpr (forward_here<K, A, N>(I)) {
        for (std::size_t u = 1; u < U; ++u) Op::merge(ab[0].fs[S], ab[u].fs[S]);
        alignas(64) T la[simd::width<T>];
        alignas(64) T lb[simd::width<T>];
        ab[0].fs[S].a.store_aligned(la);
        ab[0].fs[S].b.store_aligned(lb);
        for (std::size_t k = 0; k < simd::width<T>; ++k) Op::merge(at.fs[S], reduction_state<T>{la[k], lb[k]});
        const auto res = Op::finish(at.fs[S], len<N>());
        ctx_.val[S] = res.value;
        ctx_.aux[S] = res.aux;
      }
      if constexpr (backward_here<K, A, N>(I) && !extents<E>::t.nest_columns[N]) {
        // Each loop invariant of the argument: its summed adjoint, propagated once (with
        // columns, once per row: finish_row).
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) {
            B s = ab[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
            if constexpr (K == pass_kind::scaled) stash_inv_[RR] += simd::hsum(s) + at.sk.inv[RR];
            else backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
          }
        };
        visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push);
      }
      if constexpr (backward_here<K, A, N>(I) && extents<E>::t.nest_columns[N]) {
        // With columns: the invariants without a column, once (finish_row took the others).
        auto push_free = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          using Node = std::remove_cvref_t<decltype(node)>;
          if constexpr (W::template reached<Node> && !props<Node>::has_column) {
            B s = ab[0].sk.inv[RR];
            for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.inv[RR];
            backward_scalar<SS>(node, simd::hsum(s) + at.sk.inv[RR]);
          }
        };
        visit_roots<S + 1 - props<R>::reductions, I.root_base>(r.arg, push_free);
      }
      if constexpr (bwd && I.wants) {
        B s = ab[0].sk.red[S];
        for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.red[S];
        (K == pass_kind::scaled ? stash_red_[S] : ctx_.adj[S]) += simd::hsum(s) + at.sk.red[S];
      }
    };
    visit_reductions<0>(e_, fin);
    if constexpr (bwd) {
      static_for<NV>([&](auto k) {
        if constexpr (!is_array_k<k.value>()) {
          B s = ab[0].sk.var[k.value];
          for (std::size_t u = 1; u < U; ++u) s = s + ab[u].sk.var[k.value];
          (K == pass_kind::scaled ? stash_var_[k.value] : scalar_grad_[k.value]) += simd::hsum(s) + at.sk.var[k.value];
        }
      });
    }
  }

  /// After a scaled pass: multiply what it produced with a unit adjoint by the true adjoint.
  void apply_scale() {
    constexpr std::size_t S0 = P::scaled_slot;
    const T a = ctx_.adj[S0];
    static_for<NV>([&](auto k) {
      if constexpr (!is_array_k<k.value>()) {
        if constexpr (P::vars[S0].test(k.value)) scalar_grad_[k.value] += a * stash_var_[k.value];
      } else if constexpr (P::touches(0, k.value)) {
        T* g = outs_[k.value];
        const std::size_t n = sizes_[k.value];
        const B va(a);
        std::size_t i = 0;
        for (; i + simd::width<T> <= n; i += simd::width<T>) simd::store(g + i, simd::load(g + i) * va);
        for (; i < n; ++i) g[i] *= a;
      }
    });
    for (std::size_t s = P::scaled_first; s < S0; ++s) ctx_.adj[s] += a * stash_red_[s];
    auto roots = [&]<std::size_t S>(const auto& r) {
      if constexpr (S == S0) {
        auto push = [&]<std::size_t SS, std::size_t RR>(const auto& node) {
          if constexpr (W::template reached<std::remove_cvref_t<decltype(node)>>) backward_scalar<SS>(node, a * stash_inv_[RR]);
        };
        visit_roots<S + 1 - props<std::remove_cvref_t<decltype(r)>>::reductions, P::info[S].root_base>(r.arg, push);
      }
    };
    visit_reductions<0>(e_, roots);
  }

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
};

}  // namespace tad::detail
