#pragma once
/// Umbrella header: all of tad.

#include <tad/check/gradcheck.hpp>
#include <tad/check/print.hpp>
#include <tad/check/static_check.hpp>
#include <tad/check/traits.hpp>
#include <tad/config.hpp>
#include <tad/core/errors.hpp>
#include <tad/core/expression.hpp>
#include <tad/core/fixed_string.hpp>
#include <tad/core/leaves.hpp>
#include <tad/core/node.hpp>
#include <tad/core/value_type.hpp>
#include <tad/core/zero.hpp>
#include <tad/eval/api.hpp>
#include <tad/gradient/custom.hpp>
#include <tad/gradient/modifiers.hpp>
#include <tad/gradient/override.hpp>
#include <tad/gradient/rules.hpp>
#include <tad/gradient/schedule.hpp>
#include <tad/gradient/strip.hpp>
#include <tad/ops/arithmetic.hpp>
#include <tad/ops/binary.hpp>
#include <tad/ops/elementwise.hpp>
#include <tad/ops/primitive.hpp>
#include <tad/ops/reductions.hpp>
#include <tad/ops/select.hpp>
