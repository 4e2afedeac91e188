#pragma once
/// `gradcheck(e, x...)`: tad's gradient of the scalar expression e against central differences,
/// in the spirit of `torch.autograd.gradcheck` (doc/compile-time-checks.md).
///
/// tad's gradient is computed in e's own element type. The reference is computed on a double
/// copy of e: every variable and constant array is copied to double (the caller's data is never
/// touched), and each element of each checked variable is moved by `h = eps * max(1, |v|)` both
/// ways. An element fails when `|tad - numeric| > atol + rtol * |numeric|` (NaN matches only
/// NaN, an infinity only the same infinity). The report gives, per variable, the worst absolute
/// and relative errors and the first failing index, and prints the expression.

#include <tad/check/print.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/value_type.hpp>
#include <tad/eval/api.hpp>
#include <tad/gradient/rules.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tad {

/// Step and tolerances of gradcheck (the defaults are torch.autograd.gradcheck's).
struct gradcheck_options {
  double eps = 1e-6;   ///< relative step of the central differences
  double atol = 1e-5;  ///< absolute tolerance
  double rtol = 1e-3;  ///< relative tolerance
};

namespace detail {
inline void append_g(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  out += buf;
}
}  // namespace detail

/// The comparison for one variable.
struct gradcheck_variable {
  std::string name;
  std::size_t size = 0;            ///< 1 for a scalar variable
  double max_abs_error = 0;        ///< over all elements
  double max_rel_error = 0;        ///< |tad - numeric| / |numeric| (0 where both are 0)
  std::size_t failures = 0;        ///< elements outside the tolerance
  std::size_t first_failure = 0;   ///< index of the first of them (when failures > 0)
  double tad_value = 0;            ///< tad's gradient there
  double numeric_value = 0;        ///< the central difference there
};

/// What gradcheck found: `ok`, the expression as text and one entry per variable.
struct gradcheck_result {
  bool ok = true;
  std::string expression;
  std::vector<gradcheck_variable> variables;
  explicit operator bool() const noexcept { return ok; }
  /// A readable summary: one line for the expression, one per variable.
  std::string report() const {
    std::string r = "tad::gradcheck: " + expression + (ok ? ": ok" : ": FAILED");
    for (const auto& v : variables) {
      r += "\n  d/d" + v.name + " (" + std::to_string(v.size) + (v.size == 1 ? " element" : " elements") +
           "): max abs error ";
      detail::append_g(r, v.max_abs_error);
      r += ", max rel error ";
      detail::append_g(r, v.max_rel_error);
      if (v.failures > 0) {
        r += "; " + std::to_string(v.failures) + " outside the tolerance, first [" + std::to_string(v.first_failure) +
             "]: tad ";
        detail::append_g(r, v.tad_value);
        r += ", numeric ";
        detail::append_g(r, v.numeric_value);
      }
    }
    return r;
  }
};

namespace detail {

/// Double copies of an expression's data, keyed by variable name (one copy per variable).
struct gradcheck_store {
  std::map<std::string, std::vector<double>, std::less<>> vars;
  std::vector<std::vector<double>> constants;  // moving a vector keeps its buffer

  template <class T>
  double* var(std::string_view name, const T* p, std::size_t n) {
    auto it = vars.find(name);
    if (it == vars.end()) it = vars.emplace(std::string(name), std::vector<double>(p, p + n)).first;
    return it->second.data();
  }
  /// The variable leaf x's elements, dense row-major (a strided or column-major matrix's rows gathered).
  template <class X>
  double* var_of(const X& x) {
    if constexpr (is_strided_v<X>) {
      std::vector<typename X::value_type> dense(x.size);
      for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t c = 0; c < x.cols; ++c) dense[r * x.cols + c] = x.data[r * x.ld + c];
      return var(X::name.view(), dense.data(), x.size);
    } else if constexpr (is_col_major_v<X>) {
      std::vector<typename X::value_type> dense(x.size);
      for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t c = 0; c < x.cols; ++c) dense[r * x.cols + c] = x.data[c * x.ld + r];
      return var(X::name.view(), dense.data(), x.size);
    } else if constexpr (is_gathered_v<X>) {
      std::vector<typename X::value_type> dense(x.size);
      for (std::size_t i = 0; i < x.size; ++i) dense[i] = x.data[i * x.stride];
      return var(X::name.view(), dense.data(), x.size);
    } else {
      return var(X::name.view(), x.data, x.size);
    }
  }
  template <class T>
  const double* constant(const T* p, std::size_t n) {
    constants.emplace_back(p, p + n);
    return constants.back().data();
  }
};

