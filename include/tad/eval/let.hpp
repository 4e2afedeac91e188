#pragma once
/// How the engine evaluates lets (`tad::let<"z">(e)`, core/let.hpp): per region, one value and
/// one summed adjoint per let name. A region is code that runs together: the scalar code above
/// the loops (`engine::top`), the argument of one reduction per element (`engine::step`), or one
/// loop invariant pushed after its loop (`engine::backward_scalar`). In a region, `with_lets`
/// evaluates the bodies of its lets (inner lets first) into an environment, runs the region's
/// code, in which every occurrence reads the environment (`forward`) and adds its adjoint to
/// the let's accumulator (`backward`), and then runs the bodies' backward rules in reverse
/// order, each once, on its summed adjoint. Expressions without lets never instantiate any of
/// this (doc/design.md, "Lets").

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/let.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/contract.hpp>
#include <tad/eval/elementwise.hpp>
#include <tad/eval/plan.hpp>
#include <tad/simd/batch.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace tad::detail {

/// The engine's context (`context`, eval/engine/state.hpp) seen through references, plus the values of
/// the region's lets: what forward reads for an occurrence.
template <class Ctx, class V, class Lets>
struct let_context {
  using value_type = typename Ctx::value_type;
  using wrt = typename Ctx::wrt;
  using lets = Lets;
  const decltype(Ctx::wval)& wval;
  const decltype(Ctx::val)& val;
  const decltype(Ctx::aux)& aux;
  const decltype(Ctx::adj)& adj;
  const decltype(Ctx::inv)& inv;
  const std::size_t& n;
  std::array<V, Lets::size>& env;
  template <class E>
  static constexpr bool has_let = Lets::template contains<E>;
  template <class E>
  TAD_INLINE constexpr const V& let_value() const {
    return env[Lets::template index<E::op_type::let_name>];
  }
};
template <class V, class Lets, class Ctx>
TAD_INLINE constexpr let_context<Ctx, V, Lets> make_let_context(const Ctx& c, std::array<V, Lets::size>& env) {
  return {c.wval, c.val, c.aux, c.adj, c.inv, c.n, env};
}

/// A sink (eval/engine/state.hpp) with one adjoint accumulator per let of the region: an occurrence's
/// backward adds there instead of running the body's rule.
template <class Sink, class V, class Lets>
struct let_sink {
  static constexpr bool defers = Sink::defers;
  template <class E>
  static constexpr bool wants = Sink::template wants<E>;
  template <class E>
  static constexpr bool has_let = Lets::template contains<E>;
  Sink& base;
  std::array<V, Lets::size> let;
  template <class Leaf, class D>
  TAD_INLINE constexpr void add_var(const D& dy) {
    base.template add_var<Leaf>(dy);
  }
  template <std::size_t S, class D>
  TAD_INLINE constexpr void add_reduction(const D& dy) {
    base.template add_reduction<S>(dy);
  }
  template <std::size_t R, class D>
  TAD_INLINE constexpr void add_invariant(const D& dy) {
    base.template add_invariant<R>(dy);
  }
  template <class E, class D>
  TAD_INLINE constexpr void add_let(const D& dy) {
    auto& a = let[Lets::template index<E::op_type::let_name>];
    a = accumulate_adjoint(a, dy);
  }
};
template <class V, class Lets, class Sink>
TAD_INLINE constexpr let_sink<Sink, V, Lets> make_let_sink(Sink& s) {
  let_sink<Sink, V, Lets> r{s, {}};
  for (auto& a : r.let) a = simd::splat<V>(0);
  return r;
}

/// Does E contain the let L in the code of its region (not inside a reduction; at
/// site::loop, not inside a loop invariant)?
template <class E, class L, site At>
constexpr bool region_has_let() {
  return region_lets_t<E, At>::template index<L::op_type::let_name> < region_lets_t<E, At>::size;
}

/// Calls `f.template operator()<Slot, Root>(node)` on the first occurrence of the let L in the
/// region code of e (which has one), with its reduction and invariant slots.
template <class L, site At, std::size_t Slot, std::size_t Root, class E, class F>
TAD_INLINE constexpr void visit_first_let(const E& e, F& f) {
  if constexpr (std::is_same_v<E, L>) {
    f.template operator()<Slot, Root>(e);
  } else {
    constexpr std::size_t k = [] {
      std::size_t r = E::arity;
      static_for<E::arity>([&](auto j) {
        if (r == E::arity && region_has_let<child_t<j.value, E>, L, At>()) r = j.value;
      });
      return r;
    }();
    visit_first_let<L, At, child_slot<E, k, Slot>(), child_root<E, k, Root>()>(child<k>(e), f);
  }
}

