#!/usr/bin/env bash
# Builds and runs the demo (examples/demo.cpp), then every other example.
#
#   tools/demo.sh
#
# Configures build/demo (g++, Release, Ninja; tests and benchmarks off), builds target
# `demo` and runs it, then builds and runs the other examples that examples/CMakeLists.txt
# lists in build/demo/examples/examples.txt. Installs missing Debian packages first when
# run as root (see tools/common.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

tad_require_packages

dir="$tad_root/build/demo"
tad_stage "configure" cmake -S "$tad_root" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_BUILD_TYPE=Release \
    -DTAD_BUILD_TESTS=OFF -DTAD_BUILD_BENCHMARKS=OFF -DTAD_BUILD_EXAMPLES=ON
tad_stage "build demo" cmake --build "$dir" --target demo -j 2
tad_stage "run demo" "$dir/examples/demo"

others=()
while read -r name path; do
  [[ -n $name && $name != demo ]] && others+=("$name:$path")
done < "$dir/examples/examples.txt"
if ((${#others[@]})); then
  tad_stage "build other examples" cmake --build "$dir" --target "${others[@]%%:*}" -j 2
  for entry in "${others[@]}"; do
    tad_stage "run ${entry%%:*}" "${entry#*:}"
  done
fi
