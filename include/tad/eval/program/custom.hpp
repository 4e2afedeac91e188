#pragma once
/// tad::program's custom_gradient with several outputs (gradient/custom.hpp custom_output_op;
/// doc/gradient-surgery.md, "Several outputs"; decisions.md 68). The K outputs of one call are
/// one node, its *group*; each output, wherever and however often it is used, is a stage of its
/// own (its adjoint buffer, written by its consumers as any stage's), and the group's first
/// output in post-order, its *leader*, does the work:
///
/// - forward: its inputs' stages, its inputs' values into the group's block, then one loop
///   over the elements computing all K outputs there (every other output reads its part);
/// - backward, which the program's reverse post-order runs after every use of every output
///   has written its adjoint: the adjoints of each output's uses summed (a zero for an output no
///   adjoint reaches), the rule once per element on them, the inputs' values and the outputs',
///   into one adjoint buffer per input, then each input's vector-Jacobian product seeded with it
///   (a scalar input: with the sum), and its inputs' stages.
///
/// The group's rule runs when an adjoint reaches some output (group_flows_); a stage inside its
/// inputs shares nothing with a stage outside them (its backward runs only when the rule did).

#include <tad/core/errors.hpp>
#include <tad/detail/static_for.hpp>
#include <tad/eval/program/declaration.hpp>
#include <tad/gradient/custom.hpp>
#include <tad/simd/batch.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {
/// f(i) for V = a SIMD batch at i = 0, W, 2W, ..., then V = T for the remaining elements.
template <class T, class F>
TAD_INLINE void for_elements(std::size_t n, F&& f) {
  constexpr std::size_t W = simd::width<T>;
  std::size_t i = 0;
  for (; i + W <= n; i += W) f.template operator()<simd::batch<T>>(i);
  for (; i < n; ++i) f.template operator()<T>(i);
}
/// Element i of an array (V a batch: W elements from i) or of a scalar (Scalar: p[0], splat).
template <class V, bool Scalar, class T>
TAD_INLINE V element_at(const T* p, std::size_t i) {
  if constexpr (Scalar) return simd::splat<V>(p[0]);
  else if constexpr (simd::is_batch_v<V>) return simd::load(p + i);
  else return p[i];
}
template <class T, class V>
TAD_INLINE void put_element(T* p, std::size_t i, const V& v) {
  if constexpr (simd::is_batch_v<V>) simd::store(p + i, v); else p[i] = v;
}
template <class T, class V>
TAD_INLINE void add_element(T* p, std::size_t i, const V& v) {
  if constexpr (simd::is_batch_v<V>) simd::store(p + i, simd::load(p + i) + v); else p[i] += v;
}
/// Is an input C read where it is (a contiguous array of the caller's: a variable or a
/// constant) rather than evaluated into the group's block? (Not a loop's placeholder, named
/// '@...', whose data moves with the step.)
template <class C>
constexpr bool viewed_input() {
  if constexpr (!is_leaf_v<C> || is_column_v<C>) {
    return false;
  } else if constexpr (!C::is_array || requires { C::ld; } || requires { std::declval<const C&>().stride; } ||
                       !requires { std::declval<const C&>().data; }) {
    return false;
  } else if constexpr (requires { C::name; }) {
    return C::name.view().empty() || C::name.view().front() != '@';
  } else {
    return true;
  }
}
/// Does a custom output's rule add input C's adjoint into its gradient directly (an array
/// variable read where it is)?
template <class C>
constexpr bool direct_input() {
  if constexpr (viewed_input<C>()) return C::is_variable; else return false;
}
/// Where each input of custom output node n is read: its own data, or its place in the block.
template <class N, class T, std::size_t... I>
std::array<const T*, sizeof...(I)> input_places(const N& n, const T* block, const std::array<std::size_t, 3>& in,
                                                std::index_sequence<I...>) {
  return {[&] {
    if constexpr (viewed_input<child_t<I, N>>()) return static_cast<const T*>(child<I>(n).data);
    else return block + in[I];
  }()...};
}
/// Element i of each input of custom output N (a scalar input's one value).
template <class V, class N, class T, std::size_t... I>
TAD_INLINE std::array<V, sizeof...(I)> input_elements(const std::array<const T*, sizeof...(I)>& x, std::size_t i,
                                                      std::index_sequence<I...>) {
  return {element_at<V, props<child_t<I, N>>::rank == 0>(x[I], i)...};
}
/// The K outputs of custom output N's group at element i, into the block.
template <class V, class N, class T, class Bodies, std::size_t... O, std::size_t... I>
TAD_INLINE void output_elements(T* block, std::size_t count, const Bodies& bodies, const std::array<V, sizeof...(I)>& x,
                                std::size_t i, std::index_sequence<O...>, std::index_sequence<I...>) {
  (put_element(block + O * count, i, eval_body(std::get<O>(bodies), x[I]...)), ...);
}
}  // namespace detail

