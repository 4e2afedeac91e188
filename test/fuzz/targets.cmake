# The expression fuzzer (README.md in this folder). Included by test/CMakeLists.txt before the
# other tests (not add_subdirectory): Ninja starts ready jobs in the order they are defined, and
# the fuzzer's TU is the longest of a sanitized build, so it goes first rather than last.
#
#   fuzz.replay        builds without TAD_FUZZ: the fuzzer's checks over the checked-in seed
#                      corpus, as a plain program (expressions.cpp with TAD_FUZZ_REPLAY_MAIN;
#                      any compiler)
#
# Both are two translation units: expressions.cpp (the 1-D family, the entry point) and
# shapes.cpp (the matrix family), compiled in parallel (each about half the CPU time).
#   fuzz.expressions   with TAD_FUZZ (clang++ only): libFuzzer with AddressSanitizer and
#                      UndefinedBehaviorSanitizer, run for TAD_FUZZ_SECONDS seconds with
#                      -seed=TAD_FUZZ_SEED on a fresh directory in the build tree followed by
#                      the read-only seed corpus (which it replays first)
#
# TAD_FUZZ, TAD_FUZZ_SECONDS and TAD_FUZZ_SEED are set by test/CMakeLists.txt. Sources are in
# this folder, outputs in <build>/test/fuzz/.

set(tad_fuzz_bin "${CMAKE_CURRENT_BINARY_DIR}/fuzz")

set(tad_fuzz_corpus "${CMAKE_CURRENT_LIST_DIR}/corpus")
set(tad_fuzz_sources "${CMAKE_CURRENT_LIST_DIR}/expressions.cpp" "${CMAKE_CURRENT_LIST_DIR}/shapes.cpp")

# Known issue (README.md, test/fuzz/crashes/xsimd-exp-int64-cast): xsimd 8.1's exp kernel for
# batch<double> converts k = round(x / ln 2) to int64 with a scalar std::copy (AVX2 has no
# packed conversion), undefined behaviour for NaN, +-inf and |x| >~ 6e18, and tad::math passes
# such x to it (exp, expm1, tanh, sigmoid, softplus, pow in double). UndefinedBehaviorSanitizer
# (clang's float-cast-overflow, part of -fsanitize=undefined) reports it on the first special
# value. With this gate ON, clang does not instrument that one conversion, std::copy from
# double* to long*, which only xsimd's slow batch_cast uses here; OFF shows the report.
set(TAD_FUZZ_KNOWN_XSIMD_INT64_CAST ON CACHE BOOL
    "Gate of a known issue: no float-cast-overflow check in std::copy(double*, double*, long*) (xsimd's batch_cast)")
