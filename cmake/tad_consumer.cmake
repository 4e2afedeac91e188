# cmake -DSTEP=install|find_package|add_subdirectory ... -P tad_consumer.cmake
#
# Driver of the consumer.* tests (test/CMakeLists.txt passes every variable):
#   install           cmake --install BINARY_DIR into a fresh PREFIX
#   find_package      configure, build and run SOURCE with CMAKE_PREFIX_PATH=PREFIX
#   add_subdirectory  configure, build and run SOURCE with -DTAD_SOURCE_DIR=TAD_SOURCE_DIR
# Any failing step makes the test fail.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")  # no stale headers from an earlier install
  run("${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${PREFIX}" ${config_args})
  return()
endif()

set(build "${BINARY_DIR}/consumer/${STEP}")
file(REMOVE_RECURSE "${build}")  # configure from scratch: that is what is being tested
set(configure "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(MAKE_PROGRAM)
  list(APPEND configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CONFIG)
  list(APPEND configure "-DCMAKE_BUILD_TYPE=${CONFIG}")
  if(DEFINED CONFIG_FLAGS)
    string(TOUPPER "${CONFIG}" config_upper)
    list(APPEND configure "-DCMAKE_CXX_FLAGS_${config_upper}=${CONFIG_FLAGS}")
  endif()
endif()
if(STEP STREQUAL "find_package")
  list(APPEND configure "-DCMAKE_PREFIX_PATH=${PREFIX}")
elseif(STEP STREQUAL "add_subdirectory")
  list(APPEND configure "-DTAD_SOURCE_DIR=${TAD_SOURCE_DIR}")
else()
  message(FATAL_ERROR "tad_consumer.cmake: unknown STEP '${STEP}'")
endif()
run(${configure})
if(STEP STREQUAL "find_package")  # it must be this build's install, not another tad
  file(STRINGS "${build}/CMakeCache.txt" tad_dir REGEX "^tad_DIR:")
  string(REGEX REPLACE "^tad_DIR:[A-Z]+=" "" tad_dir "${tad_dir}")
  file(REAL_PATH "${PREFIX}" real_prefix)
  file(REAL_PATH "${tad_dir}" tad_dir)
  string(FIND "${tad_dir}" "${real_prefix}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "find_package(tad) found ${tad_dir}, not the install in ${PREFIX}")
  endif()
endif()
run("${CMAKE_COMMAND}" --build "${build}" ${config_args})
find_program(exe NAMES consumer PATHS "${build}" "${build}/${CONFIG}" NO_DEFAULT_PATH)
if(NOT exe)
  message(FATAL_ERROR "consumer executable not found under ${build}")
endif()
run("${exe}")
message("consumer.${STEP}: OK (${exe})")
