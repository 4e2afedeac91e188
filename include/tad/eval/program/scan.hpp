#pragma once
/// tad::program's scans (ops/scan.hpp; doc/loops.md, decisions.md 63). A scan is a stage: its
/// value (the last carry, or every carry) is a buffer of the workspace that the expression
/// around it reads as a leaf, and its adjoint a buffer the engine writes. Its body is a subtree
/// of the expression, planned once (its products' buffers, for the carry's and input's shapes)
/// and run at each step on a copy of it whose placeholders view that step's carry and input.
///
/// Forward: h0 into the first carry, xs into its buffer, then per step the body's stages and
/// its value into the next carry; all T + 1 carries are kept. Backward, per step from the last:
/// the body's stages again (their buffers hold one step at a time), then the body's
/// vector-Jacobian product seeded with the carry's adjoint: the parameters' gradients added to
/// the targets, the carry's adjoint before the step (plus a per-step output's, with
/// every_step) and the input's. Last, h0's and xs's adjoints go into their expressions.

#include <tad/core/errors.hpp>
#include <tad/eval/program/declaration.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/ops/scan.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {

/// The number of arrays in a scan's carry H (h0 or the body): a tuple's (tad::carries), or 1.
template <class H>
constexpr std::size_t carry_count() {
  if constexpr (is_carries_node_v<H>) return H::arity; else return 1;
}
/// Array J of a carry H, and the offset of its first stage in H's.
template <std::size_t J, class H>
constexpr const auto& carry_part(const H& h) {
  if constexpr (is_carries_node_v<H>) return child<J>(h); else return h;
}
template <std::size_t J, class H>
using carry_part_t = std::remove_cvref_t<decltype(carry_part<J>(std::declval<const H&>()))>;
template <std::size_t J, class H>
constexpr std::size_t carry_part_offset() {
  if constexpr (is_carries_node_v<H>) return child_offset<H, J, 0>(); else return 0;
}

/// A scan's binding at one step: its carry of K arrays at `carry` (each array's part of it),
/// its input at `input` (at planning, both null). Per step, so K is a constant.
template <std::size_t K, class T>
scan_binding<T> scan_bound(const scan_layout& s, const T* carry, const T* input) {
  scan_binding<T> b{};
  b.data[0] = carry, b.rows[0] = s.part_rows[0], b.cols[0] = s.part_cols[0];
  b.data[1] = input, b.rows[1] = s.in_rows, b.cols[1] = s.in_cols;
  static_for<K - 1>([&](auto jc) {
    constexpr std::size_t j = jc.value + 1, slot = 3 + j;  // @carry2 .. @carry4
    b.data[slot] = carry == nullptr ? nullptr : carry + s.part[j];
    b.rows[slot] = s.part_rows[j], b.cols[slot] = s.part_cols[j];
  });
  return b;
}

/// The placeholder leaf P (the carry, the input, a map's slices) viewing b's data, of b's shape
/// (a scalar: reading it).
template <class P, class T>
constexpr P scan_placeholder(const scan_binding<T>& b) {
  constexpr auto j = static_cast<std::size_t>(placeholder_slot(P::name.view()));
  P l{};
  if constexpr (!P::is_array) {
    l.src = b.data[j];
  } else {
    l.data = b.data[j];
    l.size = b.rows[j] * b.cols[j];
    if constexpr (leaf_rank<P>() == 2) l.rows = b.rows[j], l.cols = b.cols[j];
  }
  return l;
}

/// A copy of the body e whose placeholders view b's carry and input (nothing else changes; a
/// subtree without a placeholder is copied whole).
template <class E, class T>
constexpr auto rebind_scan(const E& e, const scan_binding<T>& b) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (is_scan_placeholder_v<E>) return scan_placeholder<E>(b); else return e;
  } else if constexpr (!holds_placeholder<E>::value) {
    return e;
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(e.op, rebind_scan(child<K>(e), b)...);
    }(std::make_index_sequence<E::arity>{});
  }
}

}  // namespace detail

template <class E>
template <int R, class L>
std::array<std::size_t, 2> program<E>::value_shape(const L& l) {
  if constexpr (detail::is_leaf_v<L>) {
    if constexpr (R == 2) return {l.rows, l.cols}; else return {l.size, 1};
  } else if constexpr (R == 2) {
    (void)detail::bind_extents(l);  // throws for operands of different shapes
    const detail::matrix_shape s = detail::top_shape(l);
    return {s.rows, s.cols};
  } else {
    return {detail::top_length<L>(detail::bind_extents(l)), 1};
  }
}

