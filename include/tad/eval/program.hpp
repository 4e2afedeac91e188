#pragma once
/// tad::program: an expression with matrix products, run as Eigen's products and the engine's
/// loops around them, with a workspace (doc/linear-algebra.md). Its class is in
/// eval/program/declaration.hpp, its backward members in eval/program/backward.hpp and the
/// entry points' specialization for expressions with products in eval/program/api.hpp (each
/// includes the declaration, none includes this header).

#include <tad/eval/program/declaration.hpp>

#include <tad/eval/program/api.hpp>
#include <tad/eval/program/backward.hpp>
#include <tad/eval/program/custom.hpp>
#include <tad/eval/program/scan.hpp>
