#pragma once
/// The evaluation schedule of an expression, derived at compile time from its reduction nodes.
///
/// Every reduction gets a slot (post-order), a level (1 + the deepest level inside its
/// argument) and a depth (how many reductions enclose it). Forward passes run per level; the
/// backward passes run per depth, outermost first. When the adjoints of the outermost
/// reductions do not depend on the values of the last level, that level's forward pass and the
/// first backward pass fuse into one loop. See doc/design.md.

#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/indexing.hpp>
#include <tad/eval/extents.hpp>
#include <tad/eval/slots.hpp>
#include <tad/ops/reduction_concepts.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// Does the gradient that reaches the outermost reductions of E stay independent of the values
/// of the level-L reductions? (Then those adjoints are known before the level-L loop runs.)
template <class E, int L, class W>
struct independent {
  template <class C>
  static constexpr bool has_level() {  // contains a level-L reduction, not looking inside reductions
    if constexpr (is_leaf_v<C>) return false;
    else if constexpr (props<C>::is_reduction) return props<C>::level == L;
    else return [] { bool r = false; static_for<C::arity>([&](auto k) { r = r || has_level<child_t<k.value, C>>(); }); return r; }();
  }
  template <class C>
  static constexpr bool has_grad_reduction() {  // a reduction that wants a gradient is inside
    if constexpr (is_leaf_v<C>) return false;
    else if constexpr (props<C>::is_reduction) return W::template reached<C>;
    else if constexpr (!op_differentiable<typename C::op_type>()) return false;
    else return [] {  // only below the children an adjoint flows into (a cut: adjoint_flows)
      bool r = false;
      static_for<C::arity>([&](auto k) { r = r || (adjoint_flows<C, k.value>::value && has_grad_reduction<child_t<k.value, C>>()); });
      return r;
    }();
  }
  template <class C>
  static constexpr bool check() {
    if constexpr (is_leaf_v<C> || props<C>::is_reduction) {
      return true;
    } else if constexpr (!op_differentiable<typename C::op_type>()) {
      return true;
    } else {
      bool kids = true, any_level = false, any_grad = false;
      static_for<C::arity>([&](auto k) {
        using K = child_t<k.value, C>;
        constexpr bool flows = adjoint_flows<C, k.value>::value;  // else K is below a cut
        kids = kids && (!flows || check<K>());
        any_level = any_level || has_level<K>();
        any_grad = any_grad || (flows && has_grad_reduction<K>());
      });
      constexpr linearity lin = op_linearity<typename C::op_type>();
      if constexpr (lin == linearity::additive) {
        return kids;
      } else if constexpr (lin == linearity::product) {
        using A = child_t<0, C>;
        using B = child_t<1, C>;
        return kids && (!has_grad_reduction<A>() || !has_level<B>()) &&
               (!has_grad_reduction<B>() || !has_level<A>());
      } else if constexpr (lin == linearity::quotient) {
        using A = child_t<0, C>;
        using B = child_t<1, C>;
        return kids && (!has_grad_reduction<A>() || !has_level<B>()) &&
               (!has_grad_reduction<B>() || (!has_level<A>() && !has_level<B>()));
      } else {
        return kids && (!any_grad || !any_level);
      }
    }
  }
  static constexpr bool value = check<E>();
};

/// Per leaf of E (from `base`, left to right): the position in W of the variable it is (a
/// column: its vector's), or W::size.
template <class W, class E>
constexpr void list_wrt(std::size_t* out, std::size_t base) {
  if constexpr (is_leaf_v<E>) {
    out[base] = W::size;
    if constexpr (E::is_variable) out[base] = W::template index<E::name>;
  } else {
    std::size_t b = base;
    static_for<E::arity>([&](auto k) {
      using C = child_t<k.value, E>;
      list_wrt<W, C>(out, b);
      b += leaf_count<C>();
    });
  }
}

