#pragma once
/// The last stage of a training step: optimizers (state allocated once, parameters updated in
/// place in SIMD loops), learning-rate schedules, and `train_step` (doc/training.md).

#include <tad/config.hpp>
#include <tad/gradient/schedule.hpp>
#include <tad/simd/math.hpp>
#include <tad/simd/batch.hpp>
#include <tad/train/parameters.hpp>
#include <tad/train/transforms.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tad {

// ---- schedules -------------------------------------------------------------------------------

/// A learning rate or strength as a function of the step number (0 for the first step).
template <class S>
concept schedule = requires(const S& s, std::size_t step) {
  { s(step) } -> std::convertible_to<double>;
};

/// The same value at every step.
struct constant_schedule {
  double value;
  double operator()(std::size_t) const noexcept { return value; }
};

/// `init * rate^(step / decay_steps)` (TensorFlow's ExponentialDecay); with `staircase` the
/// exponent is rounded down.
struct exponential_decay {
  double init = 0;
  double rate = 1;
  std::size_t decay_steps = 0;  // must be set: 0 throws
  bool staircase = false;
  double operator()(std::size_t step) const {
    if (decay_steps == 0) throw std::invalid_argument("tad::exponential_decay: decay_steps must be positive");
    double e = static_cast<double>(step) / static_cast<double>(decay_steps);
    if (staircase) e = std::floor(e);
    return init * std::pow(rate, e);
  }
};

/// `init * ((1 - alpha) (1 + cos(pi t / total)) / 2 + alpha)` with t = min(step, total)
/// (TensorFlow's CosineDecay, optax's cosine_decay_schedule).
struct cosine_decay {
  double init = 0;
  std::size_t total_steps = 0;  // must be set: 0 throws
  double alpha = 0;
  double operator()(std::size_t step) const {
    if (total_steps == 0) throw std::invalid_argument("tad::cosine_decay: total_steps must be positive");
    const double t = static_cast<double>(std::min(step, total_steps)) / static_cast<double>(total_steps);
    return init * ((1 - alpha) * 0.5 * (1 + std::cos(std::numbers::pi * t)) + alpha);
  }
};

/// The gradient-reversal strength of issue 3's schedule, `reversal_strength(step / total,
/// gamma)`, for `reverse_gradient(e, constant_ref(lambda))`.
struct reversal_schedule {
  std::size_t total_steps = 0;  // must be set: 0 throws
  double gamma = 10;
  double operator()(std::size_t step) const {
    if (total_steps == 0) throw std::invalid_argument("tad::reversal_schedule: total_steps must be positive");
    const double p = static_cast<double>(std::min(step, total_steps)) / static_cast<double>(total_steps);
    return reversal_strength(p, gamma);
  }
};

namespace detail {
/// A learning rate: a number or a schedule.
template <class L>
double rate_at(const L& lr, std::size_t step) {
  if constexpr (std::is_arithmetic_v<L>) return static_cast<double>(lr); else return static_cast<double>(lr(step));
}
template <class L>
double checked_rate(const L& lr, std::size_t step, const char* api) {
  const double r = rate_at(lr, step);
  if (!(r >= 0)) throw std::invalid_argument(std::string(api) + ": the learning rate must be a non-negative number (got " + std::to_string(r) + ")");
  return r;
}

/// An optimizer's state: `copies` buffers (Adam's m and v) of one element per parameter
/// element, in one allocation (all zero), so that `all()` is the whole state as one span.
template <class T>
struct state_buffer {
  std::vector<T> data;
  std::vector<std::size_t> offset;
  template <class P>
  state_buffer(const P& params, std::size_t copies) : offset(P::size + 1) {
    for (std::size_t k = 0; k < P::size; ++k) offset[k + 1] = offset[k] + params.length(k);
    data.assign(copies * offset[P::size], T(0));
  }
  /// The k-th parameter's part of buffer c.
  std::span<T> part(std::size_t c, std::size_t k) noexcept {
    return {data.data() + c * offset.back() + offset[k], offset[k + 1] - offset[k]};
  }
  std::span<const T> part(std::size_t c, std::size_t k) const noexcept {
    return {data.data() + c * offset.back() + offset[k], offset[k + 1] - offset[k]};
  }
  std::span<const T> all() const noexcept { return data; }
  /// Copies a saved state in; throws std::invalid_argument (changing nothing) on another size.
  void restore(std::span<const T> saved, const char* api, const char* what) {
    if (saved.size() != data.size())
      throw std::invalid_argument(std::string(api) + ": the saved state holds " + std::to_string(saved.size()) +
                                  " elements, this optimizer's " + std::to_string(data.size()) + " (" + what + ")");
    std::copy(saved.begin(), saved.end(), data.begin());
  }
};

/// Throws std::invalid_argument unless a saved state for an optimizer without one is empty.
template <class T>
void require_empty_state(std::span<const T> saved, const char* api) {
  if (!saved.empty())
    throw std::invalid_argument(std::string(api) + ": the saved state holds " + std::to_string(saved.size()) +
                                " elements; this optimizer keeps none (only its step count)");
}

}  // namespace detail

