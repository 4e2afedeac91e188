#!/usr/bin/env bash
# Builds and runs the whole test suite: tests, compile-fail tests, header self-containment,
# consumer projects and examples.
#
#   tools/test.sh           g++ (build/test-gcc, benchmarks compiled too) and then clang++
#                           (build/test-clang, no benchmarks)
#   tools/test.sh --quick   g++ only
#
# Each compiler: configure (Ninja, RelWithDebInfo with CMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2:
# optimized, asserts on, no debug info), cmake --build -j 2 (ninja -k 0: report every
# failing TU, not just the first), ctest --output-on-failure -j 2.
# Installs missing Debian packages first when run as root (see tools/common.sh).
# Exits non-zero if any stage of any compiler fails; a failing compiler does not stop the
# next one from running.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tools/test.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

tad_require_packages

# Plain Boost.Test output in CI logs (no ANSI colour codes).
if [[ ${CI:-} == true ]]; then export BOOST_TEST_COLOR_OUTPUT=no; fi

clangxx=clang++
command -v "$clangxx" >/dev/null 2>&1 || clangxx=clang++-14

# run_compiler <name> <c++ compiler> <benchmarks ON|OFF>
run_compiler() {
  local name=$1 cxx=$2 bench=$3 dir="$tad_root/build/test-$1"
  tad_stage "$name: configure ($cxx)" cmake -S "$tad_root" -B "$dir" -G Ninja \
      -DCMAKE_CXX_COMPILER="$cxx" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 \
      -DTAD_BUILD_TESTS=ON -DTAD_BUILD_EXAMPLES=ON -DTAD_BUILD_BENCHMARKS="$bench" &&
  tad_stage "$name: build" cmake --build "$dir" -j 2 -- -k 0 &&
  tad_stage "$name: test" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j 2
}

total_start=$(tad_now)
failed=()
run_compiler gcc g++ ON || failed+=(gcc)
if ((!quick)); then
  run_compiler clang "$clangxx" OFF || failed+=(clang)
fi

echo "==> total: $(tad_elapsed "$total_start" "$(tad_now)") s"
if ((${#failed[@]})); then
  echo "==> FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "==> all passed"
