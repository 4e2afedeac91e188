// Two different variables named "w" (an array and a scalar): the error shows the name 'w' on
// both compilers (clang++ prints a fixed_string template argument as {{119, 0}}).
// TAD_EXPECT: variable_name<'w'>.*two different variables have the same name in one expression|two different variables have the same name in one expression.*variable_name<'w'>
#include <tad/tad.hpp>

#include <vector>

int main() {
  std::vector<double> ws{1, 2, 3};
  double s = 2;
#ifdef TAD_SHOULD_FAIL
  auto e = tad::sum(tad::exp(tad::var<"w">(ws)) * (1.0 + tad::var<"w">(s)));
#else
  auto e = tad::sum(tad::exp(tad::var<"w">(ws)) * (1.0 + tad::var<"s">(s)));
#endif
  return tad::value(e) > 0 ? 0 : 1;
}
