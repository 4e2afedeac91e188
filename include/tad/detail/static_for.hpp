#pragma once
/// Compile-time loops.

#include <tad/config.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad::detail {

/// Calls `f(std::integral_constant<std::size_t, K>{})` for K = 0 .. N-1, in order.
template <std::size_t N, class F>
TAD_INLINE constexpr void static_for(F&& f) {
  [&]<std::size_t... K>(std::index_sequence<K...>) TAD_INLINE_LAMBDA {
    (f(std::integral_constant<std::size_t, K>{}), ...);
  }(std::make_index_sequence<N>{});
}

template <class T>
inline constexpr bool always_false = false;

}  // namespace tad::detail
