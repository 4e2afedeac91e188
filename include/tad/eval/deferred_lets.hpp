#pragma once
/// Lets whose rule is not linear in the adjoint, used in several regions (doc/design.md, "Lets
/// across loops"): which ones the engine defers and where their rules run (deferred_let,
/// let_deferral), the accumulators and with_lets_x that carry their adjoints, and the compile
/// error for those it cannot share (check_lets). The regions themselves: eval/let.hpp.

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/elementwise.hpp>
#include <tad/eval/let.hpp>
#include <tad/eval/plan.hpp>
#include <tad/simd/batch.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace tad::detail {

/// A let whose body has a rule not linear in the adjoint, used in the arguments of several
/// reductions (`sum(f(c)) + max(g(c))`, `zc - mean(zc)`): its rule must run once per element on
/// the adjoint summed over all of them, but they push their adjoints in their own backward
/// passes. Such a let is *deferred* (doc/design.md, "Lets across loops"): in the deepest
/// backward pass that reaches one of its occurrences (`depth`), the loop over their common nest
/// recomputes the contributions of the occurrences whose passes ran earlier (their reductions'
/// adjoints are known by then), adds those of its own, and runs the rule once; the earlier
/// passes drop theirs. The rule's adjoint goes to the copy of the body in one reduction of that
/// pass (`owner`), including what its reductions receive: every copy computes the same value.
/// Supported (`ok`) when every occurrence is in the code of a whole-array reduction's argument,
/// all of one nest without columns, the body holds no let, and no argument recomputed in the
/// last pass holds a reduction along an axis; otherwise a compile error (check_lets).
template <class E, class W, class L>
struct deferred_let {
  using P = plan<E, W>;
  static constexpr std::size_t NR = P::reductions;
  static constexpr let_places<NR> places = [] {
    let_places<NR> p{};
    walk_places<L::op_type::let_name, E, 0, NR>(p, NR, false);
    return p;
  }();
  using body = std::remove_cvref_t<decltype(std::declval<const L&>().arg)>;
  static constexpr bool linear = adjoint_linear<L>();
  /// Used in more than one region (walk_regions: a reduction's argument, the scalar code, a
  /// loop invariant).
  static constexpr bool several = [] {
    region_walk w{};
    walk_regions<L::op_type::let_name, E>(w, 0, false);
    return w.several;
  }();
  /// The nest of its reductions (no_class: none, or more than one).
  static constexpr std::size_t nest = [] {
    std::size_t n = no_class;
    for (std::size_t s = 0; s < NR; ++s) {
      if (!places.slot[s]) continue;
      if (n != no_class && n != P::info[s].nest) return no_class;
      n = P::info[s].nest;
    }
    return n;
  }();
  static constexpr bool deferred = several && !linear;
  /// The backward pass whose loop runs the rule: the deepest of a reduction holding an
  /// occurrence that wants a gradient (-1: none does).
  static constexpr int depth = [] {
    int d = -1;
    for (std::size_t s = 0; s < NR; ++s)
      if (places.slot[s] && P::info[s].wants && P::info[s].depth > d) d = P::info[s].depth;
    return d;
  }();
  /// Does an argument recomputed in that pass (its reduction's pass ran earlier) hold a
  /// reduction along an axis? Its values exist only in the loop that sweeps it.
  static constexpr bool recomputes_points = [] {
    bool any = false;
    static_for<NR>([&](auto s) {
      if (places.slot[s.value] && P::info[s.value].wants && P::info[s.value].depth < depth)
        any = any || holds_point<std::remove_cvref_t<decltype(std::declval<const slot_node_t<E, s.value>&>().arg)>>();
    });
    return any;
  }();
  /// Every occurrence in the scalar code above the loops or in a loop invariant (none in a
  /// reduction's code per element), the body a scalar holding no reduction and no let: the
  /// rule runs once, at the end of the run, on the adjoints every region added
  /// (engine::scalar_deferred_rules; doc/design.md "Lets across loops").
  static constexpr bool scalar = [] {
    for (std::size_t s = 0; s < NR; ++s)
      if (places.slot[s]) return false;
    return props<body>::rank == 0 && props<body>::reductions == 0 && !has_lets_v<body>;
  }();
  static constexpr bool ok = !deferred || scalar || (!places.other && nest < P::nests && !extents<E>::t.nest_columns[nest] &&
                                           !extents<E>::t.nest_column_points[nest] && !has_lets_v<body> &&
                                           !recomputes_points);
  /// The reduction holding an occurrence whose backward runs in that pass (the first one).
  static constexpr std::size_t owner = [] {
    for (std::size_t s = 0; s < NR; ++s)
      if (places.slot[s] && P::info[s].wants && P::info[s].depth == depth) return s;
    return NR;
  }();
  /// Does reduction s hold an occurrence?
  static constexpr bool in(std::size_t s) { return places.slot[s]; }
};

