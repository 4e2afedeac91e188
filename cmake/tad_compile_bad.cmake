# cmake -DBINARY_DIR=<build> -DTARGET=cf.<name>.bad [-DSOURCE_DIR=<source>] -P tad_compile_bad.cmake
#
# Runs the compile command of a compile-fail target's one source directly, as recorded in
# <build>/compile_commands.json (the cf.*.bad targets set EXPORT_COMPILE_COMMANDS), instead
# of `cmake --build --target`: two builds of one Ninja or Make tree must not run at once, so
# building the target would need RESOURCE_LOCK cmake_build and serialize every .bad test
# (~100 s per CI stage with one core idle). A direct compile touches no build-system state,
# so ctest -j runs the .bad tests side by side. Like tad_build_target.cmake with EXPECT=bad:
# the compile must fail, and its output is printed for the test's PASS_REGULAR_EXPRESSION.
foreach(v BINARY_DIR TARGET)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "tad_compile_bad.cmake: -D${v}=... is required")
  endif()
endforeach()
set(db "${BINARY_DIR}/compile_commands.json")
if(NOT EXISTS "${db}")
  message(FATAL_ERROR "${TARGET}: ${db} does not exist (configure with a Ninja or Makefile generator)")
endif()
file(READ "${db}" text)
# The object's path names the target's directory, "<target>.dir/": find that entry. CMake
# writes one entry per object, as "{" and "}" on lines of their own; parse only that entry
# (string(JSON) on the whole file, once per test, would reparse all of it).
string(FIND "${text}" "/${TARGET}.dir/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${TARGET}: no entry in ${db} (is EXPORT_COMPILE_COMMANDS set on it?)")
endif()
string(SUBSTRING "${text}" 0 ${at} before)
string(FIND "${before}" "\n{" begin REVERSE)
string(SUBSTRING "${text}" ${at} -1 after)
string(FIND "${after}" "\n}" end)
if(begin EQUAL -1 OR end EQUAL -1)
  message(FATAL_ERROR "${TARGET}: cannot parse the entry in ${db}")
endif()
math(EXPR begin "${begin} + 1")
math(EXPR length "${at} + ${end} + 2 - ${begin}")
string(SUBSTRING "${text}" ${begin} ${length} entry)
string(JSON directory GET "${entry}" directory)
string(JSON command GET "${entry}" command)
separate_arguments(command_args UNIX_COMMAND "${command}")

# With TAD_CACHE_DIR in the environment (tools/test.sh, tools/common.sh: tad_cache_setup), a
# failing compile's output is kept under a key of what decides it: the compiler's version, the
# command and the preprocessed source, with the source and build folders replaced by names
# (ccache keeps no failed compile). A second run of unchanged code then preprocesses (~0.3 s)
# instead of compiling, also from a fresh clone in another folder (-DSOURCE_DIR).
set(cache "")
if(DEFINED SOURCE_DIR AND NOT "$ENV{TAD_CACHE_DIR}" STREQUAL "")
  set(pre_args "")
  set(skip OFF)
  foreach(a IN LISTS command_args)
    if(skip)
      set(skip OFF)
    elseif(a STREQUAL "-o")
      set(skip ON)
    elseif(NOT a STREQUAL "-c" AND NOT a STREQUAL "ccache")
      list(APPEND pre_args "${a}")
    endif()
  endforeach()
  list(GET pre_args 0 compiler)
  execute_process(COMMAND ${pre_args} -E WORKING_DIRECTORY "${directory}"
    RESULT_VARIABLE pre_rc OUTPUT_VARIABLE pre ERROR_QUIET)
  execute_process(COMMAND "${compiler}" --version OUTPUT_VARIABLE version ERROR_QUIET)
  if(pre_rc EQUAL 0)
    string(REPLACE "${BINARY_DIR}" "@BINARY_DIR@" pre "${version}${command}${pre}")
    string(REPLACE "${SOURCE_DIR}" "@SOURCE_DIR@" pre "${pre}")
    string(SHA256 key "${pre}")
    set(cache "$ENV{TAD_CACHE_DIR}/compile-fail/${key}.txt")
    if(EXISTS "${cache}")
      file(READ "${cache}" out)
      string(REPLACE "@BINARY_DIR@" "${BINARY_DIR}" out "${out}")
      string(REPLACE "@SOURCE_DIR@" "${SOURCE_DIR}" out "${out}")
      message("(the compiler's output for this input, from ${cache})\n${out}")
      return()
    endif()
  endif()
endif()

execute_process(COMMAND ${command_args} WORKING_DIRECTORY "${directory}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  # Do not print the output: nothing in it may satisfy the test's regex.
  message(FATAL_ERROR "${TARGET}: compiled, but it must not (TAD_SHOULD_FAIL)")
endif()
if(cache)
  string(REPLACE "${BINARY_DIR}" "@BINARY_DIR@" kept "${out}")
  string(REPLACE "${SOURCE_DIR}" "@SOURCE_DIR@" kept "${kept}")
  get_filename_component(cache_dir "${cache}" DIRECTORY)
  file(MAKE_DIRECTORY "${cache_dir}")
  file(WRITE "${cache}.${TARGET}.tmp" "${kept}")
  file(RENAME "${cache}.${TARGET}.tmp" "${cache}")
endif()
message("${out}")