template <class E>
template <class L>
void program<E>::evaluate_into(const L& l, T* out, std::size_t count) {
  if constexpr (detail::is_leaf_v<L> && !requires { l.ld; } && !requires { l.stride; }) {
    std::copy_n(l.data, count, out);  // a contiguous view (a variable, a constant, a stage's result)
  } else {
    tad::evaluate(detail::canonical(l), std::span<T>(out, count));
  }
}

/// The forward values of the stages first .. last - 1 (a loop's body, planned): each live
/// stage's result and evaluated operands; `slots` copies of them placed in the workspace.
template <class E>
detail::saved_values program<E>::plan_saved(std::size_t first, std::size_t last, std::size_t slots,
                                            std::size_t& size) {
  detail::saved_values v{saved_.size(), saved_.size(), 0, 0, first, last};
  // The stages' values: a place in the slot each (an alias, or a let that forwards a product,
  // shares the place of the buffer it shares).
  for (std::size_t q = first; q < last; ++q) {
    const std::size_t count = shapes_.rows[q] * shapes_.cols[q] + (shift_[q] ? 1 : 0);
    if (group_[q] == q) {
      // A custom_gradient's group (eval/program/custom.hpp): its block (outputs, inputs' values).
      slot_at_[q] = v.size + (shapes_.offset[q] - customs_[q].block);
      v.size += customs_[q].size;
      continue;
    }
    if (group_[q] != layout::none) {
      // Another output of a group: its place in the group's block.
      if (slot_at_[group_[q]] != layout::none)
        slot_at_[q] = slot_at_[group_[q]] - shapes_.offset[group_[q]] + shapes_.offset[q];
      continue;
    }
    if (skip_[q] && alias_[q] == q) continue;  // inside an alias: never read
    for (std::size_t j = first; j < q && slot_at_[q] == layout::none; ++j)
      if (slot_at_[j] != layout::none && shapes_.offset[j] == shapes_.offset[q]) slot_at_[q] = slot_at_[j];
    if (slot_at_[q] == layout::none && count != 0) slot_at_[q] = v.size, v.size += count;
  }
  v.copied = v.size;
  for (std::size_t q = first; q < last; ++q) {
    if (skip_[q]) continue;  // an alias: its original's buffers
    const layout& p = layout_[q];
    for (const auto& [offset, count] : {std::array{p.a, p.a_rows * p.a_cols}, std::array{p.b, p.b_rows * p.b_cols}}) {
      if (count == 0 || offset == layout::none) continue;
      saved_.push_back({offset, count});
      v.size += count;
    }
  }
  v.end = saved_.size();
  if (v.size != 0 && slots > std::numeric_limits<std::size_t>::max() / 4 / v.size)
    throw std::length_error("tad::scan, tad::map: the saved forward values' size overflows");
  v.store = size;
  size += slots * v.size;
  return v;
}

/// Copies the products' operand copies of a body into slot `slot` (save) or back (restore),
/// after the values the slot holds in place (at_slot).
template <class E>
void program<E>::save(const detail::saved_values& v, T* ws, std::size_t slot) const {
  T* to = ws + v.store + slot * v.size + v.copied;
  for (std::size_t j = v.begin; j < v.end; ++j) to = std::copy_n(ws + saved_[j][0], saved_[j][1], to);
}
template <class E>
void program<E>::restore(const detail::saved_values& v, T* ws, std::size_t slot) const {
  const T* from = ws + v.store + slot * v.size + v.copied;
  for (std::size_t j = v.begin; j < v.end; from += saved_[j][1], ++j) std::copy_n(from, saved_[j][1], ws + saved_[j][0]);
}

/// r with the body's stages' values in slot `slot` (their forward computes them there; their
/// backward reads them there): no copy of a value per step.
template <class E>
auto program<E>::at_slot(const results& r, const detail::saved_values& v, std::size_t slot) const -> results {
  results s = r;
  const std::size_t at = v.store + slot * v.size;
  for (std::size_t q = v.first; q < v.last; ++q)
    if (slot_at_[q] != layout::none) s.offset[q] = at + slot_at_[q];
  return s;
}

