#pragma once
/// The first stage of a training step: parameters, the storage for their gradients, and
/// `compute_gradients` (doc/training.md).
///
///   std::vector<float> wv(n); float bv = 0;
///   auto w = tad::var<"w">(wv);
///   auto b = tad::var<"b">(bv);
///   tad::parameter_set params(w, b);           // the trainable variables (modifiable storage)
///   tad::gradient_set grads(params);           // gradient storage, allocated once
///   float loss = tad::compute_gradients(loss_expression, params, grads);  // no allocation

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/eval/api.hpp>
#include <tad/simd/batch.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tad {

/// The parameters a training step updates: variables (scalars or arrays, one element type)
/// that view modifiable storage. A scalar variable must be bound to an lvalue. The set holds
/// the variables (views), not the data; `data(k)` is the k-th parameter's storage.
template <class... X>
class parameter_set {
  static_assert(sizeof...(X) > 0, "tad::parameter_set(x...): at least one parameter");
  static_assert((variable<X> && ...), "tad::parameter_set(x...): every parameter must be a variable made by tad::var");
  static_assert(detail::unique_names_v<X...>, "tad::parameter_set(x...): a parameter is listed twice");
  static_assert(!(detail::is_strided_v<X> || ...),
                "tad::parameter_set(x...): a parameter must be contiguous storage; a strided view "
                "(tad::var<name>(p, rows, cols, ld)) cannot be one: view the whole matrix");
  static_assert(!(detail::is_col_major_v<X> || ...),
                "tad::parameter_set(x...): a parameter must be row-major contiguous storage, the layout "
                "of its gradient; a column-major view (tad::var<name>(tad::col_major(p, rows, cols))) "
                "cannot be one: view its storage as the transposed row-major matrix, tad::var<name>(p, cols, rows)");
  static_assert(!(detail::is_gathered_v<X> || ...),
                "tad::parameter_set(x...): a parameter must be contiguous storage; a column of a "
                "matrix (tad::var<name>(tad::column_of(m, k))) cannot be one: view the whole matrix");

 public:
  using value_type = std::tuple_element_t<0, std::tuple<typename X::value_type...>>;
  static_assert((std::is_same_v<typename X::value_type, value_type> && ...),
                "tad::parameter_set(x...): all parameters must have one element type (float or double)");
  static constexpr std::size_t size = sizeof...(X);

  /// Throws std::invalid_argument for a scalar parameter bound to an rvalue (a copy that an
  /// update could not reach).
  constexpr explicit parameter_set(const X&... x) : vars_(x...) {
    std::size_t k = 0;
    ((init(k++, x)), ...);
  }

  /// From a tuple of variables (e.g. built by a fold over indices).
  constexpr explicit parameter_set(const std::tuple<X...>& t)
      : parameter_set(std::make_from_tuple<parameter_set>(t)) {}

  constexpr const std::tuple<X...>& variables() const noexcept { return vars_; }
  /// The storage of the k-th parameter (its length for arrays, 1 for scalars).
  std::span<value_type> data(std::size_t k) const noexcept { return {ptr_[k], len_[k]}; }
  std::size_t length(std::size_t k) const noexcept { return len_[k]; }
  std::string_view name(std::size_t k) const noexcept { return names_[k]; }
  /// Total number of scalars.
  std::size_t total() const noexcept {
    std::size_t t = 0;
    for (std::size_t n : len_) t += n;
    return t;
  }

 private:
  template <class V>
  constexpr void init(std::size_t k, const V& v) {
    names_[k] = V::name.view();
    if constexpr (V::is_array) {
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): parameters view modifiable storage (documented)
      ptr_[k] = const_cast<value_type*>(v.data);
      len_[k] = v.size;
    } else {
      if (v.src == nullptr)
        throw std::invalid_argument("tad::parameter_set: scalar parameter '" + std::string(V::name.view()) +
                                    "' is a copy; bind it to an lvalue so updates reach it");
      ptr_[k] = const_cast<value_type*>(v.src);  // NOLINT(cppcoreguidelines-pro-type-const-cast): as above
      len_[k] = 1;
    }
  }

  std::tuple<X...> vars_;
  std::array<value_type*, sizeof...(X)> ptr_{};
  std::array<std::size_t, sizeof...(X)> len_{};
  std::array<std::string_view, sizeof...(X)> names_{};
};

template <class... X>
parameter_set(const std::tuple<X...>&) -> parameter_set<X...>;

namespace detail {
/// The one loop shape of the training stages: `f(i, V{})` for every full batch
/// (V = simd::batch<T>) and then every tail element (V = T) of [0, n).
template <class T, class F>
TAD_INLINE void simd_loop(std::size_t n, F&& f) {
  constexpr std::size_t W = simd::batch<T>::size;
  std::size_t i = 0;
  for (; i + W <= n; i += W) f(i, simd::batch<T>{});
  for (; i < n; ++i) f(i, T{});
}
/// s[i] = f(s[i]) over batches and the tail, in place.
template <class T, class F>
void transform_each(std::span<T> s, F&& f) {
  T* p = s.data();
  simd_loop<T>(s.size(), [&](std::size_t i, auto tag) TAD_INLINE_LAMBDA {
    using V = decltype(tag);
    simd::store_any(p + i, f(simd::load_any<V>(p + i)));
  });
}
}  // namespace detail