set(tad_fuzz_ignorelist "")
if(TAD_FUZZ_KNOWN_XSIMD_INT64_CAST AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # The same list as TAD_SANITIZE's, a file of the source tree (tools/common.sh hashes its
  # content for ccache).
  set(tad_fuzz_ignorelist "-fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/cmake/tad_ubsan_ignorelist.txt")
endif()

# With TAD_FUZZ, fuzz.expressions replays the same corpus first (with the sanitizers), so the
# replayer (the slowest TU of a sanitized build) is not built.
# TAD_FUZZ_REPLAY=OFF leaves it out (tools/test.sh's gcc stage: the clang-san stage's
# fuzz.expressions replays the same corpus; doc/testing.md).
if(NOT TAD_FUZZ AND TAD_FUZZ_REPLAY)
  add_executable(fuzz.replay ${tad_fuzz_sources})
  set_target_properties(fuzz.replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${tad_fuzz_bin}")
  target_link_libraries(fuzz.replay PRIVATE tad::tad tad_dev_flags)
  target_compile_definitions(fuzz.replay PRIVATE TAD_FUZZ_REPLAY_MAIN)
  # Known issue (doc/testing.md, "Fuzzing"): with g++'s default -ffp-contract=fast, g++ fuses
  # multiplies and adds of its own choosing, differently in the matrix loop and the per-element
  # evaluation that the fuzzer compares bit for bit (a corpus input of the matrix family differs
  # in the last bit of a float). clang (the libFuzzer build) does not contract across ops. Until
  # tad's values are made independent of it, the replay asks g++ for no contraction of its own
  # (tad's own fused multiply-adds, simd::mul_add, are unchanged).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(fuzz.replay PRIVATE -ffp-contract=off)
  endif()
  # The replayer may be built with TAD_SANITIZE=undefined: the same gate.
  # -O1, after the build type's flags, as fuzz.expressions below: the replay checks the values
  # the fuzzer checks, at the fuzzer's optimization level. With g++ its two TUs took 306 s of
  # CPU at -O2 and 203 s at -O1 (the gcc stage's largest objects; doc/testing.md).
  target_compile_options(fuzz.replay PRIVATE ${tad_fuzz_ignorelist} $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-O1>)
  add_test(NAME fuzz.replay COMMAND fuzz.replay "${tad_fuzz_corpus}")
  set_tests_properties(fuzz.replay PROPERTIES LABELS fuzz TIMEOUT 300)
endif()

if(TAD_FUZZ)
  set(tad_fuzz_sanitizers -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  add_executable(fuzz.expressions ${tad_fuzz_sources})
  set_target_properties(fuzz.expressions PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${tad_fuzz_bin}")
  target_link_libraries(fuzz.expressions PRIVATE tad::tad tad_dev_flags)
  # After the build type's flags, so -O1 wins over e.g. -O2 or -O0 (fuzzing wants speed).
  # Line tables give file:line in the sanitizers' stack traces; full -g would add a fifth to
  # this TU's compile time (7 CPU minutes without) for variable and type info only a debugger
  # uses: add it by hand to debug a crash.
  # -fno-sanitize=object-size: as for TAD_SANITIZE (CMakeLists.txt): ASan checks the same accesses.
  target_compile_options(fuzz.expressions PRIVATE
    ${tad_fuzz_sanitizers} -fno-sanitize=object-size -O1 -gline-tables-only ${tad_fuzz_ignorelist})
  target_link_options(fuzz.expressions PRIVATE ${tad_fuzz_sanitizers})

  # libFuzzer adds the inputs it finds to the first directory only: a fresh one per run, in
  # the build tree; the checked-in corpus is only read. Crash files go to fuzz-artifacts/.
  set(tad_fuzz_work "${tad_fuzz_bin}/fuzz-work")
  set(tad_fuzz_artifacts "${tad_fuzz_bin}/fuzz-artifacts")
  set(tad_fuzz_script "${tad_fuzz_bin}/run_fuzz.cmake")
  file(CONFIGURE OUTPUT "${tad_fuzz_script}" @ONLY CONTENT [=[
# Generated by test/fuzz/targets.cmake: runs the fuzzer on a fresh work directory.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}" "${ARTIFACTS}")
execute_process(
  COMMAND "${FUZZER}" "-max_total_time=${SECONDS}" "-seed=${SEED}" -timeout=10 -rss_limit_mb=4096
          -print_final_stats=1 "-artifact_prefix=${ARTIFACTS}/" "${WORK}" "${CORPUS}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz.expressions: the fuzzer exited with ${rc}; the input is in ${ARTIFACTS}")
endif()
]=])
  add_test(NAME fuzz.expressions
    COMMAND "${CMAKE_COMMAND}" -DFUZZER=$<TARGET_FILE:fuzz.expressions> -DSECONDS=${TAD_FUZZ_SECONDS}
            -DSEED=${TAD_FUZZ_SEED}
            -DWORK=${tad_fuzz_work} -DARTIFACTS=${tad_fuzz_artifacts} -DCORPUS=${tad_fuzz_corpus}
            -P "${tad_fuzz_script}")
  math(EXPR tad_fuzz_timeout "${TAD_FUZZ_SECONDS} + 300")
  set_tests_properties(fuzz.expressions PROPERTIES LABELS fuzz TIMEOUT ${tad_fuzz_timeout})
endif()