/// Plans scan n (stage k): h0's and xs's stages, the shapes (T from xs's rows), the body's
/// stages for those shapes, and the scan's buffers. A tuple of carries (tad::carries) is one
/// carry of all its arrays, in order (scan_layout::part).
template <class E>
template <class N>
void program<E>::plan_scan(const N& n, std::size_t& size, std::size_t base) {
  using A = std::remove_cvref_t<decltype(n.a)>;
  using B = std::remove_cvref_t<decltype(n.b)>;
  using Body = std::remove_cvref_t<decltype(n.c)>;
  constexpr std::size_t parts = detail::carry_count<A>();
  constexpr int rank = detail::props<detail::carry_part_t<0, A>>::rank;
  constexpr std::size_t xoff = detail::child_offset<N, 1, 0>(), boff = detail::child_offset<N, 2, 0>();
  const std::size_t k = base + detail::count_products<N>() - 1;
  plan<A, false>(n.a, size, base);
  plan<B, false>(n.b, size, base + xoff);
  detail::scan_layout& s = scans_[k];
  s.carry = 0;
  detail::static_for<parts>([&](auto jc) {
    constexpr std::size_t j = jc.value;
    constexpr int r = detail::props<detail::carry_part_t<j, A>>::rank;
    const auto h = value_shape<r>(detail::lower<0>(detail::carry_part<j>(n.a), shapes_, base + detail::carry_part_offset<j, A>()));
    s.part[j] = s.carry, s.part_rows[j] = h[0], s.part_cols[j] = h[1];
    if (h[0] != 0 && h[1] > std::numeric_limits<std::size_t>::max() / 4 / h[0])
      throw std::length_error("tad::scan: a carry's size overflows");
    s.carry += h[0] * h[1];
  });
  const std::array<std::size_t, 2> h{s.part_rows[0], s.part_cols[0]};
  s.first = h[0] * h[1];
  const auto x = value_shape<2>(detail::lower<0>(n.b, shapes_, base + xoff));
  if constexpr (rank == 2) {
    // A batch of B carries: step t's input is rows t B .. t B + B - 1 of xs.
    const std::size_t batch = h[0];
    if ((batch == 0 && x[0] != 0) || (batch != 0 && x[0] % batch != 0)) {
      throw shape_error::with_message("tad::scan(step, h0, xs): h0 is " + detail::shape_string(h[0], h[1]) +
                                          ", xs is " + detail::shape_string(x[0], x[1]) +
                                          ": xs's rows must be a multiple of h0's (a block of rows per step)",
                                      batch, x[0]);
    }
    s.steps = batch == 0 ? 0 : x[0] / batch;
    s.in_rows = batch, s.in_cols = x[1];
  } else {
    s.steps = x[0];
    s.in_rows = x[1], s.in_cols = 1;
  }
  s.input = s.in_rows * s.in_cols;
  // The body's stages, planned for these shapes (on a copy whose placeholders view nothing).
  const auto body = detail::rebind_scan(n.c, detail::scan_bound<parts, T>(s, nullptr, nullptr));
  // A let or a product in the body shares only with one in the body (in the same step).
  const std::size_t floor = std::exchange(alias_floor_, base + boff);
  plan<Body, false>(body, size, base + boff);
  alias_floor_ = floor;
  // No stage after the loop shares one of its body's (a value per step, and body is a local).
  for (std::size_t q = base + boff; q < k; ++q) node_[q] = nullptr, tag_[q] = nullptr;
  detail::static_for<parts>([&](auto jc) {
    constexpr std::size_t j = jc.value;
    constexpr int r = detail::props<detail::carry_part_t<j, Body>>::rank;
    const auto y = value_shape<r>(detail::lower<0>(detail::carry_part<j>(body), shapes_,
                                                   base + boff + detail::carry_part_offset<j, Body>()));
    if (y[0] != s.part_rows[j] || y[1] != s.part_cols[j]) {
      const char* const nth[] = {"first", "second", "third", "fourth"};
      const std::string which =
          parts == 1 ? "step(h, x) returns " : std::string("step(...) returns, for the ") + nth[j] + " carry, ";
      throw shape_error::with_message("tad::scan(step, h0, xs): " + which + detail::shape_string(y[0], y[1]) +
                                          " for a carry h of " + detail::shape_string(s.part_rows[j], s.part_cols[j]) +
                                          ": the new carry must have h0's shape",
                                      s.part_rows[j] * s.part_cols[j], y[0] * y[1]);
    }
  });
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 4;
  if (s.carry != 0 && s.steps + 1 > big / s.carry) throw std::length_error("tad::scan: the carries' size overflows");
  const auto take = [&](std::size_t count) {
    const std::size_t at = size;
    size += count;
    return at;
  };
  constexpr bool last = N::op_type::result == scan_result::last;
  // Checkpointing: a block of k steps, h0, h_k, h_2k, ... kept.
  const std::size_t every = n.op.options.checkpoint;
  if (every == scan_options::sqrt_steps) {
    std::size_t q = 0;
    while (q * q < s.steps) ++q;  // ceil(sqrt(T))
    s.block = q;
  } else {
    s.block = std::min(every, s.steps);
  }
  if (s.block != 0) {
    s.states = take((s.steps / s.block + 1) * s.carry);
    s.seg = take(s.block * s.carry);
    s.last = take(s.carry);
  } else {
    s.states = take((s.steps + 1) * s.carry);
    s.last = s.states + s.steps * s.carry;
  }
  // The body's forward values, per step (per step of a block, when checkpointed).
  s.saved = plan_saved(base + boff, k, s.block != 0 ? s.block : s.steps, size);
  s.xs = take(s.steps * s.input);
  s.dc = take(s.carry);
  s.dn = take(s.carry);
  s.dxs = take(s.steps * s.input);
  s.scratch = take(s.carry + s.input);
  if constexpr (last) {
    shapes_.rows[k] = h[0], shapes_.cols[k] = h[1];
    shapes_.offset[k] = s.last;  // (the first array of a tuple: at the carry's start)
  } else {
    // Stacked: a vector carry's T rows, a matrix carry's T blocks of rows. A tuple's first
    // arrays are copied together (the carries hold every array).
    shapes_.rows[k] = rank == 2 ? s.steps * h[0] : s.steps;
    shapes_.cols[k] = rank == 2 ? h[1] : h[0];
    if constexpr (parts == 1) s.values = s.states + s.carry; else s.values = take(s.steps * s.first);
    shapes_.offset[k] = s.values;
  }
  layout_[k].dy = take(s.first * (last ? 1 : s.steps));
  alias_[k] = k;
}

