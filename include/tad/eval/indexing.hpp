#pragma once
/// The numbering of a tree's reduction slots and loop-invariant roots, child by child: plain
/// constexpr code over types, shared by the analysis (extents.hpp, slots.hpp) and the
/// per-element code (elementwise.hpp).

#include <tad/core/expression.hpp>
#include <tad/detail/static_for.hpp>

#include <cstddef>

namespace tad::detail {

/// Reduction slot of the K-th child of a node whose first slot is `Slot`.
template <class N, std::size_t K, std::size_t Slot>
constexpr std::size_t child_slot() {
  std::size_t s = Slot;
  static_for<K>([&](auto j) { s += props<child_t<j.value, N>>::reductions; });
  return s;
}

/// Loop invariant slot of the K-th child of a node whose first one is `Root`.
template <class N, std::size_t K, std::size_t Root>
constexpr std::size_t child_root() {
  std::size_t s = Root;
  static_for<K>([&](auto j) { s += props<child_t<j.value, N>>::roots; });
  return s;
}

}  // namespace tad::detail
