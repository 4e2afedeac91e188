#pragma once
/// `reversal_strength(p, gamma)`: the usual schedule of a gradient reversal layer's lambda.

#include <tad/simd/math.hpp>

#include <stdexcept>
#include <type_traits>

namespace tad {

/// `2 / (1 + exp(-gamma p)) - 1` for training progress p in [0, 1]: 0 at p = 0, rising to
/// almost 1 (Ganin & Lempitsky). Throws std::invalid_argument for p outside [0, 1] or NaN.
template <class P, class G = P>
  requires std::is_arithmetic_v<P> && std::is_arithmetic_v<G>
constexpr auto reversal_strength(P p, G gamma = G(10)) {
  using T = std::conditional_t<std::is_same_v<P, float>, float, double>;
  const T tp = static_cast<T>(p), tg = static_cast<T>(gamma);
  if (!(tp >= T(0) && tp <= T(1)))
    throw std::invalid_argument("tad::reversal_strength(p, gamma): p must be in [0, 1]");
  return T(2) / (T(1) + math::exp(-tg * tp)) - T(1);
}

}  // namespace tad