/// What with_lets_x does with the summed adjoint of a let in a region: runs the body's rule
/// there (run_rule), adds it to the accumulator of that let whose rule runs later
/// (accumulate), or drops it (drop: another pass or call brings it).
enum class let_adjoint { run_rule, accumulate, drop };

/// Which run of a loop's region with_lets_x is in: a pass at its depth (pass) or a region
/// recomputed for a deferred let's rule (recomputed).
enum class region_run : bool { pass, recomputed };

/// The let_adjoint of each let in a loop's region: a deferred let's adjoint is accumulated in
/// the pass that runs its rule (its depth) and in a recomputed region, and dropped in an
/// earlier pass; other lets run their rule.
template <class E, class W, int Depth, region_run Run>
struct defer_mode {
  template <class L>
  static constexpr let_adjoint mode = [] {
    if constexpr (!deferred_let<E, W, L>::deferred) return let_adjoint::run_rule;
    else if constexpr (Run == region_run::recomputed || deferred_let<E, W, L>::depth == Depth) return let_adjoint::accumulate;
    else return let_adjoint::drop;
  }();
};

/// Whether a call of top() keeps the scalar variables' gradients (keep: top(true)) or only the
/// reductions' adjoints (drop: top(false)).
enum class scalar_grads : bool { drop, keep };

/// The let_adjoint of each let in top_lets' and backward_scalar_lets' regions: a deferred let's
/// (deferred_let::scalar: no other deferred let can be there) is accumulated in the engine's
/// accumulator, or dropped by top(false) (its rule reaches only scalar variables, whose
/// gradients that call does not keep); other lets run their rule.
template <class E, class W, scalar_grads Grads>
struct scalar_defer_mode {
  template <class L>
  static constexpr let_adjoint mode = !deferred_let<E, W, L>::deferred ? let_adjoint::run_rule
                                      : Grads == scalar_grads::keep    ? let_adjoint::accumulate
                                                                       : let_adjoint::drop;
};

/// The deferred lets of E, as the engine's loops ask about them.
template <class E, class W>
struct let_deferral {
  using P = plan<E, W>;
  using all_lets = std::conditional_t<has_lets_v<E>, lets_of_t<E>, let_list<>>;
  template <class F>
  static constexpr bool any_let(F f) {
    bool any = false;
    static_for<all_lets::size>([&](auto k) { any = any || f.template operator()<deferred_let<E, W, typename all_lets::template at<k.value>>>(); });
    return any;
  }
  /// Does E hold a let deferred across loops (its rule in a loop)?
  static constexpr bool has_deferred = any_let([]<class D>() { return D::deferred && !D::scalar; });
  /// ... one deferred to the end of the run (deferred_let::scalar)?
  static constexpr bool has_scalar_deferred = any_let([]<class D>() { return D::deferred && D::scalar; });
  /// Does the backward loop of depth D over nest N run the rule of a deferred let?
  template <int D, std::size_t N>
  static constexpr bool finalizes = any_let([]<class L>() { return L::deferred && L::depth == D && L::nest == N; });
  /// Does it recompute the argument of reduction S for one (S holds it and ran backward earlier)?
  template <int D, std::size_t N, std::size_t S>
  static constexpr bool recomputes = any_let([]<class L>() {
    return L::deferred && L::depth == D && L::nest == N && L::in(S) && P::info[S].wants && P::info[S].depth < D;
  });
  /// Does the argument of reduction S hold a deferred let?
  template <std::size_t S>
  static constexpr bool holds_deferred = any_let([]<class L>() { return L::deferred && L::in(S); });
};

