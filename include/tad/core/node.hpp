#pragma once
/// `node<Op, Children...>`: an interior expression node; the op and the children are types.

#include <cstddef>
#include <type_traits>
#include <utility>

namespace tad {

namespace detail {
struct node_kind {};
struct leaf_kind {};
}  // namespace detail

/// An op applied to one, two or three child expressions (four: a map's). Children are plain members so nodes
/// stay constexpr aggregates; `op` holds the op's parameters (empty for most ops).
template <class Op, class... C>
struct node;

template <class Op, class A>
struct node<Op, A> {
  using tad_kind = detail::node_kind;
  using op_type = Op;
  static constexpr std::size_t arity = 1;
  A arg;
  [[no_unique_address]] Op op{};
};

template <class Op, class L, class R>
struct node<Op, L, R> {
  using tad_kind = detail::node_kind;
  using op_type = Op;
  static constexpr std::size_t arity = 2;
  L lhs;
  R rhs;
  [[no_unique_address]] Op op{};
};

template <class Op, class A, class B, class C>
struct node<Op, A, B, C> {
  using tad_kind = detail::node_kind;
  using op_type = Op;
  static constexpr std::size_t arity = 3;
  A a;
  B b;
  C c;
  [[no_unique_address]] Op op{};
};

/// Four children: only a map of three slices (ops/scan.hpp), which the engine never sees.
template <class Op, class A, class B, class C, class D>
struct node<Op, A, B, C, D> {
  using tad_kind = detail::node_kind;
  using op_type = Op;
  static constexpr std::size_t arity = 4;
  A a;
  B b;
  C c;
  D d;
  [[no_unique_address]] Op op{};
};

namespace detail {

/// The K-th child of a node.
template <std::size_t K, class N>
constexpr const auto& child(const N& n) noexcept {
  if constexpr (N::arity == 1) {
    return n.arg;
  } else if constexpr (N::arity == 2) {
    if constexpr (K == 0) return n.lhs; else return n.rhs;
  } else {
    if constexpr (K == 0) return n.a;
    else if constexpr (K == 1) return n.b;
    else if constexpr (K == 2) return n.c;
    else return n.d;
  }
}
template <std::size_t K, class N>
constexpr auto& child(N& n) noexcept {
  if constexpr (N::arity == 1) {
    return n.arg;
  } else if constexpr (N::arity == 2) {
    if constexpr (K == 0) return n.lhs; else return n.rhs;
  } else {
    if constexpr (K == 0) return n.a;
    else if constexpr (K == 1) return n.b;
    else if constexpr (K == 2) return n.c;
    else return n.d;
  }
}

template <std::size_t K, class N>
using child_t = std::remove_cvref_t<decltype(child<K>(std::declval<const N&>()))>;

}  // namespace detail
}  // namespace tad