/// Steps start .. start + count - 1 of scan n from the carry at `from`: their carries into
/// count consecutive carries at `into`, and their forward values saved.
template <class E>
template <class N>
void program<E>::scan_steps(const N& n, const results& r, std::size_t base, const T* from, T* into,
                            std::size_t start, std::size_t count) const {
  constexpr std::size_t boff = detail::child_offset<N, 2, 0>();
  const detail::scan_layout& s = scans_[base + detail::count_products<N>() - 1];
  using Body = std::remove_cvref_t<decltype(n.c)>;
  constexpr std::size_t parts = detail::carry_count<Body>();
  const T* xs = r.ws + s.xs;
  for (std::size_t i = 0; i < count; ++i) {
    const T* carry = i == 0 ? from : into + (i - 1) * s.carry;
    const auto body = detail::rebind_scan(n.c, detail::scan_bound<parts>(s, carry, xs + (start + i) * s.input));
    const std::size_t slot = s.block != 0 ? i : start + i;  // (a block's steps: its slots)
    // For the backward, the body's values in this step's slot; a value only: in place.
    const results rs = r.backward ? at_slot(r, s.saved, slot) : r;
    forward(body, rs, base + boff);
    const auto lowered = detail::lower<0>(body, rs, base + boff);
    T* next = into + i * s.carry;
    detail::static_for<parts>([&](auto jc) {
      constexpr std::size_t j = jc.value;
      evaluate_into(detail::carry_part<j>(lowered), next + s.part[j], s.part_rows[j] * s.part_cols[j]);
    });
    // With every_step, a tuple's first arrays side by side: the scan's value.
    if constexpr (parts > 1 && N::op_type::result == scan_result::every)
      std::copy_n(next, s.first, r.ws + s.values + (start + i) * s.first);
    if (r.backward) save(s.saved, r.ws, slot);  // the products' operand copies
  }
}

/// Scan n's forward (n's first stage is stage `base`): every carry into its buffer, or, with
/// checkpointing, every block's first and the last.
template <class E>
template <class N>
void program<E>::scan_forward(const N& n, const results& r, std::size_t base) const {
  constexpr std::size_t xoff = detail::child_offset<N, 1, 0>();
  const detail::scan_layout& s = scans_[base + detail::count_products<N>() - 1];
  forward(n.a, r, base);
  forward(n.b, r, base + xoff);
  T* states = r.ws + s.states;
  using A = std::remove_cvref_t<decltype(n.a)>;
  const auto h0 = detail::lower<0>(n.a, r, base);
  detail::static_for<detail::carry_count<A>()>([&](auto jc) {
    constexpr std::size_t j = jc.value;
    evaluate_into(detail::carry_part<j>(h0), states + s.part[j], s.part_rows[j] * s.part_cols[j]);
  });
  evaluate_into(detail::lower<0>(n.b, r, base + xoff), r.ws + s.xs, s.steps * s.input);
  if (s.block == 0) {
    scan_steps(n, r, base, states, states + s.carry, 0, s.steps);
    return;
  }
  T* seg = r.ws + s.seg;
  for (std::size_t j = 0; j * s.block < s.steps; ++j) {
    const std::size_t start = j * s.block, count = std::min(s.block, s.steps - start);
    scan_steps(n, r, base, states + j * s.carry, seg, start, count);
    const T* end = seg + (count - 1) * s.carry;
    if (count == s.block) std::copy_n(end, s.carry, states + (j + 1) * s.carry);  // the next block's first
    if (start + count == s.steps) std::copy_n(end, s.carry, r.ws + s.last);
  }
  if (s.steps == 0) std::copy_n(states, s.carry, r.ws + s.last);
}

