#pragma once
/// `adjoints{da, db, ...}`: what a backward rule of a multi-input op returns, one per input.

#include <cstddef>

namespace tad {

/// The adjoints of an op's inputs, in input order. An entry may be `tad::zero{}`.
template <class... A>
struct adjoints;

template <class A>
struct adjoints<A> {
  A a0;
};
template <class A, class B>
struct adjoints<A, B> {
  A a0;
  B a1;
};
template <class A, class B, class C>
struct adjoints<A, B, C> {
  A a0;
  B a1;
  C a2;
};
template <class... A>
adjoints(A...) -> adjoints<A...>;

namespace detail {
/// The K-th adjoint of a backward rule's result (a single value for one-input ops).
template <std::size_t K, class R>
constexpr const auto& adjoint_at(const R& r) noexcept {
  if constexpr (requires { r.a0; }) {
    if constexpr (K == 0) return r.a0;
    else if constexpr (K == 1) return r.a1;
    else return r.a2;
  } else {
    return r;
  }
}
}  // namespace detail
}  // namespace tad