/// The adjoints of the deferred lets of a loop's element, one per let of E (Lets).
template <class V, class Lets>
struct deferred_acc {
  std::array<V, Lets::size> adj;
  template <class L, class D>
  TAD_INLINE constexpr void add(const D& dy) {
    auto& a = adj[Lets::template index<L::op_type::let_name>];
    a = accumulate_adjoint(a, dy);
  }
};

/// with_lets for a backward pass over code that holds deferred lets (deferred_let): as
/// with_lets with let_rules::run, except that what happens to each let's summed adjoint is Mode's choice,
/// and exported adjoints go to x.
template <std::size_t K, class Mode, site At, class V, std::size_t Slot, std::size_t Root, class E,
          class LC, class LS, class Main, class X>
TAD_INLINE constexpr void with_lets_x(const E& e, const LC& lc, std::size_t i, LS& ls, Main& main, X& x) {
  using Lets = typename LC::lets;
  if constexpr (K == Lets::size) {
    main();
  } else {
    using L = typename Lets::template at<K>;
    auto body = [&]<std::size_t S, std::size_t R>(const L& node) TAD_INLINE_LAMBDA {
      const auto t = forward<V, S, R, At>(node.arg, lc, i);
      lc.env[K] = t.v;
      with_lets_x<K + 1, Mode, At, V, Slot, Root>(e, lc, i, ls, main, x);
      if constexpr (LS::template wants<L>) {
        constexpr let_adjoint m = Mode::template mode<L>;
        if constexpr (m == let_adjoint::run_rule) backward<S, R>(node.arg, t, ls.let[K], ls);
        else if constexpr (m == let_adjoint::accumulate) x.template add<L>(ls.let[K]);
      }
    };
    visit_first_let<L, At, Slot, Root>(e, body);
  }
}

/// The first let of E used in two regions whose body has a rule not linear in the adjoint
/// and that cannot be deferred (deferred_let::ok): its index in lets_of_t<E>, or the list's size.
template <class E, class W>
struct lets_across_loops {
  template <class List>
  struct scan;
  template <class... L>
  struct scan<let_list<L...>> {
    static constexpr std::size_t value = [] {
      std::size_t k = 0, found = sizeof...(L);
      auto one = [&]<class X>() {
        if (found == sizeof...(L) && !deferred_let<E, W, X>::ok) found = k;
        ++k;
      };
      (one.template operator()<L>(), ...);
      return found;
    }();
  };
  using lets = lets_of_t<E>;
  static constexpr std::size_t index = scan<lets>::value;
  static constexpr bool ok = index == lets::size;
};

template <class Name>
constexpr void report_let_across_loops() {
  static_assert(always_false<Name>,
                "tad::let<name>(e): a let whose body has a gradient rule not linear in the adjoint "
                "(clip_gradient, custom_gradient, an overridden op) is used in more than one loop "
                "or loop invariant, or both in a loop and in the scalar code above it; this is "
                "supported only where every use is in the argument of a reduction of the whole "
                "array (sum, mean, max, ...) over arrays of one shape, the let's body holds no "
                "other let, and a reduction along an axis is met only by uses whose gradients "
                "are pushed in one pass; or where the let is a scalar of scalars (no reduction, "
                "no let in its body) used only in the scalar code and in loop invariants (the "
                "scalar parts of reductions' arguments); not a mix of the two");
}

/// Called by the engine for an expression with lets: one compile error for a let it cannot share.
template <class E, class W>
constexpr void check_lets() {
  using Across = lets_across_loops<E, W>;
  if constexpr (!Across::ok) report_let_across_loops<let_name_type_t<typename Across::lets::template at<Across::index>>>();
}

}  // namespace tad::detail
