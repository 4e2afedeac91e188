#pragma once
/// A string usable as a template argument: the compile-time identity of a variable.

#include <cstddef>
#include <string_view>
#include <utility>

namespace tad {

/// `fixed_string<N>` holds a string literal of N-1 characters; `var<"x">` uses it as a name.
template <std::size_t N>
struct fixed_string {
  char chars[N]{};
  constexpr fixed_string(const char (&s)[N]) noexcept {  // NOLINT: implicit by design
    for (std::size_t k = 0; k < N; ++k) chars[k] = s[k];
  }
  constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
};

namespace detail {
template <fixed_string A, fixed_string B>
inline constexpr bool same_name = A.view() == B.view();

/// Is Name one a user may give a variable? A name beginning with '@' is tad's own: the leaves
/// standing for matrix products' results (`@prod000`), an operand's canonical names (`@v00001`),
/// a loop's placeholders (`@carry`, `@in`, ops/scan.hpp).
template <fixed_string Name>
inline constexpr bool user_name_v = Name.view().empty() || Name.view()[0] != '@';
/// The slot of a loop's placeholder named n in its binding (eval/program/scan.hpp): a scan's
/// carry (0; of a tuple of carries, the others 4, 5, 6), a scan's step input or a map's first
/// slice (1), a map's second and third slices (2, 3); -1 for any other name.
constexpr int placeholder_slot(std::string_view n) noexcept {
  return n == "@carry" ? 0 : n == "@in" ? 1 : n == "@in2" ? 2 : n == "@in3" ? 3
         : n == "@carry2" ? 4 : n == "@carry3" ? 5 : n == "@carry4" ? 6 : -1;
}
/// tad::var's check of its name (one message for all its overloads).
template <fixed_string Name>
constexpr void require_user_name() {
  static_assert(user_name_v<Name>, "tad::var<name>: a name beginning with '@' is reserved for tad's own "
                                   "leaves (the results of matrix products)");
}

/// A variable's name spelled as a type for diagnostics: `variable_name<'x'>`. Both compilers
/// print a char argument as a character, while clang 14 prints a fixed_string argument as an
/// aggregate of numbers (`fixed_string<2>{{120, 0}}`). Errors about one variable are raised in
/// a function instantiated with this type, so the name shows in the error.
template <char... C>
struct variable_name {};
template <fixed_string Name, class = std::make_index_sequence<Name.view().size()>>
struct name_type;
template <fixed_string Name, std::size_t... K>
struct name_type<Name, std::index_sequence<K...>> {
  using type = variable_name<Name.chars[K]...>;
};
/// `variable_name<'x'>` for the name "x".
template <fixed_string Name>
using name_type_t = typename name_type<Name>::type;
}  // namespace detail

}  // namespace tad
