#pragma once
/// The tape-free engine: runs the passes of a plan over the data, in SIMD loops. Its class is in
/// eval/engine/declaration.hpp; its member functions, by concern, in the other headers of
/// eval/engine/ (each includes the declaration, none includes this header).

#include <tad/eval/engine/declaration.hpp>

#include <tad/eval/engine/blocks.hpp>
#include <tad/eval/engine/down.hpp>
#include <tad/eval/engine/flat.hpp>
#include <tad/eval/engine/points.hpp>
#include <tad/eval/engine/rows.hpp>
#include <tad/eval/engine/scalar.hpp>
#include <tad/eval/engine/step.hpp>
