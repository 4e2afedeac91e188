# cmake -DBINARY_DIR=<build> -DTARGET=<target> -DEXPECT=ok|bad [-DCONFIG=<cfg>] [-DJOBS=<n>]
#       [-DKEEP_GOING=1 (Ninja only)] -P tad_build_target.cmake
#
# Builds one target of an already configured build tree (used by the compile_fail.* and
# headers tests). EXPECT=ok: the build must succeed. EXPECT=bad: the build must fail; the
# compiler output is printed so that the test's PASS_REGULAR_EXPRESSION can check the
# diagnostic. A .bad target that compiles fails here, whatever the regex.
foreach(v BINARY_DIR TARGET EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "tad_build_target.cmake: -D${v}=... is required")
  endif()
endforeach()
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
if(JOBS)
  list(APPEND config_args --parallel "${JOBS}")
endif()
if(KEEP_GOING)
  list(APPEND config_args -- -k 0)  # report every failing TU
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --target "${TARGET}" ${config_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "ok")
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TARGET}: build failed (${rc}), it must compile")
  endif()
elseif(EXPECT STREQUAL "bad")
  if(rc EQUAL 0)
    # Do not print the output: nothing in it may satisfy the test's regex.
    message(FATAL_ERROR "${TARGET}: compiled, but it must not (TAD_SHOULD_FAIL)")
  endif()
  message("${out}")
else()
  message(FATAL_ERROR "tad_build_target.cmake: EXPECT must be ok or bad, not '${EXPECT}'")
endif()
