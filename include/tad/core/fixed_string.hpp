#pragma once
/// A string usable as a template argument: the compile-time identity of a variable.

#include <cstddef>
#include <string_view>

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
}  // namespace detail

}  // namespace tad
