#pragma once
/// The floating-point type an expression computes in.
///
/// Variables and arrays are strongly typed; scalar constants and literals adapt. Mixing float
/// and double variables or arrays in one expression is ambiguous and rejected.

#include <tad/core/expression.hpp>

#include <type_traits>

namespace tad::detail {

/// Marker for an expression that mixes float and double variables or arrays.
struct ambiguous_type {};

template <class A, class B>
struct join {
  using type = ambiguous_type;
};
template <class A>
struct join<A, A> {
  using type = A;
};
template <class A>
struct join<void, A> {
  using type = A;
};
template <class A>
struct join<A, void> {
  using type = A;
};
template <>
struct join<void, void> {
  using type = void;
};
template <class A>
struct join<ambiguous_type, A> {
  using type = ambiguous_type;
};
template <class A>
struct join<A, ambiguous_type> {
  using type = ambiguous_type;
};
template <>
struct join<ambiguous_type, ambiguous_type> {
  using type = ambiguous_type;
};
template <>
struct join<ambiguous_type, void> {
  using type = ambiguous_type;
};
template <>
struct join<void, ambiguous_type> {
  using type = ambiguous_type;
};

template <class... Ts>
struct join_all {
  using type = void;
};
template <class T, class... Ts>
struct join_all<T, Ts...> {
  using type = typename join<T, typename join_all<Ts...>::type>::type;
};

/// The strong (variable or array) element type of E: void if none, ambiguous_type if mixed.
template <class E>
struct strong_type {
  using type = std::conditional_t<E::is_variable || E::is_array || is_column_v<E>, typename E::value_type, void>;
};
template <class Op, class... C>
struct strong_type<node<Op, C...>> {
  using type = typename join_all<typename strong_type<C>::type...>::type;
};

/// The weak (scalar constant) type of E, or void.
template <class E>
struct weak_type {
  using type = std::conditional_t<E::is_variable || E::is_array || is_column_v<E> || std::is_void_v<typename E::value_type>,
                                  void, typename E::value_type>;
};
template <class A, class B>
struct weak_join {
  using type = std::common_type_t<A, B>;
};
template <class A>
struct weak_join<A, void> {
  using type = A;
};
template <class B>
struct weak_join<void, B> {
  using type = B;
};
template <>
struct weak_join<void, void> {
  using type = void;
};
template <class A, class B>
using weak_join_t = typename weak_join<A, B>::type;
template <class... Ts>
struct weak_all {
  using type = void;
};
template <class T, class... Ts>
struct weak_all<T, Ts...> {
  using type = weak_join_t<T, typename weak_all<Ts...>::type>;
};
template <class Op, class... C>
struct weak_type<node<Op, C...>> {
  using type = typename weak_all<typename weak_type<C>::type...>::type;
};

template <class S, class W>
struct resolve {
  using type = S;
};
template <class W>
struct resolve<void, W> {
  using type = std::conditional_t<std::is_floating_point_v<W>, W, double>;
};
template <>
struct resolve<void, void> {
  using type = double;
};

template <class E>
inline constexpr bool mixes_precisions_v =
    std::is_same_v<typename strong_type<E>::type, ambiguous_type>;

}  // namespace tad::detail

namespace tad {

/// The element type `E` computes in: float or double.
template <expression E>
using value_type_t = typename detail::resolve<typename detail::strong_type<std::remove_cvref_t<E>>::type,
                                              typename detail::weak_type<std::remove_cvref_t<E>>::type>::type;

}  // namespace tad
