#pragma once
/// `let_op<Name>`: the op of a named shared subexpression (`tad::let<"z">(e)`,
/// gradient/let.hpp), and the structural facts about lets that building an expression checks:
/// one name, one body; a let is not named like a variable. See doc/semantics.md, "Shared
/// subexpressions", and doc/design.md for how the engine evaluates a let.

#include <tad/config.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/node.hpp>
#include <tad/detail/static_for.hpp>

#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tad {

/// Forward and backward are the identity. Every occurrence of one name in an expression is one
/// node: the engine evaluates its body once and runs the body's backward once, on the sum of the
/// adjoints of all occurrences (eval/let.hpp). Nothing else in the engine special-cases it, so a
/// path that does not share (a store, a value) still computes the right value.
template <fixed_string Name>
struct let_op {
  static constexpr std::string_view name = Name.view();
  static constexpr auto let_name = Name;
  static constexpr bool is_let = true;
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

/// The op of `tad::per_use(e)` (gradient/let.hpp): the identity, forward and backward. It marks
/// a copy of a subexpression as a node of its own, so that copies of one rule-carrying
/// subexpression (a rule not linear in the adjoint) may each run their rule on their own share
/// of the adjoint without the compile error that guards against doing so by accident
/// (eval/shared_rules.hpp; doc/semantics.md, "Shared subexpressions").
struct per_use_op {
  static constexpr std::string_view name = "per_use";
  static constexpr bool is_per_use = true;
  static constexpr linearity linear = linearity::additive;
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

/// The op of a stage (a let the program evaluates on its own, decisions.md 56): the identity,
/// forward and backward. The library puts it around a value that must be one node but that the
/// engine's fused loops cannot share: the argument of a composite's matrix form (softmax along
/// an axis, the row-wise cross-entropies) and a vector broadcast across a matrix's rows, when
/// either holds a rule not linear in the adjoint. A tad::program (eval/program.hpp) computes a
/// stage's value once into its workspace, sums the adjoints of its uses there, and runs the
/// body's backward once on the sum, as it does for a matrix product. A stage is one node per
/// construction, as a call to an op is in TensorFlow: its copies (a composite's two reads of
/// its argument) carry the id the library gave it when it was built, and two stages are one
/// node only when their ids are equal.
template <fixed_string Name>
struct stage_op {
  static constexpr std::string_view name = "stage";
  static constexpr auto let_name = Name;
  static constexpr bool is_stage = true;
  static constexpr linearity linear = linearity::additive;
  std::uint64_t id = 0;  // 0 in constant evaluation, where no program runs
  TAD_INLINE static constexpr auto forward(auto x) { return x; }
  TAD_INLINE static constexpr auto backward(auto dy, auto, auto) { return dy; }
};

namespace detail {
/// A new stage id (thread-safe; never 0).
inline std::uint64_t next_stage_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace detail

namespace detail {

template <class E>
struct is_let_node : std::false_type {};
template <fixed_string Name, class B>
struct is_let_node<node<let_op<Name>, B>> : std::true_type {};
/// Is E a let node (`node<let_op<Name>, Body>`)?
template <class E>
inline constexpr bool is_let_node_v = is_let_node<E>::value;

/// Does E contain a let node anywhere (inside reductions too)?
template <class E>
struct has_lets : std::false_type {};
template <class Op, class... C>
struct has_lets<node<Op, C...>> : std::bool_constant<is_let_node_v<node<Op, C...>> || (has_lets<C>::value || ...)> {};
template <class E>
inline constexpr bool has_lets_v = has_lets<std::remove_cvref_t<E>>::value;

/// Does an adjoint reach, in E, a node whose rule is not linear in the adjoint (clip_gradient,
/// custom_gradient, an overridden op: `adjoint_linear = false`) outside every let (a let's body
/// is one node already) and below no cut (adjoint_flows)? Such a node read twice by a composite
/// (softmax_cross_entropy reads its logits twice) must be one node. A per_use does not hide it:
/// per_use means one rule per use the user wrote, never one per read inside a composite.
template <class E>
constexpr bool rule_outside_lets() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else if constexpr (is_let_node_v<E> || !op_differentiable<typename E::op_type>()) {
    return false;
  } else {
    bool r = false;
    if constexpr (requires { E::op_type::adjoint_linear; }) r = !E::op_type::adjoint_linear;
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) r = r || rule_outside_lets<child_t<k.value, E>>();
    });
    return r;
  }
}

