#pragma once
/// The structural zero: the adjoint of an input that no gradient reaches.

namespace tad {

/// A gradient that is zero by construction. Backward rules return it for inputs that get no
/// gradient; the engine then generates no code for that input's subtree.
struct zero {
  template <class T>
  constexpr explicit operator T() const noexcept {
    return T(0);
  }
};

template <class T>
inline constexpr bool is_zero_v = false;
template <>
inline constexpr bool is_zero_v<zero> = true;

}  // namespace tad