/// Plans output n (stage k): its inputs' stages, on their own (no alias across the group's
/// boundary); its shape, the inputs' (the array inputs must agree); then either the group's
/// buffers, when it is the first output of its call planned here (a loop's body plans its own),
/// or a place in them (the rest of its subtree is never run: the leader's is).
template <class E>
template <class N>
void program<E>::plan_custom(const N& n, std::size_t& size, std::size_t base) {
  using Op = typename N::op_type;
  constexpr std::size_t J = Op::output, K = Op::outputs, NI = N::arity;
  const std::size_t k = base + detail::count_products<N>() - 1;
  detail::static_for<NI>([&](auto i) {
    plan<detail::child_t<i.value, N>, false>(detail::child<i.value>(n), size, base + detail::child_offset<N, i.value, 0>());
  });
  std::array<std::size_t, 2> shape{0, 0};
  std::size_t first = NI;
  detail::static_for<NI>([&](auto i) {
    using C = detail::child_t<i.value, N>;
    if constexpr (detail::props<C>::rank >= 1) {
      const auto h = value_shape<detail::props<C>::rank>(
          detail::lower<0>(detail::child<i.value>(n), shapes_, base + detail::child_offset<N, i.value, 0>()));
      if (first == NI) {
        shape = h, first = i.value;
      } else if (h != shape) {
        const auto text = [](const std::array<std::size_t, 2>& a) {
          return detail::props<N>::rank == 1 ? std::to_string(a[0]) : detail::shape_string(a[0], a[1]);
        };
        throw shape_error::with_message("tad::custom_gradient(f, g)(x...): input " + std::to_string(first) + " is " +
                                            text(shape) + ", input " + std::to_string(i.value) + " is " + text(h) +
                                            ": the array inputs of a custom_gradient with several outputs must "
                                            "have one shape",
                                        shape[0] * shape[1], h[0] * h[1]);
      }
    }
  });
  shapes_.rows[k] = shape[0], shapes_.cols[k] = shape[1];
  const std::size_t count = shape[0] * shape[1];
  if (count != 0 && K > std::numeric_limits<std::size_t>::max() / 8 / count)
    throw std::length_error("tad::custom_gradient: the outputs' size overflows");
  const auto take = [&](std::size_t c) {
    const std::size_t at = size;
    size += c;
    return at;
  };
  tag_[k] = &type_tag<detail::group_key_t<N>>;
  node_[k] = &n;
  group_id_[k] = n.op.id;
  group_out_[k] = J;
  alias_[k] = k;
  layout_[k].dy = take(count);
  for (std::size_t j = alias_floor_; j < k; ++j) {
    if (tag_[j] == tag_[k] && group_[j] == j && group_id_[j] == group_id_[k]) {
      // Another output (or another use of one) of a group planned here: its place in the group's block.
      group_[k] = j;
      shapes_.offset[k] = customs_[j].block + J * count;
      for (std::size_t q = base; q <= k; ++q) skip_[q] = true;
      for (std::size_t q = base; q < k; ++q) alias_[q] = q, buried_[q] = true;
      return;
    }
  }
  group_[k] = k;
  detail::custom_layout& c = customs_[k];
  c.count = count;
  std::size_t at = K * count;
  detail::static_for<NI>([&](auto i) {
    using C = detail::child_t<i.value, N>;
    c.in[i.value] = at;
    if constexpr (!detail::viewed_input<C>()) at += detail::props<C>::rank == 0 ? 1 : count;
  });
  c.size = at;
  c.block = take(at);
  shapes_.offset[k] = c.block + J * count;
  c.dsum = take(K * count);
  detail::static_for<NI>([&](auto i) {
    using C = detail::child_t<i.value, N>;
    if constexpr (!detail::direct_input<C>()) c.dx[i.value] = take(detail::props<C>::rank == 0 ? 1 : count);
  });
}