// ---- optimizers --------------------------------------------------------------------------------

/// `p -= lr * g`.
template <class T, class LR = double>
class sgd {
 public:
  template <class... X>
  sgd(const parameter_set<X...>&, LR lr) : lr_(lr) {
    if constexpr (std::is_arithmetic_v<LR>) detail::checked_rate(lr_, 0, "tad::sgd(params, lr)");
  }
  template <class... X>
  void apply_gradients(const parameter_set<X...>& params, const gradient_set<T>& grads) {
    detail::check_sets(params, grads, "tad::sgd::apply_gradients");
    const T gs = grads.pending_scale();  // a deferred clip or scale, applied in the loop
    const T lr = static_cast<T>(detail::checked_rate(lr_, step_, "tad::sgd::apply_gradients"));
    for (std::size_t k = 0; k < params.size; ++k) {
      T* p = params.data(k).data();
      const T* g = grads.raw(k).data();
      detail::simd_loop<T>(params.length(k), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
        using V = decltype(tag);
        simd::store_any(p + i, simd::load_any<V>(p + i) - V(lr) * (simd::load_any<V>(g + i) * V(gs)));
      });
    }
    ++step_;
  }
  std::size_t steps() const noexcept { return step_; }
  /// The learning rate of the next step; throws std::invalid_argument if it is negative or NaN.
  double learning_rate() const { return detail::checked_rate(lr_, step_, "tad::sgd"); }
  /// The state to checkpoint besides `steps()`: none (an empty span).
  std::span<const T> state() const noexcept { return {}; }
  /// Resumes after `steps` updates (the schedule's position). Throws std::invalid_argument
  /// unless `state` is empty.
  void restore(std::span<const T> state, std::size_t steps) {
    detail::require_empty_state(state, "tad::sgd::restore(state, steps)");
    step_ = steps;
  }

 private:
  LR lr_;
  std::size_t step_ = 0;
};
template <class... X, class LR>
sgd(const parameter_set<X...>&, LR) -> sgd<typename parameter_set<X...>::value_type, LR>;

/// Heavy-ball momentum `b = mu b + g; p -= lr b`, or Nesterov `b = mu b + g; p -= lr (g + mu b)`
/// (PyTorch's SGD with momentum, dampening 0; b starts at 0).
template <class T, class LR = double>
class momentum {
 public:
  template <class... X>
  momentum(const parameter_set<X...>& params, LR lr, double mu, bool nesterov = false)
      : lr_(lr), mu_(mu), nesterov_(nesterov), buf_(params, 1) {
    if constexpr (std::is_arithmetic_v<LR>) detail::checked_rate(lr_, 0, "tad::momentum(params, lr, mu)");
    if (!(mu >= 0 && mu < 1)) throw std::invalid_argument("tad::momentum(params, lr, mu): mu must be in [0, 1)");
  }
  template <class... X>
  void apply_gradients(const parameter_set<X...>& params, const gradient_set<T>& grads) {
    detail::check_sets(params, grads, "tad::momentum::apply_gradients");
    const T gs = grads.pending_scale();
    const T lr = static_cast<T>(detail::checked_rate(lr_, step_, "tad::momentum::apply_gradients"));
    const T mu = static_cast<T>(mu_);
    for (std::size_t k = 0; k < params.size; ++k) {
      T* p = params.data(k).data();
      const T* g = grads.raw(k).data();
      T* b = buf_.part(0, k).data();
      detail::simd_loop<T>(params.length(k), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
        using V = decltype(tag);
        const V gv = simd::load_any<V>(g + i) * V(gs);
        const V bv = V(mu) * simd::load_any<V>(b + i) + gv;
        simd::store_any(b + i, bv);
        const V d = nesterov_ ? gv + V(mu) * bv : bv;
        simd::store_any(p + i, simd::load_any<V>(p + i) - V(lr) * d);
      });
    }
    ++step_;
  }
  std::size_t steps() const noexcept { return step_; }
  /// The learning rate of the next step; throws std::invalid_argument if it is negative or NaN.
  double learning_rate() const { return detail::checked_rate(lr_, step_, "tad::momentum"); }
  /// The momentum buffer of the k-th parameter.
  std::span<const T> buffer(std::size_t k) const noexcept { return buf_.part(0, k); }
  /// The state to checkpoint besides `steps()`: every parameter's buffer, in the set's order.
  std::span<const T> state() const noexcept { return buf_.all(); }
  /// Resumes from a saved `state()` and `steps()` of an optimizer of the same parameters: the
  /// next update is the one the saved run would have made, bit for bit. Throws
  /// std::invalid_argument, changing nothing, when `state` has another size.
  void restore(std::span<const T> state, std::size_t steps) {
    buf_.restore(state, "tad::momentum::restore(state, steps)", "one buffer element per parameter element");
    step_ = steps;
  }

 private:
  LR lr_;
  double mu_;
  bool nesterov_;
  detail::state_buffer<T> buf_;
  std::size_t step_ = 0;
};
template <class... X, class LR>
momentum(const parameter_set<X...>&, LR, double, bool = false) -> momentum<typename parameter_set<X...>::value_type, LR>;

