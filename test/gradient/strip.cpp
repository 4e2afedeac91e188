// strip_gradient_modifiers (tad/gradient/strip.hpp): after stripping, the gradient of every
// modified expression equals central differences of its value (the true derivative), for
// arrays at every length and scalars in float and double; keep_stop_gradient keeps stops.
#include <gradient/common.hpp>
#include <support/gradient_check.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include <type_traits>

namespace {

namespace hana = boost::hana;
using tad_test::lengths;
using tad_test::reals;
using tad_test::gradient_check::arr;
using tad_test::gradient_check::check_gradient;
using tad_test::gradient_check::check_scalar;
using tad_test::gradient_check::scal;

constexpr auto fake_square = tad::custom_gradient([](auto a) { return a * a; }, [](auto dy, auto, auto) { return dy; });
constexpr auto sin_rule = hana::make_map(hana::make_pair(hana::type_c<tad::sin_op>, [](auto dy, auto, auto) { return 3 * dy; }));

// Every modifier at once; stripped, it is x^2 * sin(x) + x * x + exp(x) + x.
struct all_modifiers {
  auto operator()(auto x) const {
    return tad::strip_gradient_modifiers(
        tad::clip_gradient(fake_square(x), -0.01, 0.01) * tad::override_gradients(tad::sin(x), sin_rule) +
        tad::scale_gradient(x, 3.0) * tad::reverse_gradient(x, 0.5) + tad::stop_gradient(tad::exp(x)) +
        tad::straight_through(x, x * x));
  }
};

// stop_gradient stays with keep_stop_gradient.
constexpr double kept(double v) {
  auto x = tad::var<"x">(v);
  auto e = tad::scale_gradient(x, 4.0) * tad::stop_gradient(x);
  return std::get<1>(tad::grad(tad::strip_gradient_modifiers(e, tad::keep_stop_gradient), x));
}
static_assert(kept(3.0) == 3.0);
constexpr double stripped(double v) {
  auto x = tad::var<"x">(v);
  auto e = tad::scale_gradient(x, 4.0) * tad::stop_gradient(x);
  return std::get<1>(tad::grad(tad::strip_gradient_modifiers(e), x));
}
static_assert(stripped(3.0) == 6.0);
using X = tad::scalar_var<"x", double>;
static_assert(std::is_same_v<decltype(tad::strip_gradient_modifiers(tad::clip_gradient(X{}, 0.0, 1.0))), X>);

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(stripped_gradients_are_true_derivatives, T, reals) {
  check_scalar<T>("stripped", all_modifiers{}, [](auto x) {
    return x * x * std::sin(x) + x * x + std::exp(x) + x;
  }, 16, scal{-2, 2});
  for (std::size_t n : lengths) {
    check_gradient<T>("sum(stripped)", n, [](auto x) { return tad::sum(all_modifiers{}(x)); }, arr{-2, 2});
    check_gradient<T>("sum(stripped) * scalar", n, [](auto x, auto s) { return tad::sum(all_modifiers{}(x) * s); }, arr{-2, 2}, scal{0.5, 2});
  }
}