/// The vector-Jacobian product of a carry's expression (h0, or the body's new carry; lowered
/// from I, whose first stage is `base`), seeded with the carry's adjoint at `seed`: of a tuple
/// of carries, of the sum of its arrays' seeded products, in one pass (a subexpression two
/// arrays share gets its adjoint summed first).
template <class E>
template <class I, class L, class... X, class... T2>
void program<E>::carry_backward(const L& lowered, const results& r, std::size_t base, const detail::scan_layout& s,
                                std::size_t seed, const std::array<T*, sizeof...(X)>& scratch,
                                const wrt_target<X, T2>&... t) const {
  if constexpr (!detail::is_carries_node_v<L>) {
    seeded_backward<I>(lowered, r, base, seed, s.carry, scratch, t...);
  } else {
    seeded_backward_with<I>(
        lowered, r, base,
        [&](const auto& canon) {
          return [&]<std::size_t... J>(std::index_sequence<J...>) {
            return (tad::dot(detail::seed_constant(std::span<const T>(r.ws + seed + s.part[J], s.part_rows[J] * s.part_cols[J]),
                                                   detail::child<J>(canon)),
                             detail::child<J>(canon)) +
                    ...);
          }(std::make_index_sequence<L::arity>{});
        },
        scratch, t...);
  }
}

/// One step's backward, its carry and input at `carry` and `input`: the body's stages' values
/// restored from the step's slot, then its vector-Jacobian product seeded with the carry's adjoint at `seed`, into
/// the targets t (the parameters', the carry's, the input's), then the body's stages' backward.
template <class E>
template <class N, class... X, class... T2>
void program<E>::scan_body_backward(const N& n, const results& r, std::size_t base, const T* carry, const T* input,
                                    std::size_t slot, std::size_t seed, const std::array<T*, sizeof...(X)>& scratch,
                                    const wrt_target<X, T2>&... t) const {
  using Body = std::remove_cvref_t<decltype(n.c)>;
  constexpr std::size_t boff = detail::child_offset<N, 2, 0>();
  const detail::scan_layout& s = scans_[base + detail::count_products<N>() - 1];
  const auto body = detail::rebind_scan(n.c, detail::scan_bound<detail::carry_count<Body>()>(s, carry, input));
  restore(s.saved, r.ws, slot);  // the products' operand copies at this step
  const results rs = at_slot(r, s.saved, slot);  // the body's stages' values at this step
  carry_backward<Body>(detail::lower<0>(body, rs, base + boff), rs, base + boff, s, seed, scratch, t...);
  backward<Body, true>(body, rs, base + boff, scratch, t...);
}

