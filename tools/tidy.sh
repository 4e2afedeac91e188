#!/usr/bin/env bash
# clang-tidy over tad's public headers and examples, with the checks in .clang-tidy (warnings
# are errors). tools/test.sh runs it as its stage `tidy`.
#
#   tools/tidy.sh [clang-tidy] [clang++]
#
# Configures build/tidy with clang++ (configure only: compile_commands.json and the generated
# one-include TU per public header), then runs clang-tidy on the TU of <tad/tad.hpp> (every
# public header; each alone is the ctest test `headers`) and on every example (tad's templates
# instantiated by real use), 2 at a time. Most of the time is spent matching inside the
# standard library, Boost and xsimd, so one TU per header would take ~8 minutes instead of ~2.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tidy=${1:-clang-tidy}
cxx=${2:-clang++}
dir="$tad_root/build/tidy"
cmake -S "$tad_root" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DTAD_BUILD_TESTS=ON -DTAD_BUILD_EXAMPLES=ON -DTAD_BUILD_BENCHMARKS=OFF >/dev/null
mapfile -t files < <(echo "$dir/test/headers/tad/tad.hpp.cpp"; ls "$tad_root"/examples/*.cpp)
echo "clang-tidy: ${#files[@]} files ($($tidy --version | grep -o 'version [0-9.]*'))"
# Each file's diagnostics come out whole; xargs exits non-zero if any clang-tidy did.
# tools/tidy_one.py skips a file whose identical input was clean before (TAD_CACHE_DIR).
printf '%s\n' "${files[@]}" | xargs -P 2 -n 1 python3 "$tad_root/tools/tidy_one.py" "$tidy" "$dir"
echo "clang-tidy: clean"
