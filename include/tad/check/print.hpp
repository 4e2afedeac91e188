#pragma once
/// `to_string(e)` / `print(e)`: the expression tree as text, for debugging and for the reports
/// of `gradcheck`. It shows the tree tad evaluates, after the rewrites tad makes when building
/// it (doc/compile-time-checks.md): `sum(x + c)` with a scalar c prints as `sum(x) + n * c`,
/// `x / s` with a scalar s as `x * (1 / s)`, `logsumexp(x)` as `m + log(sum(exp(x - m)))` with
/// `m = lse_shift(x)`.
///
///   variables            their names                 x
///   numbers              shortest round-trip form    0.1, -2
///   constant_ref(v)      its current value           constant_ref(0.5)
///   constant arrays      with their length           constant[1000]
///   literals             lit<num, den>               lit<1, 2>
///   + - * / and compare  infix, minimal parentheses  (x + y) * z
///   other ops            name(arguments)             exp(x), clip_gradient(x, -0.1, 0.1)
///   custom_gradient      its forward, then inputs    custom_gradient[$0 * $1](a, b)
///   overridden ops       name[overridden]            exp[overridden](x)
///   lets                 their names, then each      c + c where c = clip_gradient(x, -1, 1)
///                        definition once (inner lets first, separated by ", ")

#include <tad/core/expression.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/let.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace tad {

