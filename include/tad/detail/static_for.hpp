#pragma once
/// Compile-time loops.

#include <tad/config.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad::detail {

template <class F, std::size_t... K>
TAD_INLINE constexpr void static_for_each(F& f, std::index_sequence<K...>) {
  (f(std::integral_constant<std::size_t, K>{}), ...);
}

/// Calls `f(std::integral_constant<std::size_t, K>{})` for K = 0 .. N-1, in order. (Two
/// function templates, no closure type: the engine has thousands of these loops per TU, and a
/// lambda here was a class instantiation each; doc/compile-times.md.)
template <std::size_t N, class F>
TAD_INLINE constexpr void static_for(F&& f) {
  static_for_each(f, std::make_index_sequence<N>{});
}

template <class T>
inline constexpr bool always_false = false;

}  // namespace tad::detail