/// Whether with_lets runs the lets' backward rules after the region's code: a backward pass
/// does (run), a forward-only pass does not (skip).
enum class let_rules : bool { skip, run };

/// let_rules::run where `backward` (a constexpr test of the pass), else skip.
constexpr let_rules let_rules_if(bool backward) { return backward ? let_rules::run : let_rules::skip; }

/// Evaluates the K-th and later lets of the region code e, runs main(), then (Rules == run)
/// the lets' backward rules on their summed adjoints in ls, last let first.
template <std::size_t K, let_rules Rules, site At, class V, std::size_t Slot, std::size_t Root, class E,
          class LC, class LS, class Main>
TAD_INLINE constexpr void with_lets(const E& e, const LC& lc, std::size_t i, LS& ls, Main& main) {
  using Lets = typename LC::lets;
  if constexpr (K == Lets::size) {
    main();
  } else {
    using L = typename Lets::template at<K>;
    auto body = [&]<std::size_t S, std::size_t R>(const L& node) TAD_INLINE_LAMBDA {
      const auto t = forward<V, S, R, At>(node.arg, lc, i);
      lc.env[K] = t.v;
      with_lets<K + 1, Rules, At, V, Slot, Root>(e, lc, i, ls, main);
      if constexpr (Rules == let_rules::run && LS::template wants<L>) backward<S, R>(node.arg, t, ls.let[K], ls);
    };
    visit_first_let<L, At, Slot, Root>(e, body);
  }
}

/// Regions of the occurrences of the let named Name in E: throws (at compile time) nothing,
/// records whether two occurrences sit in different regions.
struct region_walk {
  int next = 1;
  int first = -1;
  bool several = false;
};
template <fixed_string Name, class E>
constexpr void walk_regions(region_walk& w, int region, bool in_loop) {
  if constexpr (!is_leaf_v<E>) {
    int r = region;
    bool loop = in_loop;
    if constexpr (props<E>::is_reduction) {
      r = w.next++;
      loop = true;
    } else if constexpr (props<E>::is_root) {
      if (in_loop) {
        r = w.next++;
        loop = false;
      }
    }
    if constexpr (is_let_node_v<E>) {
      if constexpr (same_name<E::op_type::let_name, Name>) {
        if (w.first < 0) w.first = r;
        else if (w.first != r) w.several = true;
      }
    }
    static_for<E::arity>([&](auto k) { walk_regions<Name, child_t<k.value, E>>(w, r, loop); });
  }
}

/// Where the occurrences of the let named Name sit in E: per reduction slot, in the region code
/// of its argument (`slot`), or elsewhere (`other`: the scalar code above the loops, a loop
/// invariant, the argument of a reduction along an axis).
template <std::size_t NR>
struct let_places {
  std::array<bool, NR + 1> slot{};
  bool other = false;
};
template <fixed_string Name, class E, std::size_t Slot, std::size_t NR>
constexpr void walk_places(let_places<NR>& p, std::size_t region, bool elsewhere) {
  if constexpr (!is_leaf_v<E>) {
    std::size_t r = region;
    bool other = elsewhere;
    if constexpr (props<E>::is_reduction) {
      r = Slot + props<E>::reductions - 1;
      other = props<E>::is_point;
    } else if constexpr (props<E>::is_root) {
      if (region != NR) other = true;  // a loop invariant
    }
    if constexpr (is_let_node_v<E>) {
      if constexpr (same_name<E::op_type::let_name, Name>) {
        if (r == NR || other) p.other = true;
        else p.slot[r] = true;
      }
    }
    static_for<E::arity>([&](auto k) { walk_places<Name, child_t<k.value, E>, child_slot<E, k.value, Slot>()>(p, r, other); });
  }
}

/// Does E hold a reduction along an axis?
template <class E>
constexpr bool holds_point() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else {
    bool any = props<E>::is_point;
    static_for<E::arity>([&](auto k) { any = any || holds_point<child_t<k.value, E>>(); });
    return any;
  }
}

}  // namespace tad::detail
