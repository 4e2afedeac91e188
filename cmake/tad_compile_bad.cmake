# cmake -DBINARY_DIR=<build> -DTARGET=cf.<name>.bad -P tad_compile_bad.cmake
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
execute_process(COMMAND ${command_args} WORKING_DIRECTORY "${directory}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  # Do not print the output: nothing in it may satisfy the test's regex.
  message(FATAL_ERROR "${TARGET}: compiled, but it must not (TAD_SHOULD_FAIL)")
endif()
message("${out}")