/// Scan n's backward, its adjoint (the last carry's, or every carry's; of a tuple, its first
/// array's) in its dy buffer: the body's vector-Jacobian product per step, last step first
/// (with checkpointing, each block's carries recomputed first), then h0's and xs's.
template <class E>
template <class N, class... X, class... T2>
void program<E>::scan_backward(const N& n, const results& r, std::size_t base,
                               const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const {
  using A = std::remove_cvref_t<decltype(n.a)>;
  using B = std::remove_cvref_t<decltype(n.b)>;
  constexpr std::size_t parts = detail::carry_count<A>();
  constexpr int rank = detail::props<detail::carry_part_t<0, A>>::rank;
  using In = detail::scan_input_t<rank, T>;
  constexpr std::size_t xoff = detail::child_offset<N, 1, 0>();
  constexpr bool last = N::op_type::result == scan_result::last;
  constexpr bool to_h0 = detail::reaches_any_v<A, X...>;
  constexpr bool to_xs = detail::reaches_any_v<B, X...>;
  const std::size_t k = base + detail::count_products<N>() - 1;
  const detail::scan_layout& s = scans_[k];
  const std::size_t truncate = n.op.options.truncate;
  T* ws = r.ws;
  const T* dy = ws + layout_[k].dy;
  std::size_t dc = s.dc, dn = s.dn;
  // The last carry's adjoint (of a tuple: the first array's; the others' start at zero).
  if (last) std::copy_n(dy, s.first, ws + dc);
  else if (s.steps > 0) std::copy_n(dy + (s.steps - 1) * s.first, s.first, ws + dc);
  else std::fill_n(ws + dc, s.first, T(0));
  std::fill_n(ws + dc + s.first, s.carry - s.first, T(0));
  if constexpr (to_xs) std::fill_n(ws + s.dxs, s.steps * s.input, T(0));
  // The scratch of the targets, then the placeholders': each carry array's, then the input's.
  constexpr std::size_t nx = sizeof...(X);
  constexpr std::size_t np = parts + (to_xs ? 1 : 0);
  std::array<T*, nx + np> sc{};
  std::copy_n(scratch.begin(), nx, sc.begin());
  for (std::size_t j = 0; j < parts; ++j) sc[nx + j] = ws + s.scratch + s.part[j];
  if constexpr (to_xs) sc[nx + parts] = ws + s.scratch + s.carry;
  const auto output_share = [&](std::size_t step) {  // into dn: the stacked output's adjoint of h_step
    if (!last && step > 0) {
      std::copy_n(dy + (step - 1) * s.first, s.first, ws + dn);
      if constexpr (parts > 1) std::fill_n(ws + dn + s.first, s.carry - s.first, T(0));
    } else {
      std::fill_n(ws + dn, s.carry, T(0));
    }
  };
  const auto step_back = [&](std::size_t step, const T* carry, std::size_t slot) {
    // The carry's adjoint before this step: the stacked output's share, the body's added.
    output_share(step);
    const T* input = ws + s.xs + step * s.input;
    const auto bound = detail::scan_bound<parts>(s, carry, input);
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      using P = std::tuple<detail::scan_carry_at_t<J, detail::props<detail::carry_part_t<J, A>>::rank, T>...>;
      const auto targets = std::tuple{
          wrt(detail::scan_placeholder<std::tuple_element_t<J, P>>(bound),
              std::span<T>(ws + dn + s.part[J], s.part_rows[J] * s.part_cols[J]))...};
      if constexpr (to_xs) {
        const auto x = wrt(detail::scan_placeholder<In>(bound), std::span<T>(ws + s.dxs + step * s.input, s.input));
        scan_body_backward(n, r, base, carry, input, slot, dc, sc, t..., std::get<J>(targets)..., x);
      } else {
        scan_body_backward(n, r, base, carry, input, slot, dc, sc, t..., std::get<J>(targets)...);
      }
    }(std::make_index_sequence<parts>{});
    // Truncated: no gradient through the carry into h_k, h_2k, ... (the output's share stays).
    if (truncate != 0 && step != 0 && step % truncate == 0) output_share(step);
    std::swap(dc, dn);
  };
  const T* states = ws + s.states;
  if (s.block == 0) {
    for (std::size_t step = s.steps; step-- > 0;) step_back(step, states + step * s.carry, step);
  } else {
    T* seg = ws + s.seg;
    for (std::size_t j = (s.steps + s.block - 1) / s.block; j-- > 0;) {
      // The block's carries again, from its first (the same computation: the same numbers).
      const std::size_t start = j * s.block, count = std::min(s.block, s.steps - start);
      const T* first = states + j * s.carry;
      scan_steps(n, r, base, first, seg, start, count);
      for (std::size_t i = count; i-- > 0;) step_back(start + i, i == 0 ? first : seg + (i - 1) * s.carry, i);
    }
  }
  // h0's adjoint is in dc; xs's in dxs. xs's stages first, then h0's: the reverse post-order,
  // which a group of custom outputs with outputs in both needs (its first, in h0, runs its rule
  // after every use has written its adjoint). A child no adjoint reaches is still walked: a
  // group inside it may be reached through another output.
  if constexpr (to_xs) {
    seeded_backward<B>(detail::lower<0>(n.b, r, base + xoff), r, base + xoff, s.dxs, s.steps * s.input, scratch,
                       t...);
    backward<B, true>(n.b, r, base + xoff, scratch, t...);
  } else if constexpr (detail::has_custom_outputs_v<B>) {
    backward<B, false>(n.b, r, base + xoff, scratch, t...);
  }
  if constexpr (to_h0) {
    carry_backward<A>(detail::lower<0>(n.a, r, base), r, base, s, dc, scratch, t...);
    backward<A, true>(n.a, r, base, scratch, t...);
  } else if constexpr (detail::has_custom_outputs_v<A>) {
    backward<A, false>(n.a, r, base, scratch, t...);
  }
}

// ---- map ------------------------------------------------------------------------------------

/// The binding of map N (stage `base`'s subtree) for k: its slices' k-th rows or blocks, in
/// their evaluated buffers.
template <class E>
template <class N>
auto program<E>::map_bound(const N&, const results& r, std::size_t base, std::size_t k) const
    -> detail::scan_binding<T> {
  const detail::map_layout& m = maps_[base + detail::count_products<N>() - 1];
  detail::scan_binding<T> b{};
  for (std::size_t j = 0; j < N::arity - 1; ++j) {
    b.data[j + 1] = r.ws + m.xs[j] + k * m.input[j];
    b.rows[j + 1] = m.in_rows[j], b.cols[j + 1] = m.in_cols[j];
  }
  return b;
}

