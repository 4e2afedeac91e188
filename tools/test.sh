#!/usr/bin/env bash
# Builds and runs the whole test suite (what CI runs: .ci/run calls it with no arguments).
#
#   tools/test.sh                  every stage below, in order (CI)
#   tools/test.sh --all            the same
#   tools/test.sh --quick          the gcc stage only
#   tools/test.sh --stage S[,S..]  only the named stages (e.g. --stage clang-san; --stage fuzz)
#
# Stages (doc/testing.md lists what each checks and how long it takes):
#   gcc        g++, -march=native, -O1: every test, compile-fail tests, headers, consumers,
#              examples, fuzz.replay (the fuzzer's checks over the seed corpus); benchmarks
#              compiled (-O0; bench.icount -O3); icount: the instructions per call of every workload against
#              benchmark/icount/counts.txt (tools/icount.py, valgrind)
#   clang-san  clang++, -march=native, -O1, AddressSanitizer + UndefinedBehaviorSanitizer,
#              without tad's forced inlining (TAD_FORCE_INLINE=OFF): every test area but
#              test/property (no examples and no compile-fail tests: the gcc stage runs them,
#              tidy compiles the examples with clang++)
#   sse2       g++ for the baseline x86-64 (SSE2, no -march), -O1: the test areas whose code
#              depends on the SIMD width (ops, eval, simd, train), and isa.compare: the gcc
#              stage's native results within tolerance (incl. modifiers, custom rules, lets)
#   tsan       clang++ with ThreadSanitizer: test/threads
#   tidy       clang-tidy (.clang-tidy) over the public headers and the examples
#   fuzz       (not in CI, not in --all: run it after engine changes) clang++ with ASan + UBSan:
#              libFuzzer (-seed=1) on the seed corpus for TAD_FUZZ_SECONDS (default 30); it was
#              part of clang-san until issue 16 (doc/testing.md)
#
# Each build stage: configure build/test-<stage> (Ninja, -O1 (tsan: -O2) without debug info,
# warnings as errors incl. -Wshadow -Wconversion -Wsign-conversion), cmake --build -j 2
# (ninja -k 0), ctest -j 2. Missing Debian packages are installed first when run as root
# (tools/common.sh). Compiles, compile-fail results and clean clang-tidy runs are cached outside
# the clone (tools/common.sh: tad_cache_setup; TAD_CACHE=0 turns the caches off).
# Exits non-zero if any stage fails; a failing stage does not stop the next one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

