#pragma once
/// Canonical variable names for a program's operand expressions (eval/program.hpp,
/// doc/decisions.md 49).
///
/// The program runs an engine per operand expression of a product: its forward into a buffer
/// and its vector-Jacobian product. An engine is a type of the expression, and a variable's
/// name is part of that type, so the layers of an MLP, `tanh(X W1 + b1)` and `tanh(H W2 + b2)`,
/// were two engines each although they compute the same thing on other data. Renaming each
/// variable of an operand after the position of its first leaf (`@v00003`) makes them one
/// type: the engines of a model's repeated layers are instantiated once. A variable used twice
/// keeps one name (its gradient still sums), and two variables keep two. The leaves standing
/// for products' results (`@prodK`, eval/products.hpp) are renamed the same way: `@prod001` in
/// `tanh(@prod001 + b2)` (whose subtree holds two products) is `@v00000`, as `@prod000` in
/// `tanh(@prod000 + b1)`. A name beginning with '@' is tad's; tad::var refuses one.

#include <tad/core/col_major.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/leaf_types.hpp>
#include <tad/core/node.hpp>
#include <tad/eval/extents.hpp>
#include <tad/eval/targets.hpp>
#include <tad/gradient/rules.hpp>

#include <cstddef>
#include <utility>

namespace tad::detail {

/// `@vNNNNN`: the canonical name of the variable whose first leaf is leaf K.
template <std::size_t K>
struct canonical_name_chars {
  static_assert(K < 100000, "tad: an operand expression of a matrix product holds more than 100000 leaves");
  static constexpr char value[8] = {'@',
                                    'v',
                                    char('0' + K / 10000),
                                    char('0' + K / 1000 % 10),
                                    char('0' + K / 100 % 10),
                                    char('0' + K / 10 % 10),
                                    char('0' + K % 10),
                                    '\0'};
};
template <std::size_t K>
inline constexpr fixed_string<8> canonical_name{canonical_name_chars<K>::value};

/// Does leaf L name a variable (a variable, a product's result, or a column of one)?
template <class L>
constexpr bool renamed_variable() {
  using V = named_leaf_t<L>;
  if constexpr (requires { V::name; }) return V::is_variable; else return false;
}

/// The position of the first leaf of E (whose first leaf is leaf I) naming the variable Name;
/// -1 if none does.
template <fixed_string Name, class E, std::size_t I>
constexpr std::size_t first_leaf_named() {
  if constexpr (is_leaf_v<E>) {
    if constexpr (renamed_variable<E>()) {
      if constexpr (same_name<named_leaf_t<E>::name, Name>) return I;
    }
    return static_cast<std::size_t>(-1);
  } else {
    std::size_t found = static_cast<std::size_t>(-1);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((found = found != static_cast<std::size_t>(-1) ? found
                                                      : first_leaf_named<Name, child_t<K, E>, child_leaf_offset<E, K, I>()>()),
       ...);
    }(std::make_index_sequence<E::arity>{});
    return found;
  }
}

/// Leaf l named `N`.
template <fixed_string N, fixed_string Name, class T, bool Bound>
constexpr scalar_var<N, T, Bound> renamed(const scalar_var<Name, T, Bound>& l) {
  return {l.src, l.val};
}
template <fixed_string N, fixed_string Name, class T>
constexpr array_var<N, T> renamed(const array_var<Name, T>& l) {
  return {l.data, l.size};
}
template <fixed_string N, fixed_string Name, class T>
constexpr matrix_var<N, T> renamed(const matrix_var<Name, T>& l) {
  return {l.data, l.size, l.rows, l.cols};
}
template <fixed_string N, fixed_string Name, class T>
constexpr strided_matrix_var<N, T> renamed(const strided_matrix_var<Name, T>& l) {
  return {l.data, l.size, l.rows, l.cols, l.ld};
}
template <fixed_string N, fixed_string Name, class T>
constexpr strided_array_var<N, T> renamed(const strided_array_var<Name, T>& l) {
  return {l.data, l.size, l.stride};
}
template <fixed_string N, fixed_string Name, class T>
constexpr col_major_matrix_var<N, T> renamed(const col_major_matrix_var<Name, T>& l) {
  return {l.data, l.size, l.rows, l.cols, l.ld};
}
template <fixed_string N, class L>
constexpr auto renamed(const column_leaf<L>& l) {
  using V = decltype(renamed<N>(l.vec));
  return column_leaf<V>{{}, renamed<N>(l.vec), l.val};
}

/// Variable v of Root under its canonical name in Root.
template <class Root, class V>
constexpr auto canonical_variable(const V& v) {
  return renamed<canonical_name<first_leaf_named<V::name, Root, 0>()>>(v);
}
/// A gradient target of a variable of Root, for Root's canonical form.
template <class Root, class X, class T>
constexpr auto canonical_target(const wrt_target<X, T>& t) {
  using V = decltype(canonical_variable<Root>(t.var));
  return wrt_target<V, T>{canonical_variable<Root>(t.var), t.data, t.size, t.shaped, t.rows, t.cols, t.row_stride,
                          t.col_stride};
}

/// e (a subtree of Root) with every variable under its canonical name in Root.
template <class Root, class E>
constexpr auto canonical_from(const E& e) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (renamed_variable<E>()) {
      return renamed<canonical_name<first_leaf_named<named_leaf_t<E>::name, Root, 0>()>>(e);
    } else {
      return e;
    }
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(e.op, canonical_from<Root>(child<K>(e))...);
    }(std::make_index_sequence<E::arity>{});
  }
}
/// E with canonical variable names.
template <class E>
constexpr auto canonical(const E& e) {
  return canonical_from<E>(e);
}

}  // namespace tad::detail