/// Plans map n (stage k): its inputs' stages, the slices' shapes, the body's stages for them,
/// the map's buffers.
template <class E>
template <class N>
void program<E>::plan_map(const N& n, std::size_t& size, std::size_t base) {
  constexpr std::size_t inputs = N::arity - 1;
  using Body = std::remove_cvref_t<decltype(detail::child<inputs>(n))>;
  constexpr std::size_t boff = detail::child_offset<N, inputs, 0>();
  const std::size_t k = base + detail::count_products<N>() - 1;
  detail::map_layout& m = maps_[k];
  m.count = n.op.count;
  const auto take = [&](std::size_t count) {
    const std::size_t at = size;
    size += count;
    return at;
  };
  detail::static_for<inputs>([&](auto jc) {
    constexpr std::size_t j = jc.value;
    using I = std::remove_cvref_t<decltype(detail::child<j>(n))>;
    constexpr std::size_t off = detail::child_offset<N, j, 0>();
    plan<I, false>(detail::child<j>(n), size, base + off);
    constexpr slicing how = N::op_type::slicings[j];
    constexpr bool whole = how != slicing::blocks;  // a row or an element per k
    const auto x = value_shape<how == slicing::elements ? 1 : 2>(detail::lower<0>(detail::child<j>(n), shapes_, base + off));
    if (whole ? x[0] != m.count : (m.count == 0 ? x[0] != 0 : x[0] % m.count != 0)) {
      const char* need = how == slicing::rows     ? ": each_row needs K rows"
                         : how == slicing::blocks ? ": each_block needs a multiple of K rows"
                                                  : ": each_element needs K elements";
      throw shape_error::with_message(std::string("tad::map(K, f, slices...): K is ") + std::to_string(m.count) +
                                          ", slice " + std::to_string(j) + " is " +
                                          detail::shape_string(x[0], x[1]) + need,
                                      m.count, x[0]);
    }
    m.in_rows[j] = how == slicing::rows ? x[1] : how == slicing::elements ? 1 : (m.count == 0 ? 0 : x[0] / m.count);
    m.in_cols[j] = how == slicing::blocks ? x[1] : 1;
    m.input[j] = m.in_rows[j] * m.in_cols[j];
    m.xs[j] = take(x[0] * x[1]);
    m.dxs[j] = take(x[0] * x[1]);
  });
  // The body's stages for these shapes (its placeholders view nothing).
  detail::scan_binding<T> b{};
  for (std::size_t j = 0; j < inputs; ++j) b.rows[j + 1] = m.in_rows[j], b.cols[j + 1] = m.in_cols[j];
  const auto body = detail::rebind_scan(detail::child<inputs>(n), b);
  const std::size_t floor = std::exchange(alias_floor_, base + boff);
  plan<Body, false>(body, size, base + boff);
  alias_floor_ = floor;
  // No stage after the loop shares one of its body's (a value per step, and body is a local).
  for (std::size_t q = base + boff; q < k; ++q) node_[q] = nullptr, tag_[q] = nullptr;
  constexpr int rank = detail::props<Body>::rank;
  const auto y = value_shape<rank>(detail::lower<0>(body, shapes_, base + boff));
  m.out = y[0] * y[1];
  if (m.out != 0 && m.count > std::numeric_limits<std::size_t>::max() / 4 / m.out)
    throw std::length_error("tad::map: the result's size overflows");
  m.scratch = take(m.input[0] + m.input[1] + m.input[2]);
  m.saved = plan_saved(base + boff, k, m.count, size);  // the body's forward values, per k
  // Stacked: K rows of a vector of n, or K blocks of an r x c matrix's rows.
  shapes_.rows[k] = rank == 2 ? m.count * y[0] : m.count;
  shapes_.cols[k] = rank == 2 ? y[1] : y[0];
  shapes_.offset[k] = take(m.count * m.out);
  layout_[k].dy = take(m.count * m.out);
  alias_[k] = k;
}

/// Map n's forward: its inputs into their buffers, then the body per k into row (block) k.
template <class E>
template <class N>
void program<E>::map_forward(const N& n, const results& r, std::size_t base) const {
  constexpr std::size_t inputs = N::arity - 1;
  constexpr std::size_t boff = detail::child_offset<N, inputs, 0>();
  const std::size_t k = base + detail::count_products<N>() - 1;
  const detail::map_layout& m = maps_[k];
  detail::static_for<inputs>([&](auto jc) {
    constexpr std::size_t j = jc.value;
    constexpr std::size_t off = detail::child_offset<N, j, 0>();
    forward(detail::child<j>(n), r, base + off);
    evaluate_into(detail::lower<0>(detail::child<j>(n), r, base + off), r.ws + m.xs[j], m.count * m.input[j]);
  });
  T* out = r.ws + r.offset[k];
  for (std::size_t q = 0; q < m.count; ++q) {
    const auto body = detail::rebind_scan(detail::child<inputs>(n), map_bound(n, r, base, q));
    const results rs = r.backward ? at_slot(r, m.saved, q) : r;  // (as a scan's step)
    forward(body, rs, base + boff);
    evaluate_into(detail::lower<0>(body, rs, base + boff), out + q * m.out, m.out);
    if (r.backward) save(m.saved, r.ws, q);
  }
}

