#pragma once
/// The second stage of a training step: gradient transforms, composable in a chain (in the
/// spirit of optax). Each runs SIMD loops over the gradients in place (doc/training.md).
///
/// A transform is any type with `step_action update(gradient_set<T>& grads, const P& params)`
/// for the parameter set P (the `gradient_transform` concept). Returning `step_action::skip`
/// ends the step: later transforms and the optimizer do not run, parameters and optimizer
/// state stay as they are.

#include <tad/simd/batch.hpp>
#include <tad/train/parameters.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

/// What a transform tells the rest of the step.
enum class step_action { apply, skip };

/// A gradient transform for gradients in T and the parameter set P.
template <class Tr, class T, class P>
concept gradient_transform = requires(Tr& t, gradient_set<T>& g, const P& p) {
  { t.update(g, p) } -> std::same_as<step_action>;
};

namespace detail {

/// Sum of squares of s, accumulated in T lanes and returned in double.
template <class T>
double sum_of_squares(std::span<const T> s) {
  using B = simd::batch<T>;
  constexpr std::size_t W = B::size;
  B a0(T(0)), a1(T(0));
  std::size_t i = 0;
  for (; i + 2 * W <= s.size(); i += 2 * W) {
    const B x = simd::load(s.data() + i), y = simd::load(s.data() + i + W);
    a0 = simd::fma(x, x, a0);
    a1 = simd::fma(y, y, a1);
  }
  for (; i + W <= s.size(); i += W) {
    const B x = simd::load(s.data() + i);
    a0 = simd::fma(x, x, a0);
  }
  double r = static_cast<double>(simd::hsum(a0 + a1));
  for (; i < s.size(); ++i) r += static_cast<double>(s[i]) * static_cast<double>(s[i]);
  return r;
}

/// Is every element of s finite?
template <class T>
bool all_finite(std::span<const T> s) {
  using B = simd::batch<T>;
  constexpr std::size_t W = B::size;
  B acc(T(0));  // x - x is 0 for finite x, NaN for inf and NaN; NaN sticks in the sum
  std::size_t i = 0;
  for (; i + W <= s.size(); i += W) {
    const B x = simd::load(s.data() + i);
    acc = acc + (x - x);
  }
  T r = simd::hsum(acc);
  for (; i < s.size(); ++i) r += s[i] - s[i];
  return r == T(0);
}

inline void require_non_negative(double v, const char* what) {
  if (!(v >= 0)) throw std::invalid_argument(std::string(what) + " must be a non-negative number");
}

}  // namespace detail

/// `clip_by_value(lo, hi)`: every gradient entry clamped to [lo, hi]; NaN stays NaN.
class clip_by_value {
 public:
  clip_by_value(double lo, double hi) : lo_(lo), hi_(hi) {
    if (!(lo <= hi)) throw std::invalid_argument("tad::clip_by_value(lo, hi): lo must not exceed hi, and neither may be NaN");
  }
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P&) const {
    const T lo = static_cast<T>(lo_), hi = static_cast<T>(hi_);
    detail::transform_each(g.all(), [&](auto v) {
      using V = decltype(v);
      return simd::select(v < V(lo), V(lo), simd::select(v > V(hi), V(hi), v));
    });
    return step_action::apply;
  }

 private:
  double lo_, hi_;
};

/// `clip_by_norm(c)`: each parameter's gradient g scaled by `c / ||g||` when `||g|| > c`
/// (TensorFlow's `clip_by_norm`). An infinite norm makes finite entries 0 and infinite ones
/// NaN; a NaN norm makes the gradient NaN.
class clip_by_norm {
 public:
  explicit clip_by_norm(double c) : c_(c) { detail::require_non_negative(c, "tad::clip_by_norm(c): c"); }
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P&) const {
    for (std::size_t k = 0; k < g.size(); ++k) {
      const double n = std::sqrt(detail::sum_of_squares<T>(g[k]));
      if (n <= c_) continue;  // also n == 0
      const T s = std::isnan(n) ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(c_ / n);
      detail::transform_each(g[k], [&](auto v) { return v * decltype(v)(s); });
    }
    return step_action::apply;
  }

 private:
  double c_;
};