namespace detail {

inline void append_number(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

/// Binding strength of an op printed infix (0: not infix).
constexpr int infix_precedence(std::string_view name) {
  if (name == "||") return 1;
  if (name == "&&") return 2;
  if (name == "<" || name == "<=" || name == ">" || name == ">=" || name == "==" || name == "!=") return 3;
  if (name == "+" || name == "-") return 4;
  if (name == "*" || name == "/" || name == "length*") return 5;
  return 0;
}
inline constexpr int prefix_precedence = 6;
inline constexpr int atom_precedence = 7;

template <class Op>
constexpr std::string_view op_name() {
  if constexpr (requires { Op::name; }) return Op::name; else return "op";
}

template <class E>
constexpr int precedence() {
  if constexpr (is_leaf_v<E>) {
    return atom_precedence;
  } else {
    using Op = typename E::op_type;
    constexpr std::string_view n = op_name<Op>();
    if constexpr (requires { typename Op::base_op; }) return atom_precedence;  // name[overridden](...)
    else if constexpr (E::arity == 2 && infix_precedence(n) > 0) return infix_precedence(n);
    else if constexpr (n == "reciprocal") return infix_precedence("/");
    else if constexpr (n == "neg" || n == "!") return prefix_precedence;
    else return atom_precedence;
  }
}

template <class E>
void print_to(std::string& out, const E& e);

template <class E>
void print_child(std::string& out, const E& e, bool parenthesize) {
  if (parenthesize) out += '(';
  print_to(out, e);
  if (parenthesize) out += ')';
}

template <class E>
void print_leaf(std::string& out, const E& e) {
  if constexpr (is_column_v<E>) {
    out += "column(";
    print_leaf(out, e.vec);
    out += ')';
  } else if constexpr (requires { E::name; }) {
    out += E::name.view();
  } else if constexpr (requires { E::input_index; }) {
    out += '$';
    append_number(out, static_cast<double>(E::input_index));
  } else if constexpr (requires { E::is_length; }) {
    out += 'n';
  } else if constexpr (requires { E::num; }) {
    out += "lit<";
    out += std::to_string(E::num);
    if (E::den != 1) {
      out += ", ";
      out += std::to_string(E::den);
    }
    out += '>';
  } else if constexpr (E::is_array) {
    out += "constant[";
    if constexpr (leaf_rank<E>() == 2) {
      out += std::to_string(e.rows);
      out += 'x';
      out += std::to_string(e.cols);
    } else {
      out += std::to_string(e.size);
    }
    out += ']';
  } else if constexpr (requires { e.src; }) {
    out += "constant_ref(";
    append_number(out, static_cast<double>(e.value()));
    out += ')';
  } else {
    append_number(out, static_cast<double>(e.value()));
  }
}

template <class E>
void print_to(std::string& out, const E& e) {
  if constexpr (is_leaf_v<E>) {
    print_leaf(out, e);
  } else {
    using Op = typename E::op_type;
    constexpr std::string_view n = op_name<Op>();
    constexpr int p = precedence<E>();
    if constexpr (is_let_node_v<E>) {
      out += n;  // an occurrence of a let prints as its name; to_string adds its definition
    } else if constexpr (props<E>::is_column_point) {
      out += "column(";  // as a column leaf prints
      out += n;
      out += '(';
      print_to(out, e.arg);
      out += requires { Op::picks; } ? ", labels))" : ", axis<1>))";
    } else if constexpr (requires { typename Op::base_op; }) {
      out += n;
      out += "[overridden](";
      static_for<E::arity>([&](auto k) {
        if (k.value > 0) out += ", ";
        print_to(out, child<k.value>(e));
      });
      out += ')';
    } else if constexpr (requires { Op::is_custom_output; }) {
      out += "custom_gradient[";
      print_to(out, std::get<Op::output>(e.op.bodies));
      out += "; output " + std::to_string(Op::output) + " of " + std::to_string(Op::outputs) + "](";
      static_for<E::arity>([&](auto k) {
        if (k.value > 0) out += ", ";
        print_to(out, child<k.value>(e));
      });
      out += ')';
    } else if constexpr (requires { e.op.body; }) {
      out += "custom_gradient[";
      print_to(out, e.op.body);
      out += "](";
      static_for<E::arity>([&](auto k) {
        if (k.value > 0) out += ", ";
        print_to(out, child<k.value>(e));
      });
      out += ')';
    } else if constexpr (E::arity == 2 && infix_precedence(n) > 0) {
      using L = child_t<0, E>;
      using R = child_t<1, E>;
      // Left to right: the right operand keeps parentheses at equal strength (a - (b - c),
      // x * (1 / s)) unless it is the same associative op (a + b + c prints as written).
      constexpr bool same_assoc = (n == "+" || n == "*") && [] {
        if constexpr (is_leaf_v<R>) return false; else return op_name<typename R::op_type>() == op_name<Op>();
      }();
      print_child(out, e.lhs, precedence<L>() < p);
      out += ' ';
      out += n == "length*" ? std::string_view("*") : n;
      out += ' ';
      print_child(out, e.rhs, precedence<R>() < p || (precedence<R>() == p && !same_assoc));
    } else if constexpr (n == "reciprocal") {
      out += "1 / ";
      print_child(out, e.arg, precedence<child_t<0, E>>() <= p);
    } else if constexpr (n == "neg" || n == "!") {
      out += n == "neg" ? "-" : "!";
      print_child(out, e.arg, precedence<child_t<0, E>>() <= p);
    } else {
      out += n;
      out += '(';
      static_for<E::arity>([&](auto k) {
        if (k.value > 0) out += ", ";
        print_to(out, child<k.value>(e));
      });
      if constexpr (requires { Op::picks; }) {
        out += ", labels";
      } else if constexpr (requires { Op::axis; }) {
        out += ", axis<";
        out += static_cast<char>('0' + Op::axis);
        out += '>';
      }
      out += ')';
    }
  }
}

/// " where a = ..., b = ...": the definitions of the lets of e, inner ones first.
template <class E, class... L>
void print_lets(std::string& out, const E& e, let_list<L...>) {
  bool first = true;
  auto one = [&]<class X>() {
    out += first ? " where " : ", ";
    first = false;
    out += X::op_type::name;
    out += " = ";
    print_to(out, first_let<X>(e).arg);
  };
  (one.template operator()<L>(), ...);
}

}  // namespace detail

/// The expression tree of e as text (see the table above).
template <class E>
std::string to_string(const E& e) {
  if constexpr (!expression<E>) {
    static_assert(expression<E>, "tad::to_string(e): e must be a tad expression");
    return {};
  } else {
    std::string out;
    detail::print_to(out, e);
    if constexpr (detail::has_lets_v<E>) detail::print_lets(out, e, detail::lets_of_t<E>{});
    return out;
  }
}

/// Writes `to_string(e)` and a newline to `stream` (stdout by default).
template <class E>
void print(const E& e, std::FILE* stream = stdout) {
  const std::string s = to_string(e);
  std::fputs(s.c_str(), stream);
  std::fputc('\n', stream);
}

}  // namespace tad
