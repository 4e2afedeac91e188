#pragma once
/// Parameter leaves: the numbers, `constant_ref`s and literals whose value is known before any
/// loop runs (modifiers' factors and bounds, clamp's bounds), and how to read them.

#include <tad/core/leaves.hpp>

namespace tad::detail {

template <class P>
inline constexpr bool is_parameter_leaf_v = false;
template <class T>
inline constexpr bool is_parameter_leaf_v<scalar_constant<T>> = true;
template <class T>
inline constexpr bool is_parameter_leaf_v<scalar_constant_ref<T>> = true;
template <long long N, long long D>
inline constexpr bool is_parameter_leaf_v<literal<N, D>> = true;

template <class P>
inline constexpr bool is_constant_ref_v = false;
template <class T>
inline constexpr bool is_constant_ref_v<scalar_constant_ref<T>> = true;

template <class P>
inline constexpr bool is_literal_v = false;
template <long long N, long long D>
inline constexpr bool is_literal_v<literal<N, D>> = true;

/// The current value of a parameter leaf in T.
template <class T, class L>
constexpr T parameter_value(const L& l) noexcept {
  if constexpr (is_literal_v<L>) return L::template as<T>(); else return static_cast<T>(l.value());
}

}  // namespace tad::detail