/// Map n's backward, its adjoint in its dy buffer: the body's vector-Jacobian product per k,
/// seeded with row (block) k, into the targets and the slices' adjoints; then the inputs'.
template <class E>
template <class N, class... X, class... T2>
void program<E>::map_backward(const N& n, const results& r, std::size_t base,
                              const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const {
  constexpr std::size_t inputs = N::arity - 1;
  using Body = std::remove_cvref_t<decltype(detail::child<inputs>(n))>;
  constexpr std::size_t boff = detail::child_offset<N, inputs, 0>();
  const std::size_t k = base + detail::count_products<N>() - 1;
  const detail::map_layout& m = maps_[k];
  // Which slices a gradient reaches, and their scratch after the targets'.
  constexpr auto to = [] {
    std::array<bool, 3> a{};
    detail::static_for<inputs>([&](auto jc) {
      a[jc.value] = detail::reaches_any_v<std::remove_cvref_t<decltype(detail::child<jc.value>(std::declval<const N&>()))>, X...>;
    });
    return a;
  }();
  constexpr std::size_t nx = sizeof...(X);
  constexpr std::size_t extra = std::size_t(to[0]) + std::size_t(to[1]) + std::size_t(to[2]);
  std::array<T*, nx + extra> sc{};
  std::copy_n(scratch.begin(), nx, sc.begin());
  {
    std::size_t at = nx, offset = m.scratch;
    for (std::size_t j = 0; j < inputs; ++j) {
      if (to[j]) std::fill_n(r.ws + m.dxs[j], m.count * m.input[j], T(0)), sc[at++] = r.ws + offset;
      offset += m.input[j];
    }
  }
  for (std::size_t q = 0; q < m.count; ++q) {
    const detail::scan_binding<T> b = map_bound(n, r, base, q);
    const auto body = detail::rebind_scan(detail::child<inputs>(n), b);
    // The targets of the slices a gradient reaches: row, block or element q of their adjoints.
    auto targets = [&]<std::size_t... J>(std::index_sequence<J...>) {
      return std::tuple_cat([&] {
        if constexpr (to[J]) {
          using P = detail::map_placeholder_t<J, N::op_type::slicings[J], detail::child_t<J, N>>;
          T* d = r.ws + m.dxs[J] + q * m.input[J];
          if constexpr (P::is_array) return std::tuple{wrt(detail::scan_placeholder<P>(b), std::span<T>(d, m.input[J]))};
          else return std::tuple{wrt(detail::scan_placeholder<P>(b), *d)};
        } else {
          return std::tuple<>{};
        }
      }()...);
    }(std::make_index_sequence<inputs>{});
    std::apply(
        [&](const auto&... p) {
          restore(m.saved, r.ws, q);  // the products' operand copies for this k
          const results rs = at_slot(r, m.saved, q);  // the body's stages' values for this k
          seeded_backward<Body>(detail::lower<0>(body, rs, base + boff), rs, base + boff, layout_[k].dy + q * m.out,
                                m.out, sc, t..., p...);
          backward<Body, true>(body, rs, base + boff, sc, t..., p...);
        },
        targets);
  }
  // The slices' adjoints into the inputs' expressions, last to first (the reverse post-order;
  // an input no adjoint reaches is still walked, as scan's h0 and xs are).
  detail::static_for<inputs>([&](auto jc) {
    constexpr std::size_t j = inputs - 1 - jc.value;
    using I = std::remove_cvref_t<decltype(detail::child<j>(n))>;
    constexpr std::size_t off = detail::child_offset<N, j, 0>();
    if constexpr (detail::reaches_any_v<I, X...>) {
      seeded_backward<I>(detail::lower<0>(detail::child<j>(n), r, base + off), r, base + off, m.dxs[j],
                         m.count * m.input[j], scratch, t...);
      backward<I, true>(detail::child<j>(n), r, base + off, scratch, t...);
    } else if constexpr (detail::has_custom_outputs_v<I>) {
      backward<I, false>(detail::child<j>(n), r, base + off, scratch, t...);
    }
  });
}

}  // namespace tad