/// After planning: which stages an adjoint reaches, a group's inputs' only when one reaches the
/// group (some output of it that is not inside an alias or another output's unrun subtree).
/// Outer stages come later in post-order, so one sweep from the last stage settles them.
template <class E>
void program<E>::settle_groups() {
  if constexpr (stages > 0 && detail::has_custom_outputs_v<E>) {
    constexpr auto flows = detail::flowing_products<E>();
    constexpr auto enc = detail::enclosing_custom<E>();
    for (std::size_t q = stages; q-- > 0;) {
      const bool gate = enc[q] == stages || group_flows_[group_[enc[q]]];
      flows_[q] = flows[q] && gate && !buried_[q];
      if (group_[q] != layout::none) group_flows_[group_[q]] = group_flows_[group_[q]] || flows_[q];
    }
  }
}

/// The group's forward, at its leader: the inputs' stages and values, then all K outputs in one
/// loop.
template <class E>
template <class N>
void program<E>::custom_forward(const N& n, const results& r, std::size_t base) const {
  using Op = typename N::op_type;
  constexpr std::size_t J = Op::output, K = Op::outputs, NI = N::arity;
  const std::size_t k = base + detail::count_products<N>() - 1;
  const detail::custom_layout& c = customs_[k];
  T* block = r.ws + r.offset[k] - J * c.count;  // (in a loop's body, the step's slot)
  detail::static_for<NI>([&](auto i) {
    constexpr std::size_t b = detail::child_offset<N, i.value, 0>();
    forward(detail::child<i.value>(n), r, base + b);
    const auto lowered = detail::lower<0>(detail::child<i.value>(n), r, base + b);
    using C = detail::child_t<i.value, N>;
    if constexpr (detail::viewed_input<C>()) (void)lowered;  // (read where it is)
    else if constexpr (detail::props<C>::rank == 0) block[c.in[i.value]] = tad::value(detail::canonical(lowered));
    else evaluate_into(lowered, block + c.in[i.value], c.count);
  });
  const auto& bodies = n.op.bodies;
  const auto xp = detail::input_places(n, static_cast<const T*>(block), c.in, std::make_index_sequence<NI>{});
  detail::for_elements<T>(c.count, [&]<class V>(std::size_t i) {
    const auto x = detail::input_elements<V, N>(xp, i, std::make_index_sequence<NI>{});
    detail::output_elements<V, N>(block, c.count, bodies, x, i, std::make_index_sequence<K>{},
                                  std::make_index_sequence<NI>{});
  });
}

