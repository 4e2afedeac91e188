// override_gradients with rules that are not a Hana map from op type to rule.
// TAD_EXPECT: tad::override_gradients\(e, rules\): rules must be a boost::hana::map from op types
#include <tad/tad.hpp>

#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/tuple.hpp>

#include <vector>

namespace hana = boost::hana;

int main() {
  std::vector<double> xs{1, 2, 3};
  auto x = tad::var<"x">(xs);
  auto rule = [](auto dy, auto, auto) { return 5 * dy; };
#ifdef TAD_SHOULD_FAIL
  auto rules = hana::make_tuple(hana::make_pair(hana::type_c<tad::exp_op>, rule));
#else
  auto rules = hana::make_map(hana::make_pair(hana::type_c<tad::exp_op>, rule));
#endif
  return tad::value(tad::sum(tad::override_gradients(tad::exp(x), rules))) > 0 ? 0 : 1;
}
