#pragma once
/// Matrix products and the program that evaluates them, with Eigen (doc/linear-algebra.md):
/// all of tad (tad.hpp) and matmul, outer, transpose, tad::program. Needs Eigen 3.4
/// (`find_package(Eigen3)`; tad's CMake package links it). Not in tad.hpp, so that code without
/// products does not parse Eigen.

#include <tad/eval/program.hpp>
#include <tad/ops/linalg.hpp>
#include <tad/ops/scan.hpp>
#include <tad/ops/shift.hpp>
#include <tad/tad.hpp>
