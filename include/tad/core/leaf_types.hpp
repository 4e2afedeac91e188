#pragma once
/// The leaf types: variables (differentiable, named), runtime constants, compile-time literals and
/// strided views, with their traits (the functions that make them: core/leaves.hpp).

#include <tad/core/fixed_string.hpp>
#include <tad/core/node.hpp>

#include <concepts>
#include <cstddef>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tad {

/// The element types tad differentiates.
template <class T>
concept real = std::same_as<T, float> || std::same_as<T, double>;

/// A differentiable scalar named `Name`. Bound to an lvalue (`Bound`, what `var<"x">(x)` makes
/// of an lvalue x) it reads that lvalue each time an expression is evaluated (so it sees
/// updates); bound to an rvalue it holds a copy. That the binding is part of the type saves
/// a test per read: the fixed cost of a call on scalars (doc/benchmarks.md, "Fixed costs").
template <fixed_string Name, real T, bool Bound = false>
struct scalar_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = true;
  static constexpr bool bound = Bound;
  /// Bound: the lvalue (an engine's frozen copy points it at its own val, engine/state.hpp).
  const T* src = nullptr;
  T val{};
  /// The current value (reads the bound lvalue, if any).
  constexpr T value() const noexcept {
    if constexpr (Bound) return *src;
    else return val;
  }
};

/// A differentiable array named `Name`: a view of the caller's contiguous storage (no copy).
template <fixed_string Name, real T>
struct array_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = true;
  const T* data = nullptr;
  std::size_t size = 0;
};

/// A differentiable matrix named `Name`: a view of the caller's `rows x cols` elements in
/// row-major order (row r starts at `data + r * cols`; no copy). Elementwise it is an array of
/// `size == rows * cols` elements; its gradient has its shape (doc/shapes.md).
template <fixed_string Name, real T>
struct matrix_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = true;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
};

/// A differentiable matrix named `Name` whose rows are `ld` elements apart (`ld >= cols`): row
/// r is `data + r * ld` (a block of a larger row-major matrix, say). Its gradient is a dense
/// `rows x cols` matrix. Elementwise it is always computed row by row (doc/shapes.md).
template <fixed_string Name, real T>
struct strided_matrix_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = true;
  static constexpr bool strided = true;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;  // elements from one row's start to the next's
};

/// A differentiable vector named `Name` whose elements are `stride` apart (element i at
/// `data + i * stride`): a column of a row-major matrix (`var<"c">(column_of(m, k))`). It is
/// read element by element (a gather of SIMD-width elements); its gradient is a dense vector
/// of `size` elements (doc/shapes.md, "Single rows and columns").
template <fixed_string Name, real T>
struct strided_array_var {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr auto name = Name;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = true;
  static constexpr bool gathered = true;
  const T* data = nullptr;
  std::size_t size = 0;
  std::size_t stride = 0;  // elements from one element to the next
};

/// A runtime scalar that is not differentiated. Its type adapts to the expression's
/// (`2.0 * x` with float `x` computes in float).
template <class T>
struct scalar_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  T val{};
  constexpr T value() const noexcept { return val; }
};

/// A runtime scalar that is not differentiated, read from the caller's lvalue at every
/// evaluation (made by `constant_ref`).
template <class T>
struct scalar_constant_ref {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  const T* src = nullptr;
  T val{};  // the value frozen for a loop
  constexpr T value() const noexcept { return src ? *src : val; }
};

/// A runtime array that is not differentiated: a view of the caller's storage.
template <real T>
struct array_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = false;
  const T* data = nullptr;
  std::size_t size = 0;
};

/// A runtime matrix that is not differentiated: a view of the caller's row-major storage.
template <real T>
struct matrix_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = false;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
};

namespace detail {
/// The name of a column of a vector variable (the variable's own); none for a constant.
template <class L>
struct column_name {};
template <class L>
  requires L::is_variable
struct column_name<L> {
  static constexpr auto name = L::name;
};
}  // namespace detail