/// The group's backward, at its leader (the last of its outputs the reverse post-order visits):
/// see the top of this file.
template <class E>
template <class N, class... X, class... T2>
void program<E>::custom_backward(const N& n, const results& r, std::size_t base,
                                 const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const {
  constexpr std::size_t NI = N::arity;
  const std::size_t k = base + detail::count_products<N>() - 1;
  if (group_[k] != k) return;
  if constexpr (detail::reaches_any_v<N, X...>) {
    if (group_flows_[k]) {
      rule_backward(n, r, base, scratch, t...);
    } else {
      // No adjoint reaches the group: nothing writes the adjoints of its inputs' stages, whose
      // backward runs below on zeros (an alias outside may add to one; a group inside may be
      // reached through another output).
      for (std::size_t q = base; q < k; ++q) {
        if (layout_[q].dy != layout::none)
          std::fill_n(r.ws + layout_[q].dy, r.rows[q] * r.cols[q] + (shift_[q] ? 1 : 0), T(0));
      }
    }
  }
  // Its inputs' stages, last to first (the reverse post-order); an input the rule gives no
  // adjoint too (a group inside may be reached through another of its outputs).
  detail::static_for<NI>([&](auto ii) {
    constexpr std::size_t I = NI - 1 - ii.value;
    backward<detail::child_t<I, N>, detail::adjoint_flows<N, I>::value>(
        detail::child<I>(n), r, base + detail::child_offset<N, I, 0>(), scratch, t...);
  });
}

/// The group's rule and its inputs' vector-Jacobian products (see the top of this file).
template <class E>
template <class N, class... X, class... T2>
void program<E>::rule_backward(const N& n, const results& r, std::size_t base,
                               const std::array<T*, sizeof...(X)>& scratch, const wrt_target<X, T2>&... t) const {
  using Op = typename N::op_type;
  constexpr std::size_t J = Op::output, K = Op::outputs, NI = N::arity;
  using R = detail::multi_rule<typename Op::group_rule_type, K, NI>;
  {
    const std::size_t k = base + detail::count_products<N>() - 1;
    const detail::custom_layout& c = customs_[k];
    const std::size_t count = c.count;
    const T* block = r.ws + r.offset[k] - J * count;
    // Each output's adjoint: its one use's buffer, or its uses' sum, or zeros (a use no adjoint
    // reaches, flows_[q] false, has an adjoint buffer nothing writes).
    std::array<const T*, K> d{};
    std::array<std::size_t, K> uses{};
    for (std::size_t q = k; q < stages; ++q) {
      if (group_[q] != k || !flows_[q]) continue;
      const std::size_t j = group_out_[q];
      const T* dy = r.ws + layout_[q].dy;
      T* sum = r.ws + c.dsum + j * count;
      if (uses[j] == 0) {
        d[j] = dy;
      } else {
        if (uses[j] == 1) std::copy_n(d[j], count, sum);
        for (std::size_t i = 0; i < count; ++i) sum[i] += dy[i];
        d[j] = sum;
      }
      ++uses[j];
    }
    for (std::size_t j = 0; j < K; ++j) {
      if (uses[j] == 0) {
        std::fill_n(r.ws + c.dsum + j * count, count, T(0));
        d[j] = r.ws + c.dsum + j * count;
      }
    }
    // The rule, once per element: an array input's adjoint per element, a scalar's summed. A
    // variable input's is added into its gradient (which the engine has written by now, as
    // for a product's operand); another input's goes to its buffer, the seed of its
    // vector-Jacobian product.
    std::array<simd::batch<T>, NI> lanes{};
    std::array<T, NI> tail{};
    const auto xp = detail::input_places(n, block, c.in, std::make_index_sequence<NI>{});
    std::array<T*, NI> out{};
    detail::static_for<NI>([&](auto ii) {
      using C = detail::child_t<ii.value, N>;
      if constexpr (!detail::reaches_any_v<C, X...>) {
        // (no gradient wanted through it)
      } else if constexpr (detail::direct_input<C>()) {
        ((detail::same_name<X::name, C::name> ? (out[ii.value] = t.data, 0) : 0), ...);
      } else {
        out[ii.value] = r.ws + c.dx[ii.value];
      }
    });
    detail::for_elements<T>(count, [&]<class V>(std::size_t i) {
      std::array<V, K> dv{}, yv{};
      for (std::size_t j = 0; j < K; ++j) {
        dv[j] = detail::element_at<V, false>(d[j], i);
        yv[j] = detail::element_at<V, false>(block + j * count, i);
      }
      const auto xv = detail::input_elements<V, N>(xp, i, std::make_index_sequence<NI>{});
      const auto a = detail::call_multi_rule<NI>(n.op.rule, dv, xv, yv);
      detail::static_for<NI>([&](auto ii) {
        constexpr std::size_t I = ii.value;
        if constexpr (!R::template zero_at<I>() && detail::reaches_any_v<detail::child_t<I, N>, X...>) {
          if constexpr (detail::props<detail::child_t<I, N>>::rank == 0) {
            if constexpr (simd::is_batch_v<V>) lanes[I] += detail::adjoint_at<I>(a); else tail[I] += detail::adjoint_at<I>(a);
          } else if constexpr (detail::direct_input<detail::child_t<I, N>>()) {
            detail::add_element(out[I], i, detail::adjoint_at<I>(a));
          } else {
            detail::put_element(out[I], i, detail::adjoint_at<I>(a));
          }
        }
      });
    });
    // Each input's vector-Jacobian product.
    detail::static_for<NI>([&](auto ii) {
      constexpr std::size_t I = ii.value;
      using C = detail::child_t<I, N>;
      constexpr std::size_t b = detail::child_offset<N, I, 0>();
      if constexpr (!R::template zero_at<I>() && detail::reaches_any_v<C, X...> && !detail::direct_input<C>()) {
        const auto lowered = detail::lower<0>(detail::child<I>(n), r, base + b);
        if constexpr (detail::props<C>::rank == 0) {
          const T s = simd::hsum(lanes[I]) + tail[I];
          seeded_backward_with<C>(
              lowered, r, base + b, [&](const auto& canon) { return tad::constant(s) * canon; }, scratch, t...);
        } else {
          seeded_backward<C>(lowered, r, base + b, c.dx[I], count, scratch, t...);
        }
      }
    });
  }
}

}  // namespace tad