/// `clip_by_global_norm(c)`: every gradient scaled by `c / max(G, c)`, G the norm of all
/// gradients together (TensorFlow's `clip_by_global_norm`); an infinite or NaN G makes every
/// entry NaN, as TensorFlow does. `last_norm()` is the G of the last update.
class clip_by_global_norm {
 public:
  explicit clip_by_global_norm(double c) : c_(c) { detail::require_non_negative(c, "tad::clip_by_global_norm(c): c"); }
  /// One reading pass (the norm); the scaling is deferred to the optimizer's loop.
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P&) {
    norm_ = std::sqrt(detail::sum_of_squares<T>(g.raw_all())) * std::abs(static_cast<double>(g.pending_scale()));
    if (!std::isfinite(norm_)) {
      g.defer_scale(std::numeric_limits<T>::quiet_NaN());  // every entry NaN, as TensorFlow
    } else if (norm_ > c_) {
      g.defer_scale(static_cast<T>(c_ / norm_));
    }
    return step_action::apply;
  }
  double last_norm() const noexcept { return norm_; }

 private:
  double c_;
  double norm_ = 0;
};

/// `scale(k)`: every gradient multiplied by k.
class scale {
 public:
  explicit scale(double k) : k_(k) {}
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P&) const {
    g.defer_scale(static_cast<T>(k_));  // applied by the optimizer's loop (or the next reader)
    return step_action::apply;
  }

 private:
  double k_;
};

/// `add_decayed_weights(wd)`: `g += wd * p` (L2 regularisation through the gradient).
class add_decayed_weights {
 public:
  explicit add_decayed_weights(double wd) : wd_(wd) {
    detail::require_non_negative(wd, "tad::add_decayed_weights(wd): wd");
  }
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P& params) const {
    const T wd = static_cast<T>(wd_);
    g.settle();
    for (std::size_t k = 0; k < g.size(); ++k) {
      T* gk = g.raw(k).data();
      const T* pk = params.data(k).data();
      detail::simd_loop<T>(params.length(k), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
        using V = decltype(tag);
        simd::store_any(gk + i, simd::load_any<V>(gk + i) + V(wd) * simd::load_any<V>(pk + i));
      });
    }
    return step_action::apply;
  }

 private:
  double wd_;
};

/// `skip_if_not_finite()`: skips the step (parameters and optimizer state untouched) when a
/// gradient entry is infinite or NaN; `skipped()` counts the skipped steps.
class skip_if_not_finite {
 public:
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P&) {
    // Finite after the pending scale s: every stored value finite and s finite (0 * inf is
    // caught as the inf).
    if (detail::all_finite<T>(g.raw_all()) && std::isfinite(g.pending_scale())) return step_action::apply;
    ++skipped_;
    return step_action::skip;
  }
  std::size_t skipped() const noexcept { return skipped_; }

 private:
  std::size_t skipped_ = 0;
};

/// `chain(t...)`: the transforms in order; stops at the first that skips.
template <class... Tr>
class chain {
 public:
  explicit chain(Tr... t) : t_(std::move(t)...) {}
  template <class T, class P>
  step_action update(gradient_set<T>& g, const P& params) {
    static_assert((gradient_transform<Tr, T, P> && ...),
                  "tad::chain(t...): every t needs step_action update(gradient_set<T>&, const parameter_set<...>&)");
    step_action a = step_action::apply;
    std::apply([&](auto&... t) { ((a = a == step_action::apply ? t.update(g, params) : a), ...); }, t_);
    return a;
  }
  /// The k-th transform (e.g. to read skip_if_not_finite::skipped()).
  template <std::size_t K>
  auto& get() noexcept { return std::get<K>(t_); }

 private:
  std::tuple<Tr...> t_;
};

/// The transform that changes nothing.
struct identity_transform {
  template <class T, class P>
  step_action update(gradient_set<T>&, const P&) const noexcept {
    return step_action::apply;
  }
};

}  // namespace tad
