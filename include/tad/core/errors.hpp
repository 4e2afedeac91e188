#pragma once
/// Exceptions thrown for bad runtime input.

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tad {

/// Arrays of different lengths in one expression, or an output buffer of the wrong length.
/// Thrown before anything is written.
class shape_error : public std::invalid_argument {
 public:
  /// what() is `what + ": expected length <expected>, got length <got>"`.
  shape_error(const std::string& what, std::size_t expected, std::size_t got)
      : std::invalid_argument(what + ": expected length " + std::to_string(expected) +
                              ", got length " + std::to_string(got)),
        expected_(expected),
        got_(got) {}
  /// what() is `message` as it is (it already names the lengths and what has them).
  static shape_error with_message(const std::string& message, std::size_t expected, std::size_t got) {
    return {message, expected, got, 0};
  }
  std::size_t expected() const noexcept { return expected_; }
  std::size_t got() const noexcept { return got_; }

 private:
  shape_error(const std::string& message, std::size_t expected, std::size_t got, int /*verbatim*/)
      : std::invalid_argument(message), expected_(expected), got_(got) {}
  std::size_t expected_;
  std::size_t got_;
};

}  // namespace tad