/// A vector as a column (made by `as_column(v)`): the `n x 1` matrix whose row r is `v[r]`,
/// broadcast across the columns of the matrix it is combined with (NumPy's `v[:, None]`). A
/// column of a variable is that variable: its gradient is the vector's, summed over the
/// columns. To the elementwise loop a column is one value per row, so `is_array` is false (an
/// op of columns only, `exp(as_column(c))`, is computed once per row); extents and the entry
/// points see the vector (`vec`). doc/shapes.md, "Columns".
template <class L>
struct column_leaf : detail::column_name<L> {
  using tad_kind = detail::leaf_kind;
  using value_type = typename L::value_type;
  using vector_type = L;
  static constexpr bool is_array = false;
  static constexpr bool is_column = true;
  static constexpr bool is_variable = L::is_variable;
  static constexpr int rank = 2;
  L vec;
  value_type val{};  // the element of the row being computed (set by the engine per row)
};

/// A runtime matrix that is not differentiated, with rows `ld` elements apart (`ld >= cols`).
template <real T>
struct strided_matrix_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = false;
  static constexpr bool strided = true;
  static constexpr int rank = 2;
  const T* data = nullptr;
  std::size_t size = 0;  // rows * cols
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t ld = 0;
};

/// A runtime vector that is not differentiated, its elements `stride` apart (a column of a
/// row-major matrix: `constant(column_of(m, k))`).
template <real T>
struct strided_array_constant {
  using tad_kind = detail::leaf_kind;
  using value_type = T;
  static constexpr bool is_array = true;
  static constexpr bool is_variable = false;
  static constexpr bool gathered = true;
  const T* data = nullptr;
  std::size_t size = 0;
  std::size_t stride = 0;
};

/// `size` elements `stride` apart from `data` (element i at `data[i * stride]`): what
/// `column_of` returns, and what `var` and `constant` take for a strided vector.
template <real T>
struct strided_view {
  using value_type = T;
  const T* data = nullptr;
  std::size_t size = 0;
  std::size_t stride = 1;
};

/// The compile-time constant Num/Den; it has no storage and adapts to the expression's type.
template <long long Num, long long Den = 1>
struct literal {
  static_assert(Den != 0, "tad::lit<num, den>: den must not be zero");
  using tad_kind = detail::leaf_kind;
  using value_type = void;
  static constexpr bool is_array = false;
  static constexpr bool is_variable = false;
  static constexpr long long num = Num;
  static constexpr long long den = Den;
  template <class T>
  static constexpr T as() noexcept {
    return static_cast<T>(Num) / static_cast<T>(Den);
  }
};

/// `lit<N, D>`: the literal N/D as an expression, e.g. `lit<1, 2>` is one half.
template <long long Num, long long Den = 1>
inline constexpr literal<Num, Den> lit{};

