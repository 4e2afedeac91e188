#pragma once
/// Gradient accumulation over minibatches: `accumulate(into, from)` adds one gradient set to
/// another, and `gradient_accumulator` computes each minibatch's gradients and sums them
/// (doc/training.md, "Accumulating gradients").
///
///   tad::gradient_accumulator acc(params);         // the sum and one minibatch's gradients
///   for (...) { refill the minibatch; acc.add(loss, params); }   // no allocation
///   tad::apply_step(params, acc.mean(), transform, opt);          // optimizers.hpp
///   acc.reset();

#include <tad/config.hpp>
#include <tad/simd/batch.hpp>
#include <tad/train/parameters.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tad {

namespace detail {
/// Throws std::invalid_argument unless a and b hold as many gradients, of the same lengths.
template <class T>
void check_same_layout(const gradient_set<T>& into, const gradient_set<T>& from, const char* api) {
  if (into.size() != from.size())
    throw std::invalid_argument(std::string(api) + ": `from` holds " + std::to_string(from.size()) +
                                " gradients, `into` " + std::to_string(into.size()));
  for (std::size_t k = 0; k < into.size(); ++k)
    if (into.raw(k).size() != from.raw(k).size())
      throw std::invalid_argument(std::string(api) + ": gradient " + std::to_string(k) + " has " +
                                  std::to_string(from.raw(k).size()) + " elements in `from`, " +
                                  std::to_string(into.raw(k).size()) + " in `into`");
}
/// into = (Add ? into * (into's pending scale) : 0) + from * (from's pending scale), in one
/// SIMD pass; into's pending scale is 1 afterwards.
template <bool Add, class T>
void combine(gradient_set<T>& into, const gradient_set<T>& from) {
  const T si = into.pending_scale(), sf = from.pending_scale();
  T* a = into.raw_all().data();
  const T* b = from.raw_all().data();
  simd_loop<T>(into.raw_all().size(), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
    using V = decltype(tag);
    if constexpr (Add) simd::store_any(a + i, simd::load_any<V>(a + i) * V(si) + simd::load_any<V>(b + i) * V(sf));
    else simd::store_any(a + i, simd::load_any<V>(b + i) * V(sf));
  });
  into.reset_scale();
}
}  // namespace detail

/// `into += from`, gradient by gradient (TensorFlow's `accum.assign_add(g)`), in one SIMD pass
/// that applies both sets' pending scales. Allocates nothing. Throws std::invalid_argument,
/// before writing anything, when the sets hold another number of gradients or one of another
/// length.
template <class T>
void accumulate(gradient_set<T>& into, const gradient_set<T>& from) {
  detail::check_same_layout(into, from, "tad::accumulate(into, from)");
  detail::combine<true>(into, from);
}

/// Sums the gradients of several minibatches into one gradient set, for an optimizer step on a
/// batch larger than one evaluation should hold (PyTorch's `.grad`, summed by `backward()`
/// until `zero_grad()`). Two gradient sets are allocated at construction; `add` allocates
/// nothing. The first `add` after construction or `reset()` writes the sum directly.
template <class T>
class gradient_accumulator {
 public:
  template <class... X>
  explicit gradient_accumulator(const parameter_set<X...>& params) : sum_(params), batch_(params) {}

  /// Computes `loss`'s gradients (`compute_gradients`) and adds them to the sum; returns the
  /// loss value. Throws as `compute_gradients` does, and std::logic_error after `mean()`.
  template <class E, class... X>
    requires expression<E> || detail::program_like<E>
  T add(const E& loss, const parameter_set<X...>& params) {
    check_open("tad::gradient_accumulator::add(loss, params)");
    if (count_ == 0) {
      const T value = compute_gradients(loss, params, sum_);
      count_ = 1;
      return value;
    }
    const T value = compute_gradients(loss, params, batch_);
    detail::combine<true>(sum_, batch_);
    ++count_;
    return value;
  }
  /// Adds gradients computed elsewhere (their pending scale applied). Throws as `accumulate`.
  void add(const gradient_set<T>& g) {
    check_open("tad::gradient_accumulator::add(grads)");
    detail::check_same_layout(sum_, g, "tad::gradient_accumulator::add(grads)");
    if (count_ == 0) detail::combine<false>(sum_, g); else detail::combine<true>(sum_, g);
    ++count_;
  }

  /// The number of `add` calls since construction or `reset()`.
  std::size_t count() const noexcept { return count_; }
  /// The sum of the added gradients (zero when none was added). After `mean()`, the mean.
  gradient_set<T>& sum() {
    if (count_ == 0) clear();
    return sum_;
  }
  /// The sum divided by `count()`, as a pending factor `1 / count()` that the optimizer's loop
  /// applies (gradient_set). Divides once: calling it again returns the same mean. Throws
  /// std::logic_error when nothing was added.
  gradient_set<T>& mean() {
    if (count_ == 0)
      throw std::logic_error("tad::gradient_accumulator::mean(): no gradients were added since construction or reset()");
    if (!averaged_) sum_.defer_scale(static_cast<T>(1.0 / static_cast<double>(count_)));
    averaged_ = true;
    return sum_;
  }
  /// Starts a new sum (PyTorch's `zero_grad()`); writes nothing.
  void reset() noexcept {
    count_ = 0;
    averaged_ = false;
  }

 private:
  void check_open(const char* api) const {
    if (averaged_)
      throw std::logic_error(std::string(api) + ": the sum was already divided by mean(); call reset() first");
  }
  void clear() {
    detail::transform_each(sum_.raw_all(), [](auto v) { return decltype(v)(0); });
    sum_.reset_scale();
  }
  gradient_set<T> sum_, batch_;
  std::size_t count_ = 0;
  bool averaged_ = false;
};
template <class... X>
gradient_accumulator(const parameter_set<X...>&) -> gradient_accumulator<typename parameter_set<X...>::value_type>;

}  // namespace tad