/// Adam's hyperparameters (PyTorch's defaults).
struct adam_options {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  ///< AdamW's decoupled decay (0: plain Adam)
};

/// Adam (Kingma & Ba) and, with `weight_decay > 0`, AdamW (decoupled: `p *= 1 - lr wd` first,
/// as PyTorch). At step t (1 for the first): `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
/// `p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`. The bias corrections
/// `1 / (1 - b^t)` are computed in double, also for float parameters.
template <class T, class LR = double>
class adam {
 public:
  using options = adam_options;
  template <class... X>
  adam(const parameter_set<X...>& params, LR lr, options o = {}) : lr_(lr), o_(o), mv_(params, 2) {
    if constexpr (std::is_arithmetic_v<LR>) detail::checked_rate(lr_, 0, "tad::adam(params, lr)");
    if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1))
      throw std::invalid_argument("tad::adam(params, lr, options): beta1 and beta2 must be in [0, 1)");
    if (!(o.eps >= 0)) throw std::invalid_argument("tad::adam(params, lr, options): eps must be non-negative");
    detail::require_non_negative(o.weight_decay, "tad::adam(params, lr, options): weight_decay");
  }
  template <class... X>
  void apply_gradients(const parameter_set<X...>& params, const gradient_set<T>& grads) {
    detail::check_sets(params, grads, "tad::adam::apply_gradients");
    const T gs = grads.pending_scale();
    const double lrd = detail::checked_rate(lr_, step_, "tad::adam::apply_gradients");
    const double t = static_cast<double>(step_ + 1);
    const T c1 = static_cast<T>(1.0 / (1.0 - std::pow(o_.beta1, t)));  // bias corrections, in double
    const T c2 = static_cast<T>(1.0 / (1.0 - std::pow(o_.beta2, t)));
    const T lr = static_cast<T>(lrd), b1 = static_cast<T>(o_.beta1), b2 = static_cast<T>(o_.beta2);
    const T a1 = static_cast<T>(1.0 - o_.beta1), a2 = static_cast<T>(1.0 - o_.beta2);
    const T eps = static_cast<T>(o_.eps), decay = static_cast<T>(1.0 - lrd * o_.weight_decay);
    const bool decoupled = o_.weight_decay > 0;
    for (std::size_t k = 0; k < params.size; ++k) {
      T* p = params.data(k).data();
      const T* g = grads.raw(k).data();
      T* m = mv_.part(0, k).data();
      T* v = mv_.part(1, k).data();
      detail::simd_loop<T>(params.length(k), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
        using V = decltype(tag);
        const V gv = simd::load_any<V>(g + i) * V(gs);
        const V mv = V(b1) * simd::load_any<V>(m + i) + V(a1) * gv;
        const V vv = V(b2) * simd::load_any<V>(v + i) + V(a2) * (gv * gv);
        simd::store_any(m + i, mv);
        simd::store_any(v + i, vv);
        const V pv = decoupled ? simd::load_any<V>(p + i) * V(decay) : simd::load_any<V>(p + i);
        simd::store_any(p + i, pv - V(lr) * (mv * V(c1)) / (math::sqrt(vv * V(c2)) + V(eps)));
      });
    }
    ++step_;
  }
  std::size_t steps() const noexcept { return step_; }
  /// The learning rate of the next step; throws std::invalid_argument if it is negative or NaN.
  double learning_rate() const { return detail::checked_rate(lr_, step_, "tad::adam"); }
  std::span<const T> first_moment(std::size_t k) const noexcept { return mv_.part(0, k); }
  std::span<const T> second_moment(std::size_t k) const noexcept { return mv_.part(1, k); }
  /// The state to checkpoint besides `steps()`: every first moment, then every second moment.
  std::span<const T> state() const noexcept { return mv_.all(); }
  /// Resumes from a saved `state()` and `steps()` of an optimizer of the same parameters (the
  /// step count drives the bias corrections and the schedule): the next update is the one the
  /// saved run would have made, bit for bit. Throws std::invalid_argument, changing nothing,
  /// when `state` has another size.
  void restore(std::span<const T> state, std::size_t steps) {
    mv_.restore(state, "tad::adam::restore(state, steps)", "m and v: two elements per parameter element");
    step_ = steps;
  }

 private:
  LR lr_;
  options o_;
  detail::state_buffer<T> mv_;  // m, then v
  std::size_t step_ = 0;
};
template <class... X, class LR>
adam(const parameter_set<X...>&, LR) -> adam<typename parameter_set<X...>::value_type, LR>;
template <class... X, class LR>
adam(const parameter_set<X...>&, LR, adam_options) -> adam<typename parameter_set<X...>::value_type, LR>;