/// e with every variable and constant array rebound to double copies in `store`.
template <class E>
auto to_double(const E& e, gradcheck_store& store) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (is_column_v<E>) {
      return as_column(to_double(e.vec, store));
    } else if constexpr (is_strided_v<E> && !E::is_variable) {
      std::vector<double> dense(e.size);
      for (std::size_t r = 0; r < e.rows; ++r)
        for (std::size_t c = 0; c < e.cols; ++c) dense[r * e.cols + c] = static_cast<double>(e.data[r * e.ld + c]);
      return matrix_constant<double>{store.constant(dense.data(), e.size), e.size, e.rows, e.cols};
    } else if constexpr (is_col_major_v<E> && !E::is_variable) {
      std::vector<double> dense(e.size);
      for (std::size_t r = 0; r < e.rows; ++r)
        for (std::size_t c = 0; c < e.cols; ++c) dense[r * e.cols + c] = static_cast<double>(e.data[c * e.ld + r]);
      return matrix_constant<double>{store.constant(dense.data(), e.size), e.size, e.rows, e.cols};
    } else if constexpr (is_gathered_v<E> && !E::is_variable) {
      std::vector<double> dense(e.size);
      for (std::size_t i = 0; i < e.size; ++i) dense[i] = static_cast<double>(e.data[i * e.stride]);
      return array_constant<double>{store.constant(dense.data(), e.size), e.size};
    } else if constexpr (is_gathered_v<E>) {
      return array_var<E::name, double>{store.var_of(e), e.size};
    } else if constexpr (E::is_variable && leaf_rank<E>() == 2) {
      return matrix_var<E::name, double>{store.var_of(e), e.size, e.rows, e.cols};
    } else if constexpr (E::is_variable && E::is_array) {
      return array_var<E::name, double>{store.var(E::name.view(), e.data, e.size), e.size};
    } else if constexpr (E::is_variable) {
      const auto v = e.value();
      return scalar_var<E::name, double, true>{store.var(E::name.view(), &v, 1), 0.0};
    } else if constexpr (leaf_rank<E>() == 2) {
      return matrix_constant<double>{store.constant(e.data, e.size), e.size, e.rows, e.cols};
    } else if constexpr (E::is_array) {
      return array_constant<double>{store.constant(e.data, e.size), e.size};
    } else {
      return e;
    }
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return rebuild(e.op, to_double(child<K>(e), store)...);
    }(std::make_index_sequence<E::arity>{});
  }
}

inline bool gradcheck_close(double a, double n, const gradcheck_options& o) {
  if (std::isnan(a) || std::isnan(n)) return std::isnan(a) && std::isnan(n);
  if (std::isinf(a) || std::isinf(n)) return a == n;
  return std::abs(a - n) <= o.atol + o.rtol * std::abs(n);
}

template <class ED, class X, class G>
gradcheck_variable gradcheck_one(const ED& ed, gradcheck_store& store, const X& x, const G& g,
                                 const gradcheck_options& o) {
  gradcheck_variable r;
  r.name = std::string(X::name.view());
  const double* src = nullptr;
  if constexpr (X::is_array) {
    r.size = x.size;
    src = store.var_of(x);
  } else {
    r.size = 1;
    const auto v = x.value();
    src = store.var(X::name.view(), &v, 1);
  }
  double* p = const_cast<double*>(src);  // NOLINT(cppcoreguidelines-pro-type-const-cast): the store's own copy
  for (std::size_t i = 0; i < r.size; ++i) {
    const double v = p[i];
    const double h = o.eps * std::max(1.0, std::abs(v));
    const double up = v + h, down = v - h;
    p[i] = up;
    const double fu = static_cast<double>(value(ed));
    p[i] = down;
    const double fd = static_cast<double>(value(ed));
    p[i] = v;
    const double numeric = (fu - fd) / (up - down);
    double got = 0;
    if constexpr (X::is_array) got = static_cast<double>(std::data(g)[i]); else got = static_cast<double>(g);
    const double err = std::abs(got - numeric);
    if (std::isfinite(err)) {
      r.max_abs_error = std::max(r.max_abs_error, err);
      if (err > 0) r.max_rel_error = std::max(r.max_rel_error, numeric != 0 ? err / std::abs(numeric) : INFINITY);
    }
    if (!gradcheck_close(got, numeric, o) && r.failures++ == 0) {
      r.first_failure = i;
      r.tad_value = got;
      r.numeric_value = numeric;
    }
  }
  return r;
}

}  // namespace detail

/// gradcheck with the given options.
template <class E, class... X>
gradcheck_result gradcheck(const gradcheck_options& options, const E& e, const X&... x) {
  constexpr bool ok = expression<E> && sizeof...(X) > 0 && (variable<X> && ...);
  if constexpr (!ok) {
    static_assert(ok, "tad::gradcheck(e, x...): e must be a tad expression and x... one or more of its variables");
    return {};
  } else {
    static_assert(!is_array_v<E>, "tad::gradcheck(e, x...): e must be a scalar expression (reduce it, e.g. with tad::sum)");
    gradcheck_result result;
    result.expression = to_string(e);
    const auto tad_grad = grad(e, x...);
    detail::gradcheck_store store;
    const auto ed = detail::to_double(e, store);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (result.variables.push_back(detail::gradcheck_one(ed, store, x, std::get<K + 1>(tad_grad), options)), ...);
    }(std::index_sequence_for<X...>{});
    for (const auto& v : result.variables) result.ok = result.ok && v.failures == 0;
    return result;
  }
}

/// `gradcheck(e, x...)`: with the default options.
template <class E, class... X>
  requires(!std::is_same_v<std::remove_cvref_t<E>, gradcheck_options>)
gradcheck_result gradcheck(const E& e, const X&... x) {
  return gradcheck(gradcheck_options{}, e, x...);
}

}  // namespace tad
