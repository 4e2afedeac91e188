#pragma once
/// What the loops ask of a reduction op beyond its rules, as concepts (ops/reduction_ops.hpp
/// says what each means). No SIMD here: the analysis (eval/plan.hpp) reads them too.

namespace tad::detail {

/// Is Op shifted: two forward sweeps, its shift_op's, then its own (logsumexp)?
template <class Op>
concept shifted_reduction = requires { typename Op::shift_op; };
/// May the lanes of Op's state be merged by one horizontal sum of `a`?
template <class Op>
concept merges_by_sum = requires { requires Op::merges_by_sum; };

}  // namespace tad::detail