namespace detail {
template <class R>
concept real_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                     real<std::remove_cv_t<std::ranges::range_value_t<R>>>;
template <class R>
using range_real_t = std::remove_cv_t<std::ranges::range_value_t<R>>;
/// Contiguous row-major storage that knows its shape: `rows()`, `cols()` and the marker
/// `static constexpr bool tad_row_major = true` (tad::matrix has them; a user's own type may).
template <class R>
concept row_major_matrix = real_range<R> && requires(const R& r) {
  { r.rows() } -> std::convertible_to<std::size_t>;
  { r.cols() } -> std::convertible_to<std::size_t>;
  requires R::tad_row_major;
};
template <class V>
struct is_strided_view : std::false_type {};
template <class T>
struct is_strided_view<strided_view<T>> : std::true_type {};
/// Is V a strided_view?
template <class V>
inline constexpr bool is_strided_view_v = is_strided_view<V>::value;
/// rows * cols, or std::length_error naming `api` if that overflows std::size_t.
inline constexpr std::size_t matrix_area(std::size_t rows, std::size_t cols, const char* api) {
  if (cols != 0 && rows > static_cast<std::size_t>(-1) / cols)
    throw std::length_error(std::string(api) + ": rows * cols overflows std::size_t");
  return rows * cols;
}
/// Is L a column (`as_column(v)`)?
template <class L>
inline constexpr bool is_column_v = requires { L::is_column; };
template <class L>
constexpr bool gathered_column() {
  if constexpr (is_column_v<L>) return requires { L::vector_type::gathered; }; else return false;
}
/// Is L a column (`as_column(v)`) of a strided vector?
template <class L>
inline constexpr bool is_gathered_column_v = gathered_column<L>();
/// The leaf that names a variable: a column's vector, any other leaf itself.
template <class L>
struct named_leaf {
  using type = L;
};
template <class L>
  requires is_column_v<L>
struct named_leaf<L> {
  using type = typename L::vector_type;
};
template <class L>
using named_leaf_t = typename named_leaf<L>::type;
template <class L>
constexpr const named_leaf_t<L>& named_leaf_of(const L& l) noexcept {
  if constexpr (is_column_v<L>) return l.vec; else return l;
}
/// Is L a matrix with rows `ld` apart (strided_matrix_var, strided_matrix_constant)?
template <class L>
inline constexpr bool is_strided_v = requires { L::strided; };
/// Is L a column-major matrix (col_major_matrix_var, col_major_matrix_constant: core/col_major.hpp)?
template <class L>
inline constexpr bool is_col_major_v = requires { L::col_major; };
/// Is L a vector with elements `stride` apart (strided_array_var, strided_array_constant)?
template <class L>
inline constexpr bool is_gathered_v = requires { L::gathered; };
/// The elements a leaf's view spans from `data`: `size`, for a strided matrix from the first
/// row's start to the last row's end (a column-major one: columns), for a strided vector from
/// its first element to its last.
template <class L>
constexpr std::size_t span_of(const L& l) noexcept {
  if constexpr (is_strided_v<L>) return l.rows == 0 || l.cols == 0 ? 0 : (l.rows - 1) * l.ld + l.cols;
  else if constexpr (is_col_major_v<L>) return l.rows == 0 || l.cols == 0 ? 0 : (l.cols - 1) * l.ld + l.rows;
  else if constexpr (is_gathered_v<L>) return l.size == 0 ? 0 : (l.size - 1) * l.stride + 1;
  else return l.size;
}
/// A strided or column-major matrix's ld, a strided vector's stride; 0 for any other leaf.
template <class L>
constexpr std::size_t stride_of(const L& l) noexcept {
  if constexpr (is_strided_v<L> || is_col_major_v<L>) return l.ld;
  else if constexpr (is_gathered_v<L>) return l.stride;
  else return 0;
}
/// Element i of an array leaf's view.
template <class L>
constexpr const auto& element_of(const L& l, std::size_t i) noexcept {
  if constexpr (is_gathered_v<L>) return l.data[i * l.stride]; else return l.data[i];
}
/// Are two leaves of one type views of the same elements with the same shape?
template <class L>
constexpr bool same_view(const L& a, const L& b) {
  if constexpr (requires { a.rows; }) {
    if (a.rows != b.rows) return false;
  }
  if constexpr (is_strided_v<L> || is_col_major_v<L>) {
    if (a.ld != b.ld) return false;
  }
  if constexpr (is_gathered_v<L>) {
    if (a.stride != b.stride) return false;
  }
  return a.data == b.data && a.size == b.size;
}
/// rows * cols of a strided view, after checking ld >= cols and that the span fits std::size_t;
/// std::invalid_argument or std::length_error naming `api`.
inline constexpr std::size_t strided_area(std::size_t rows, std::size_t cols, std::size_t ld, const char* api) {
  if (rows > 1 && ld < cols)
    throw std::invalid_argument(std::string(api) + ": ld (" + std::to_string(ld) + ") is less than cols (" +
                                std::to_string(cols) + "): rows would overlap");
  if (rows > 1 && ld != 0 && rows - 1 > (static_cast<std::size_t>(-1) - cols) / ld)
    throw std::length_error(std::string(api) + ": (rows - 1) * ld + cols overflows std::size_t");
  return matrix_area(rows, cols, api);
}
}  // namespace detail

}  // namespace tad