/// The schedule of E for a gradient with respect to W.
template <class E, class W>
struct plan {
  static constexpr std::size_t reductions = props<E>::reductions;
  static constexpr int levels = props<E>::level;
  struct collected {
    std::array<reduction_info, reductions> info{};
    std::array<var_mask<W::size>, reductions> vars{};
  };
  static constexpr collected all = [] {
    collected c{};
    if constexpr (reductions > 0) collect<W, E>(c.info.data(), c.vars.data(), 0, 0);
    std::size_t base = 0;
    for (std::size_t s = 0; s < reductions; ++s) {
      c.info[s].root_base = base;
      base += c.info[s].roots;
      c.info[s].nest = extents<E>::t.region[s];
      c.info[s].outer_nest = c.info[s].point ? extents<E>::t.nest_of[extents<E>::leaves + s] : c.info[s].nest;
    }
    return c;
  }();
  static constexpr std::array<reduction_info, reductions> info = all.info;
  /// Nests (extents.hpp): one loop per nest that has something to do in a pass.
  static constexpr std::size_t nests = extents<E>::nests;
  /// The class of E itself (array-valued E: the loop that stores it).
  static constexpr std::size_t top_nest = extents<E>::t.region[extents<E>::top];
  /// vars[s]: the variables the argument of reduction s reaches directly (k-th of W).
  static constexpr std::array<var_mask<W::size>, reductions> vars = all.vars;
  /// Loop invariant slots: those of the reductions' arguments, then those of E itself (for
  /// evaluating an array expression).
  static constexpr std::size_t reduction_roots = [] {
    std::size_t n = 0;
    for (const auto& r : info) n += r.roots;
    return n;
  }();
  static constexpr std::size_t invariants = reduction_roots + (props<E>::is_array ? props<E>::roots : 0);
  static constexpr bool wants_depth(int d) {
    for (const auto& r : info) if (r.depth == d && r.wants) return true;
    return false;
  }
  static constexpr int max_depth = [] {
    int d = -1;
    for (const auto& r : info) if (r.wants && r.depth > d) d = r.depth;
    return d;
  }();
  static constexpr bool fused = [] {
    if constexpr (levels == 0) {
      return false;
    } else {
      for (const auto& r : info) if (r.level == levels && r.wants && r.needs_value) return false;
      return independent<E, levels, W>::value && wants_depth(0);
    }
  }();
  /// When the one outermost reduction that needs a gradient is a sum or mean of the last level
  /// whose adjoint needs its value (`log(sum(exp(x)))`), its forward loop also runs the backward
  /// pass with a unit adjoint, writing the gradients, and a later loop scales them by the true
  /// adjoint: no element is recomputed. `scaled_slot` is that reduction.
  static constexpr std::size_t scaled_slot = [] {
    std::size_t slot = reductions, count = 0;
    for (std::size_t s = 0; s < reductions; ++s) {
      const auto& r = info[s];
      if (r.depth == 0 && r.wants) {
        if (r.level != levels || r.needs_value || !r.adjoint_linear) return reductions;
        slot = s;
        ++count;
      }
    }
    return count == 1 ? slot : reductions;
  }();
  /// Is axis point s the only writer of the k-th variable's gradient in the first pass that
  /// writes it (a matrix variable that nothing but s's sweeps writes there)? Each element is
  /// then written once, by s's backward sweep of its row (axis 0: its column block), which
  /// stores instead of adding, and nothing zero-fills the gradient first. Not a pick's: its
  /// sweep writes one element per row, so the others must be zeroed (zero_fills).
  static constexpr bool point_stores(std::size_t s, std::size_t k) {
    const reduction_info& r = info[s];
    if (!r.point || r.sparse || !r.wants || !vars[s].test(k) || stashed(k)) return false;
    const int d = r.depth;
    const std::size_t n = r.outer_nest;
    if (first_touch(k) != d || first_touch_nest(k) != n || touches_own(d, k, n) || row_in(k, n)) return false;
    for (std::size_t o = 0; o < reductions; ++o)
      if (o != s && info[o].point && info[o].outer_nest == n && info[o].depth == d && info[o].wants && vars[o].test(k))
        return false;
    bool matrix = false;
    static_for<W::size>([&](auto j) {
      using Var = std::tuple_element_t<j.value, typename W::types>;
      if (j.value == k) matrix = Var::is_array && leaf_rank<Var>() == 2;
    });
    return matrix;
  }
  /// Does E hold a column anywhere?
  static constexpr bool has_columns = extents<E>::has_columns;
  /// Does E hold an axis point (sum(X, axis<1>))?
  static constexpr bool has_points = extents<E>::has_points;
  /// ... or a column point (as_column(sum(X, axis<1>))), which may share its argument's nest?
  static constexpr bool has_points_anywhere = [] {
    for (const auto& r : info) if (r.point) return true;
    return false;
  }();
  /// Not with columns: a column variable's gradient and a column's loop invariants are
  /// per row, which the scaled pass would have to stash per row (decisions.md 25); not with axis
  /// points either (their per-row adjoints would be stashed likewise).
  static constexpr bool scaled = !fused && levels > 0 && scaled_slot < reductions && !has_columns && !has_points;
  /// The reductions inside the scaled reduction's argument are the slots
  /// [scaled_first, scaled_slot) (post-order): only their adjoints, and only the scalar
  /// variables in vars[scaled_slot], receive something from the scaled pass. The others
  /// are left alone, not scaled by a zero stash (the adjoint may be inf or NaN: inf * 0).
  static constexpr std::size_t scaled_first = [] {
    std::size_t s = scaled_slot < reductions ? scaled_slot : 0;
    while (s > 0 && info[s - 1].depth > 0) --s;
    return s;
  }();
  /// Does the backward pass at depth d touch the k-th variable's array gradient?
  static constexpr bool touches(int d, std::size_t k) {
    for (std::size_t s = 0; s < reductions; ++s) {
      if (info[s].depth == d && info[s].wants && vars[s].test(k)) return true;
    }
    return false;
  }
  /// Does the backward pass at depth d, in its loop over nest n, touch the k-th variable's
  /// array gradient? (Without broadcasting a variable lives in one nest; a vector broadcast
  /// across a matrix's rows is also touched by that matrix's row nest.)
  /// An axis point's writes count for the loop that runs its sweeps (its parent's nest).
  static constexpr bool touches_in(int d, std::size_t k, std::size_t n) {
    for (std::size_t s = 0; s < reductions; ++s) {
      if (info[s].outer_nest == n && info[s].depth == d && info[s].wants && vars[s].test(k)) return true;
    }
    return false;
  }
  /// ... through the elementwise code of that loop itself (not an axis point's sweeps)?
  static constexpr bool touches_own(int d, std::size_t k, std::size_t n) {
    for (std::size_t s = 0; s < reductions; ++s) {
      if (!info[s].point && info[s].nest == n && info[s].depth == d && info[s].wants && vars[s].test(k)) return true;
    }
    return false;
  }
  /// ... through the sweeps of an axis point of nest n?
  static constexpr bool point_writes(int d, std::size_t k, std::size_t n) {
    for (std::size_t s = 0; s < reductions; ++s) {
      if (info[s].point && info[s].outer_nest == n && info[s].depth == d && info[s].wants && vars[s].test(k)) return true;
    }
    return false;
  }
  /// Per leaf of E: the position in W of the variable it is (W::size: none).
  static constexpr std::array<std::size_t, leaf_count<E>()> wrt_of = [] {
    std::array<std::size_t, leaf_count<E>()> r{};
    list_wrt<W, E>(r.data(), 0);
    return r;
  }();
  /// Per reduction slot s: the variable (k-th of W; W::size: none) whose gradient the sweeps of
  /// axis point s use as their store between the forward and the backward sweep of a row. A
  /// row-wise logsumexp whose argument is a matrix variable X itself, and X's only leaf in E,
  /// keeps its row's terms exp(x - shift) in X's gradient row during the forward sweep and
  /// scales them by one number per row in the backward sweep, as a hand-written loop does: one
  /// exponential per element instead of two, and no zero fill (zero_fills). Nothing else
  /// writes that gradient, and the gradient is written anyway: no extra storage.
  static constexpr std::array<std::size_t, reductions> stash_var = [] {
    std::array<std::size_t, reductions> r{};
    static_for<reductions>([&](auto s) {
      r[s.value] = W::size;
      using R = slot_node_t<E, s.value>;
      using Op = typename R::op_type;
      using Arg = std::remove_cvref_t<decltype(std::declval<const R&>().arg)>;
      if constexpr (shifted_reduction<Op> && props<R>::is_point && !props<R>::is_column_point && is_leaf_v<Arg> &&
                    point_axis<Op>() == 1) {
        if constexpr (Arg::is_variable && Arg::is_array) {
          constexpr std::size_t k = W::template index<Arg::name>;
          std::size_t uses = 0;
          for (std::size_t w : wrt_of) uses += w == k ? 1 : 0;
          if (k < W::size && uses == 1 && info[s.value].wants && vars[s.value].test(k)) r[s.value] = k;
        }
      }
    });
    return r;
  }();
  /// Is the k-th variable's gradient an axis point's store (stash_var)?
  static constexpr bool stashed(std::size_t k) {
    for (std::size_t v : stash_var) if (v == k) return true;
    return false;
  }
  /// Is the k-th variable a vector in row nest n: a row, read (and its gradient summed) once
  /// per matrix row? (Not a column: as_column(v).)
  static constexpr bool row_in(std::size_t k, std::size_t n) {
    if (!extents<E>::t.nest_rows[n]) return false;
    const auto& t = extents<E>::t;
    for (std::size_t i = 0; i < wrt_of.size(); ++i)
      if (wrt_of[i] == k && t.nest_of[i] == n && !t.column[i] && t.row[i] == no_class && t.col[i] != no_class) return true;
    return false;
  }
  /// Is the k-th variable a column (as_column) in nest n: one value per row, its gradient a
  /// per-row sum?
  static constexpr bool column_in(std::size_t k, std::size_t n) {
    const auto& t = extents<E>::t;
    for (std::size_t i = 0; i < wrt_of.size(); ++i)
      if (wrt_of[i] == k && t.nest_of[i] == n && t.column[i]) return true;
    return false;
  }
  /// Does the loop of pass K, level or depth A, over nest N run at all?
  template <pass_kind K, int A>
  static constexpr bool runs(std::size_t nest) {
    if constexpr (K == pass_kind::store) {
      return nest == top_nest;
    } else {
      for (const auto& r : info) if (r.nest == nest && (forward_in<K, A>(r) || backward_in<K, A>(r))) return true;
      return false;
    }
  }
  template <pass_kind K, int A>
  static constexpr int loops_in() {
    int p = 0;
    for (std::size_t n = 0; n < nests; ++n) p += runs<K, A>(n) ? 1 : 0;
    return p;
  }
  /// The first backward pass that writes the k-th variable's gradient (-1: none does).
  static constexpr int first_touch(std::size_t k) {
    for (int d = 0; d <= max_depth; ++d) if (touches(d, k)) return d;
    return -1;
  }
  /// In that pass, the first nest whose loop writes it (the loops of a pass run in nest order).
  static constexpr std::size_t first_touch_nest(std::size_t k) {
    const int d = first_touch(k);
    for (std::size_t n = 0; n < nests; ++n) if (d >= 0 && touches_in(d, k, n)) return n;
    return nests;
  }
  /// The gradient write order, in one place: how the k-th variable's gradient is first written.
  /// Every write after the first adds. The passes run backward at depth 0, 1, ... and within a
  /// pass the loops run in nest order, so the first write is in the first pass that touches the
  /// variable (first_touch) and, in it, the first nest that does (first_touch_nest); that loop
  /// writes it in one of these ways (the first that applies):
  ///   1. stash: an axis point keeps its terms there between its sweeps (stash_var);
  ///   2. point_store: one axis point's backward sweeps are its only writers there and store
  ///      each element once (point_stores);
  ///   3. store: the loop's own elementwise code stores each element once: the variable is not
  ///      a row (a row vector is written once per matrix row) and no axis point's sweeps write
  ///      it there, or they do but in a row nest (column points), whose own code runs first;
  ///   4. zero_fill: the loop zeroes it, then every writer adds (a row vector, or several
  ///      sweeps of one row).
  /// No pass writes it: none (store_gradients fills it with zeros).
  ///   5. add (adding_wrt_list): every write adds to what the buffer holds (no fill either).
  enum class first_write { none, stash, point_store, store, zero_fill, add };
  struct write_plan {
    first_write how = first_write::none;
    int depth = -1;            // the backward pass of the first write
    std::size_t nest = 0;      // its loop's nest
    std::size_t point = 0;     // point_store: the axis point's slot
  };
  static constexpr write_plan write_plan_of(std::size_t k) {
    const int d = first_touch(k);
    if (d < 0) return {};
    const std::size_t n = first_touch_nest(k);
    if (W::adds(k)) return {first_write::add, d, n, 0};  // (can_add: no stash, no scaled pass)
    if (stashed(k)) return {first_write::stash, d, n, 0};
    for (std::size_t s = 0; s < reductions; ++s)
      if (point_stores(s, k)) return {first_write::point_store, d, n, s};
    if (!row_in(k, n) && (!point_writes(d, k, n) || (extents<E>::t.kind[n] != nest_kind::points && touches_own(d, k, n))))
      return {first_write::store, d, n, 0};
    return {first_write::zero_fill, d, n, 0};
  }
  static constexpr std::array<write_plan, W::size> writes = [] {
    std::array<write_plan, W::size> r{};
    for (std::size_t k = 0; k < W::size; ++k) r[k] = write_plan_of(k);
    return r;
  }();
  /// Can every gradient that W adds be added (no axis point keeps its terms in that buffer, no
  /// scaled pass multiplies it after its loop wrote it)?
  static constexpr bool can_add = [] {
    for (std::size_t k = 0; k < W::size; ++k)
      if (W::adds(k) && (stashed(k) || scaled)) return false;
    return true;
  }();
  /// Does the loop over nest n of the backward pass at depth d store the k-th variable's
  /// gradient (its first write of every element, by its own code) rather than add to it?
  static constexpr bool stores(int d, std::size_t k, std::size_t n) {
    return writes[k].how == first_write::store && writes[k].depth == d && writes[k].nest == n;
  }
  /// ... or must it zero the gradient before it adds to it?
  static constexpr bool zero_fills(int d, std::size_t k, std::size_t n) {
    return writes[k].how == first_write::zero_fill && writes[k].depth == d && writes[k].nest == n;
  }
  static constexpr bool rejects_empty = [] {
    for (const auto& r : info) if (r.rejects_empty) return true;
    return false;
  }();
  /// Number of loops over the data one gradient evaluation runs (one per pass and extent class).
  static constexpr int passes = [] {
    if constexpr (levels == 0) {
      return 0;
    } else {
      int p = 0;
      static_for<levels - 1>([&](auto l) { p += loops_in<pass_kind::forward, static_cast<int>(l.value) + 1>(); });
      if constexpr (fused) p += loops_in<pass_kind::fused, levels>();
      else if constexpr (scaled) p += loops_in<pass_kind::scaled, levels>();
      else p += loops_in<pass_kind::forward, levels>();
      static_for<max_depth + 1>([&](auto d) {
        if (d.value > 0 || !(fused || scaled)) p += loops_in<pass_kind::backward, static_cast<int>(d.value)>();
      });
      if (scaled) {  // the loop that scales the array gradients
        for (std::size_t k = 0; k < W::size; ++k) if (touches(0, k)) return p + 1;
      }
      return p;
    }
  }();
};

}  // namespace tad::detail