/// AdamW: Adam with decoupled weight decay (`options.weight_decay`, 0.01 by default as PyTorch).
template <class... X, class LR>
auto adamw(const parameter_set<X...>& params, LR lr, double weight_decay = 0.01, adam_options o = {}) {
  o.weight_decay = weight_decay;
  return adam<typename parameter_set<X...>::value_type, LR>(params, lr, o);
}

// ---- a whole step --------------------------------------------------------------------------------

/// Transforms and update for gradients already computed (e.g. an accumulated mean):
/// `transform.update(grads, params)`, then, unless a transform skipped the step,
/// `optimizer.apply_gradients(params, grads)`. Returns what the transforms decided. Allocates
/// nothing. A learning rate that the schedule makes invalid for this step throws first.
template <class... X, class T, class Tr, class Opt>
step_action apply_step(const parameter_set<X...>& params, gradient_set<T>& grads, Tr&& transform, Opt& optimizer) {
  if constexpr (!gradient_transform<std::remove_cvref_t<Tr>, T, parameter_set<X...>>) {
    static_assert(gradient_transform<std::remove_cvref_t<Tr>, T, parameter_set<X...>>,
                  "tad::apply_step(params, grads, transform, optimizer): transform needs "
                  "step_action update(gradient_set<T>&, const parameter_set<...>&)");
    return step_action::skip;
  } else {
    if constexpr (requires { optimizer.learning_rate(); }) static_cast<void>(optimizer.learning_rate());
    const step_action a = transform.update(grads, params);
    if (a == step_action::apply) optimizer.apply_gradients(params, grads);
    return a;
  }
}

/// Gradient, transforms, update: `compute_gradients`, then `apply_step(params, grads,
/// transform, optimizer)`. Returns the loss value before the update. Allocates nothing.
/// A learning rate that the schedule makes invalid for this step throws before anything runs.
/// `loss` is an expression or a tad::program (a loss with matrix products).
template <class E, class... X, class T, class Tr, class Opt>
  requires expression<E> || detail::program_like<E>
T train_step(const E& loss, const parameter_set<X...>& params, gradient_set<T>& grads, Tr&& transform, Opt& optimizer) {
  static_assert(gradient_transform<std::remove_cvref_t<Tr>, T, parameter_set<X...>>,
                "tad::train_step(loss, params, grads, transform, optimizer): transform needs "
                "step_action update(gradient_set<T>&, const parameter_set<...>&)");
  if constexpr (requires { optimizer.learning_rate(); }) static_cast<void>(optimizer.learning_rate());
  const T value = compute_gradients(loss, params, grads);
  if (transform.update(grads, params) == step_action::apply) optimizer.apply_gradients(params, grads);
  return value;
}

}  // namespace tad