/// FNV-1a of the compiler's spelling of T: the same in every translation unit of one compiler.
template <class T>
constexpr std::uint32_t type_hash() {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view s = __PRETTY_FUNCTION__;
#else
  constexpr std::string_view s = __FUNCSIG__;
#endif
  std::uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

/// The name of the let that `one_node` (ops/shared.hpp) puts around E: `@z` (or another
/// prefix: `@s` for a stage) and eight hex digits of E's type hash. Two composites of one argument type share it (one node, as they should when the
/// argument is the same computation; bound to other data they throw, as two lets of one name
/// do). A hash collision between two argument types is a compile error (one name, two bodies),
/// never a silent sharing. '@' keeps it apart from every user name (tad::var refuses it).
template <class E, char Prefix = 'z'>
constexpr fixed_string<11> auto_let_name() {
  constexpr char digits[] = "0123456789abcdef";
  char s[11] = "@z00000000";
  s[1] = Prefix;
  std::uint32_t h = type_hash<E>();
  for (std::size_t k = 0; k < 8; ++k, h >>= 4) s[9 - k] = digits[h & 15u];
  return {s};
}

/// Is Op's own rule linear in the adjoint (all but clip_gradient, custom_gradient, overrides)?
template <class Op>
constexpr bool op_rule_linear() {
  if constexpr (requires { Op::adjoint_linear; }) return Op::adjoint_linear; else return true;
}

/// The first vector node with its own rule not linear in the adjoint that a node of a matrix
/// would broadcast across rows, looking from the vector E through rank-1 nodes (lets included;
/// not reductions: a rule inside a reduction's argument runs per element of that argument, and
/// a scalar under a rule is a loop invariant whose adjoint is summed before its rule runs; not
/// stages, whose adjoint is summed before their rule runs). void: none.
template <class E>
struct vector_rule {
  using type = void;
};
template <class Op, class... C>
struct vector_rule<node<Op, C...>> {
  using N = node<Op, C...>;
  template <std::size_t... K>
  static auto kids(std::index_sequence<K...>)
      -> first_non_void_t<std::conditional_t<adjoint_flows<N, K>::value, typename vector_rule<child_t<K, N>>::type, void>...>;
  static auto pick() {
    if constexpr (!op_differentiable<Op>() || props<N>::rank != 1 || props<N>::is_reduction ||
                  requires { Op::is_stage; })
      return std::type_identity<void>{};
    else if constexpr (!op_rule_linear<Op>()) return std::type_identity<N>{};
    else return std::type_identity<decltype(kids(std::index_sequence_for<C...>{}))>{};
  }
  using type = typename decltype(pick())::type;
};

/// Does an adjoint reach, in E, a node whose rule is not linear in the adjoint (lets included)?
template <class E>
constexpr bool reaches_rule() {
  if constexpr (is_leaf_v<E>) {
    return false;
  } else if constexpr (!op_differentiable<typename E::op_type>()) {
    return false;
  } else {
    bool r = !op_rule_linear<typename E::op_type>();
    static_for<E::arity>([&](auto k) {
      if constexpr (adjoint_flows<E, k.value>::value) r = r || reaches_rule<child_t<k.value, E>>();
    });
    return r;
  }
}

/// A list of let node types, distinct by name, in post-order of their first occurrence (a let
/// inside another let's body comes before it).
template <class... L>
struct let_list {
  static constexpr std::size_t size = sizeof...(L);
  using types = std::tuple<L...>;
  template <std::size_t K>
  using at = std::tuple_element_t<K, types>;
  template <fixed_string Name>
  static constexpr std::size_t index = [] {
    std::size_t k = 0, found = sizeof...(L);
    ((found = (found == sizeof...(L) && same_name<L::op_type::let_name, Name>) ? k : found, ++k), ...);
    return found;
  }();
  template <class E>
  static constexpr bool contains = [] {
    if constexpr (is_let_node_v<E>) return index<E::op_type::let_name> < size;
    else return false;
  }();
};

template <class List, class L, bool IsLet = is_let_node_v<L>>
struct let_list_add {
  using type = List;
};
template <class... Ls, class L>
struct let_list_add<let_list<Ls...>, L, true> {
  using type = std::conditional_t<let_list<Ls...>::template index<L::op_type::let_name> < sizeof...(Ls),
                                  let_list<Ls...>, let_list<Ls..., L>>;
};

/// Where region code runs: the scalar code above the loops, or inside a loop, where the loop
/// invariants (roots, `props::is_root`) were computed before the loop and are read from
/// `ctx.inv` (eval/elementwise.hpp `forward`).
enum class site { scalar, loop };

/// The lets of E. `Region`: only those evaluated in E's own code: not inside reductions
/// (their arguments run in their own loops) and, at site::loop, not inside loop invariants
/// (computed before the loop). Without `Region`: every let of E.
template <class E, bool Region, site At, class Acc = let_list<>>
struct lets_of {
  using type = Acc;
};
template <class Op, class... C, bool Region, site At, class Acc>
struct lets_of<node<Op, C...>, Region, At, Acc> {
  using N = node<Op, C...>;
  template <class A, class... K>
  struct fold {
    using type = A;
  };
  template <class A, class K0, class... K>
  struct fold<A, K0, K...> {
    using type = typename fold<typename lets_of<K0, Region, At, A>::type, K...>::type;
  };
  using kids = typename fold<Acc, C...>::type;
  static constexpr bool opaque = Region && (props<N>::is_reduction || (At == site::loop && props<N>::is_root));
  using type = std::conditional_t<opaque, Acc,
                                  typename let_list_add<kids, N>::type>;
};
/// Every let of E.
template <class E>
using lets_of_t = typename lets_of<E, false, site::scalar>::type;
/// The lets of E's region code at site At (see lets_of).
template <class E, site At>
using region_lets_t = typename lets_of<E, true, At>::type;
/// Does the region code of E (see lets_of) contain a let? Nothing to instantiate without lets.
template <class E, site At>
constexpr bool region_has_lets() {
  if constexpr (has_lets_v<E>) return region_lets_t<E, At>::size > 0; else return false;
}

/// Does every let of B named like a let of A have A's type (the same body)? The first let of E
/// named Name, or void.
template <class E, fixed_string Name>
struct let_named {
  using type = void;
};
template <class Op, class... C, fixed_string Name>
struct let_named<node<Op, C...>, Name> {
  using N = node<Op, C...>;
  static constexpr bool self = [] {
    if constexpr (is_let_node_v<N>) return same_name<Op::let_name, Name>; else return false;
  }();
  using type = std::conditional_t<self, N, first_non_void_t<typename let_named<C, Name>::type...>>;
};

/// The first let of E that another let of E, or a variable of E, shares its name with, as
/// `std::type_identity<let node>` (void: none). `Kind` 1: two bodies; 2: a variable's name.
template <class E>
struct let_conflict {
  template <class L>
  static constexpr int kind_of() {
    constexpr auto nm = L::op_type::let_name;
    if constexpr (contains_var<E, nm>::value) return 2;
    else return 0;
  }
  template <class L>
  static constexpr bool same_bodies() {  // every let of E named like L has L's type
    bool ok = true;
    auto f = [&]<class X>(auto self) {
      if constexpr (has_lets_v<X>) {  // (no walk below a subtree without lets)
        if constexpr (is_let_node_v<X>) {
          if constexpr (same_name<X::op_type::let_name, L::op_type::let_name>) ok = ok && std::is_same_v<X, L>;
        }
        static_for<X::arity>([&](auto k) { self.template operator()<child_t<k.value, X>>(self); });
      }
    };
    f.template operator()<E>(f);
    return ok;
  }
  template <class List>
  struct scan;
  template <class... L>
  struct scan<let_list<L...>> {
    static constexpr std::pair<int, std::size_t> found = [] {
      int k = 0;
      std::size_t at = 0, i = 0;
      auto one = [&](int kind) {
        if (k == 0 && kind != 0) {
          k = kind;
          at = i;
        }
        ++i;
      };
      (one(!same_bodies<L>() ? 1 : kind_of<L>()), ...);
      return std::pair<int, std::size_t>{k, at};
    }();
  };
  using lets = lets_of_t<E>;
  static constexpr int kind = scan<lets>::found.first;
  static constexpr std::size_t index = scan<lets>::found.second;
};
/// 0 when the lets of E agree (cheap for an expression without lets); else let_conflict's kind.
template <class E>
constexpr int let_conflict_kind() {
  if constexpr (has_lets_v<E>) return let_conflict<E>::kind; else return 0;
}
/// The let in conflict, when let_conflict_kind<E>() != 0.
template <class E>
using let_conflict_t = typename let_conflict<E>::lets::template at<let_conflict<E>::index>;

/// The first let L in e (which has one), anywhere.
template <class L, class E>
constexpr const auto& first_let(const E& e) {
  if constexpr (std::is_same_v<E, L>) {
    return e;
  } else {
    constexpr std::size_t k = [] {
      std::size_t r = E::arity;
      static_for<E::arity>([&](auto j) {
        if (r == E::arity && lets_of_t<child_t<j.value, E>>::template contains<L>) r = j.value;
      });
      return r;
    }();
    return first_let<L>(child<k>(e));
  }
}

/// Are two leaves of one type bound alike (same data, same value, same referenced value)?
template <class V>
constexpr bool same_number(const V& a, const V& b) {
  using bytes = std::array<unsigned char, sizeof(V)>;  // bitwise: a NaN parameter equals itself
  return std::bit_cast<bytes>(a) == std::bit_cast<bytes>(b);
}
template <class E>
constexpr bool same_body(const E& a, const E& b) {
  if constexpr (is_leaf_v<E>) {
    if constexpr (is_column_v<E>) {
      return same_view(a.vec, b.vec);  // its val is the engine's, per row
    } else if constexpr (requires { a.data; a.size; }) {
      return same_view(a, b);
    } else if constexpr (requires { a.src; a.val; }) {
      if (a.src != nullptr || b.src != nullptr) return a.src == b.src;
      return same_number(a.val, b.val);
    } else if constexpr (requires { a.val; }) {
      return same_number(a.val, b.val);
    } else {
      return true;
    }
  } else {
    bool ok = true;
    // An op's own state where its bytes are its value (a pick's labels), at run time (a pointer
    // cannot be compared so in a constant expression). Other ops' state (a custom rule's
    // captures) cannot be told from bytes: taken as equal, so a let's body never holds one
    // whose state could differ between copies by accident (ops/shared.hpp one_node).
    using Op = typename E::op_type;
    // (A stage's id is not data: two builds of one body differ in it.)
    if constexpr (!std::is_empty_v<Op> && std::has_unique_object_representations_v<Op> && !requires { Op::is_stage; }) {
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): unique object representations
      if (!std::is_constant_evaluated()) ok = std::memcmp(&a.op, &b.op, sizeof(Op)) == 0;
    }
    static_for<E::arity>([&](auto k) { ok = ok && same_body(child<k.value>(a), child<k.value>(b)); });
    return ok;
  }
}
/// Throws when a let of b is bound to other data than the same-named let of a (same type:
/// different bodies are a compile error).
template <class A, class B>
constexpr void check_let_bindings(const A& a, const B& b) {
  if constexpr (has_lets_v<A> && has_lets_v<B>) {  // (no walk below a subtree without lets)
    if constexpr (is_let_node_v<B>) {
      if constexpr (lets_of_t<A>::template contains<B>) {
        if (!same_body(first_let<B>(a), b)) {
          if constexpr (!user_name_v<B::op_type::let_name>)
            throw std::invalid_argument(
                "tad::softmax_cross_entropy / softmax / log_softmax: two calls whose arguments have one type "
                "and hold a gradient rule not linear in the adjoint, but differ in data or parameters; tad "
                "makes each argument one node named by its type (" + std::string(B::op_type::name) +
                R"() and cannot tell them apart: name each argument, tad::let<"a">(...) and tad::let<"b">(...))");
          throw std::invalid_argument("tad::let<\"" + std::string(B::op_type::name) +
                                      "\">(e): two lets of that name in one expression have different "
                                      "data or parameters; a name identifies one shared subexpression");
        }
      }
    }
    static_for<B::arity>([&](auto k) { check_let_bindings(a, child<k.value>(b)); });
  }
}

/// The name of a let spelled as a type for diagnostics (`variable_name<'c'>`, see fixed_string.hpp).
template <class L>
using let_name_type_t = name_type_t<L::op_type::let_name>;

template <class Name>
constexpr void report_let_two_bodies() {
  static_assert(always_false<Name>,
                "tad::let<name>(e): one let name has two different definitions in one expression "
                "(a name identifies one shared subexpression; apply override_gradients or "
                "strip_gradient_modifiers to the whole expression or to the let's body)");
}
template <class Name>
constexpr void report_let_named_like_variable() {
  static_assert(always_false<Name>,
                "tad::let<name>(e): a let has the name of a variable of the expression; a name "
                "identifies one variable or one shared subexpression");
}
/// One error for the let conflict of E (kind != 0), naming the let.
template <class E>
constexpr void report_let_conflict() {
  using Name = let_name_type_t<let_conflict_t<E>>;
  if constexpr (let_conflict<E>::kind == 1) report_let_two_bodies<Name>();
  else report_let_named_like_variable<Name>();
}


}  // namespace detail
}  // namespace tad