/// Storage for the gradients of a parameter set: one contiguous buffer (allocated once, or the
/// caller's), cut into one span per parameter.
///
/// Transforms that only scale every gradient (clip_by_global_norm, scale) do not rewrite the
/// buffer: they multiply a pending factor, which the optimizer applies in the registers of its
/// own loop, so a clip costs one reading pass (the norm) instead of two plus a write. Reading
/// the gradients through `operator[]` or `all()` applies a pending factor first, so every
/// other reader sees the scaled values; `raw`, `pending_scale` and `defer_scale` are for
/// transforms and optimizers that fuse it (doc/training.md).
template <class T>
class gradient_set {
 public:
  /// Allocates the storage for `params`' gradients.
  template <class... X>
  explicit gradient_set(const parameter_set<X...>& params) : lengths_(params.size) {
    for (std::size_t k = 0; k < params.size; ++k) lengths_[k] = params.length(k);
    own_.resize(params.total());
    cut(own_.data());
  }
  /// Uses the caller's storage (at least params.total() elements; not owned).
  template <class... X>
  gradient_set(const parameter_set<X...>& params, std::span<T> storage) : lengths_(params.size) {
    for (std::size_t k = 0; k < params.size; ++k) lengths_[k] = params.length(k);
    if (storage.size() < params.total())
      throw std::invalid_argument("tad::gradient_set(params, storage): storage holds " + std::to_string(storage.size()) +
                                  " elements, the parameters " + std::to_string(params.total()));
    cut(storage.data());
  }
  gradient_set(const gradient_set&) = delete;  // the spans point into own_
  gradient_set& operator=(const gradient_set&) = delete;
  gradient_set(gradient_set&&) = delete;
  gradient_set& operator=(gradient_set&&) = delete;
  ~gradient_set() = default;

  std::size_t size() const noexcept { return spans_.size(); }
  /// The k-th gradient (a pending scale is applied first).
  std::span<T> operator[](std::size_t k) {
    settle();
    return spans_[k];
  }
  /// Every gradient as one span, parameter after parameter (a pending scale is applied first).
  std::span<T> all() {
    settle();
    return {base_, total_};
  }

  /// The stored values of the k-th gradient, without the pending scale.
  std::span<T> raw(std::size_t k) const noexcept { return spans_[k]; }
  std::span<T> raw_all() const noexcept { return {base_, total_}; }
  /// The factor the stored values still have to be multiplied by (1 when none).
  T pending_scale() const noexcept { return pending_; }
  /// Multiplies every gradient by s, lazily.
  void defer_scale(T s) noexcept { pending_ *= s; }
  /// Forgets the pending scale (the stored values are about to be overwritten).
  void reset_scale() noexcept { pending_ = T(1); }
  /// Applies the pending scale to the stored values now.
  void settle() {
    if (pending_ == T(1)) return;
    const T s = pending_;
    detail::transform_each(raw_all(), [&](auto v) { return v * decltype(v)(s); });
    pending_ = T(1);
  }

 private:
  void cut(T* p) {
    base_ = p;
    total_ = 0;
    spans_.clear();
    spans_.reserve(lengths_.size());
    for (std::size_t n : lengths_) {
      spans_.emplace_back(p + total_, n);
      total_ += n;
    }
  }
  std::vector<std::size_t> lengths_;
  std::vector<T> own_;
  std::vector<std::span<T>> spans_;
  T* base_ = nullptr;
  std::size_t total_ = 0;
  T pending_ = T(1);
};
template <class... X>
gradient_set(const parameter_set<X...>&) -> gradient_set<typename parameter_set<X...>::value_type>;
template <class... X, class T>
gradient_set(const parameter_set<X...>&, std::span<T>) -> gradient_set<T>;

namespace detail {
/// Throws std::invalid_argument unless grads has one gradient of the right length per parameter.
template <class P, class T>
void check_sets(const P& params, const gradient_set<T>& grads, const char* api) {
  if (grads.size() != P::size)
    throw std::invalid_argument(std::string(api) + ": " + std::to_string(P::size) + " parameters but " +
                                std::to_string(grads.size()) + " gradients");
  for (std::size_t k = 0; k < P::size; ++k)
    if (grads.raw(k).size() != params.length(k))
      throw std::invalid_argument(std::string(api) + ": the gradient of '" + std::string(params.name(k)) + "' has " +
                                  std::to_string(grads.raw(k).size()) + " elements, the parameter " +
                                  std::to_string(params.length(k)));
}
}  // namespace detail

namespace detail {
/// A tad::program (eval/program.hpp): evaluates an expression with matrix products.
template <class P>
concept program_like = requires(const P& p) { p.workspace_size(); };
}  // namespace detail

/// The loss value; every parameter's gradient goes into `grads`. Allocates nothing. Throws
/// (before writing anything) when the sets do not match. `loss` is an expression or a
/// tad::program (its own workspace: for a loss with matrix products, nothing allocated either).
template <class E, class... X, class T>
  requires expression<E> || detail::program_like<E>
T compute_gradients(const E& loss, const parameter_set<X...>& params, gradient_set<T>& grads) {
  static_assert(std::is_same_v<T, typename parameter_set<X...>::value_type>,
                "tad::compute_gradients(loss, params, grads): grads must have the parameters' element type");
  detail::check_sets(params, grads, "tad::compute_gradients");
  grads.reset_scale();
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    const auto target = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
      const auto& x = std::get<J>(params.variables());
      if constexpr (std::remove_cvref_t<decltype(x)>::is_array) return wrt(x, grads.raw(J));
      else return wrt(x, grads.raw(J)[0]);
    };
    if constexpr (detail::program_like<E>) return loss.grad_into(target(std::integral_constant<std::size_t, K>{})...);
    else return grad_into(loss, target(std::integral_constant<std::size_t, K>{})...);
  }(std::index_sequence_for<X...>{});
}

}  // namespace tad