all_stages=(gcc clang-san sse2 tsan tidy)
opt_in_stages=(fuzz)
stages=("${all_stages[@]}")
while (($#)); do
  case $1 in
    --all) stages=("${all_stages[@]}") ;;
    --quick) stages=(gcc) ;;
    --stage)
      [[ $# -ge 2 ]] || { echo "tools/test.sh: --stage needs a list (${all_stages[*]})" >&2; exit 2; }
      IFS=, read -r -a stages <<<"$2"
      shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "tools/test.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
for s in "${stages[@]}"; do
  [[ " ${all_stages[*]} ${opt_in_stages[*]} " == *" $s "* ]] ||
    { echo "tools/test.sh: unknown stage '$s' (${all_stages[*]} ${opt_in_stages[*]})" >&2; exit 2; }
done

tad_require_packages
tad_cache_setup

# Plain Boost.Test output in CI logs (no ANSI colour codes).
if [[ ${CI:-} == true ]]; then export BOOST_TEST_COLOR_OUTPUT=no; fi
# Sanitizer reports stop the process with a non-zero exit (the builds also pass
# -fno-sanitize-recover=all); leaks are errors too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

clangxx=clang++
command -v "$clangxx" >/dev/null 2>&1 || clangxx=clang++-14
clang_tidy=clang-tidy
command -v "$clang_tidy" >/dev/null 2>&1 || clang_tidy=clang-tidy-14

# build_and_test <stage> <c++ compiler> <ctest args (one string)> <targets (one string)> -- <cmake args...>
build_and_test() {
  local name=$1 cxx=$2 ctest_args=$3 targets=$4 dir="$tad_root/build/test-$1"
  shift 5
  # clang's precompiled header records the clone's absolute paths and a timestamp, so with it
  # every clang compile missed the cache in a clone elsewhere (doc/testing.md, "Caches"):
  # without it they hit. (g++'s .gch is hashed from what it was built from: it stays.)
  local pch=()
  if [[ $cxx == *clang* && ${#tad_launcher[@]} -gt 0 ]]; then pch=(-DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON); fi
  local target_args=()
  for t in $targets; do target_args+=(--target "$t"); done
  tad_stage "$name: configure ($cxx)" cmake -S "$tad_root" -B "$dir" -G Ninja \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${stage_opt:--O2}" "${tad_launcher[@]}" "${pch[@]}" "$@" &&
  tad_stage "$name: build" cmake --build "$dir" -j 2 "${target_args[@]}" -- -k 0 &&
  # shellcheck disable=SC2086  # ctest_args is a list of words
  tad_stage "$name: test" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j 2 $ctest_args
}

run_stage() {
  case $1 in
    gcc)
      # fuzz.replay: the fuzzer's checks over the seed corpus (the sanitized libFuzzer build took
      # ~790 s in clang-san: now the opt-in stage fuzz).
      # -O1 (since issue 40, for the CI budget: a third less compile time than -O2; the tests
      # check values, not machine code). Optimized code still runs here: bench.icount (-O3)
      # checks every workload it counts (W1-W5, LR, SMX, SQ 4, MLP, RNN, SCAN) against its
      # hand-written baseline before the test `icount` counts (benchmark/icount/). The other
      # benchmarks are only compiled here, at -O0 (-O1 since issue 41, -O0 since issue 40's CI
      # work: for the CI budget). TAD_GCC_MIN_HEAP_MB: g++ collects garbage at most once per TU
      # (CMakeLists.txt; 10-25 % less compile time, up to ~7 GB per TU, two at a time).
      stage_opt=-O1 build_and_test gcc g++ "" "" -- -DTAD_BUILD_TESTS=ON -DTAD_BUILD_EXAMPLES=ON -DTAD_BUILD_BENCHMARKS=ON \
        -DTAD_FUZZ_REPLAY=ON -DTAD_BENCH_OPT=-O0 -DTAD_GCC_MIN_HEAP_MB=4096 ;;
    clang-san)
      # -O1, as the sanitizers' documentation advises (-O0 compiles a third faster but runs the
      # tests ~50x slower: minutes each); the fuzzer is -O1 in any build (test/fuzz).
      # Examples are not built here (~110 s of CPU, for the CI budget): the gcc stage runs them
      # and the tidy stage compiles each with clang++ and the project's -Werror flags.
      # No compile-fail tests (for the CI budget: the .ok half since 2026-12-03, ~75 s of CPU; the
      # .bad half since issue 41, ~200 s): the gcc stage builds every .ok file and checks every
      # .bad file's diagnostic, which is a static_assert's text, the same with either compiler.
      # No fuzzer (since issue 16, for the CI budget: its two sanitized TUs were a third of this
      # stage's CPU): the gcc stage replays its corpus, the opt-in stage fuzz runs libFuzzer.
      # TAD_FORCE_INLINE=OFF (since issue 40's CI work): clang's optimizer and code generation,
      # on the sanitizers' checks around every access, are most of a TU's time, and tad's forced
      # inlining multiplies the code they see: a third less compile time without it, the tests
      # ~30 % slower (seconds). The sanitizers check every access either way; the gcc stage,
      # the examples and bench.icount build what users build (include/tad/config.hpp).
      # TAD_TEST_ALL_RULES=OFF: test/gradient/one_node.cpp runs each op under clip_gradient only
      # (the stage's longest TU, 248 s of 2300 s of CPU; the gcc stage runs all three rules).
      stage_opt=-O1 build_and_test clang-san "$clangxx" "-LE consumer|compile_fail" "" -- -DTAD_BUILD_TESTS=ON -DTAD_BUILD_EXAMPLES=OFF \
        -DTAD_BUILD_BENCHMARKS=OFF -DTAD_PROPERTY_TESTS=OFF -DTAD_HEADER_TESTS=OFF \
        -DTAD_SANITIZE=address,undefined -DTAD_FUZZ=OFF -DTAD_FUZZ_REPLAY=OFF -DTAD_ISA_DUMP=OFF -DTAD_TEST_REALS=float \
        -DTAD_FORCE_INLINE=OFF -DTAD_TEST_ALL_RULES=OFF ;;
    fuzz)
      # libFuzzer with ASan + UBSan on the seed corpus, then TAD_FUZZ_SECONDS of fuzzing (test/fuzz).
      stage_opt=-O1 build_and_test fuzz "$clangxx" "-R ^fuzz\.expressions$" "fuzz.expressions" -- -DTAD_BUILD_TESTS=ON \
        -DTAD_BUILD_EXAMPLES=OFF -DTAD_BUILD_BENCHMARKS=OFF -DTAD_PROPERTY_TESTS=OFF -DTAD_HEADER_TESTS=OFF \
        -DTAD_SANITIZE=address,undefined -DTAD_FUZZ=ON -DTAD_ISA_DUMP=OFF ;;
    sse2)
      # Compared with the native build's results when the gcc stage has written them.
      local reference="$tad_root/build/test-gcc/isa_dump.txt"
      if [[ -f $reference ]]; then
        echo "==> sse2: isa.compare checks the results against $reference"
      else
        echo "==> sse2: no $reference (run the gcc stage first): isa.compare is skipped"
        reference=""
      fi
      # -O1 (for the CI budget: ~22 % less compile time than -O2): the stage checks the
      # 128-bit code paths' results, not their speed.
      # Not test.gradient (248 s of CPU): its modifiers, custom rules and lets run the elementwise
      # code test.eval and test.ops check here, and isa.compare compares their 128-bit results
      # (test/isa/dump.cpp: modifiers, custom_let) with the native build's.
      stage_opt=-O1 build_and_test sse2 g++ "-R ^(test\.(ops|eval|simd|train)|isa\.(dump|compare))$" \
        "test.ops test.eval test.simd test.train isa_dump" -- -DTAD_BUILD_TESTS=ON \
        -DTAD_BUILD_EXAMPLES=OFF -DTAD_BUILD_BENCHMARKS=OFF -DTAD_NATIVE=OFF -DTAD_ISA_REFERENCE="$reference" \
        -DTAD_TEST_REALS=double -DTAD_GCC_MIN_HEAP_MB=4096 ;;
    tsan)
      build_and_test tsan "$clangxx" "-R ^test\.threads$" "test.threads" -- -DTAD_BUILD_TESTS=ON \
        -DTAD_BUILD_EXAMPLES=OFF -DTAD_BUILD_BENCHMARKS=OFF -DTAD_SANITIZE=thread ;;
    tidy)
      tad_stage "tidy: clang-tidy" "$tad_root/tools/tidy.sh" "$clang_tidy" "$clangxx" ;;
  esac
}

total_start=$(tad_now)
failed=()
for s in "${stages[@]}"; do
  run_stage "$s" || failed+=("$s")
done

echo "==> total: $(tad_elapsed "$total_start" "$(tad_now)") s"
if ((${#failed[@]})); then
  echo "==> FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "==> all passed"
