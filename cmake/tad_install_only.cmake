# cmake -DTAD_SOURCE_DIR=... -DBINARY_DIR=... -DGENERATOR=... -DCXX_COMPILER=...
#       [-DMAKE_PROGRAM=...] [-DCONSUMER=<test/consumer/find_package>] -P tad_install_only.cmake
#
# Driver of the ctest test consumer.install_only: configuring tad only to install it needs
# neither Boost.Test nor Google Benchmark (decisions.md 20). In BINARY_DIR/install-only:
#   1. configure TAD_SOURCE_DIR afresh with both made unfindable and no TAD_BUILD_* option
#      given (the defaults, as `cmake -S . -B build` has them); it must succeed and say
#      that the tests and the benchmarks are not built;
#   2. cmake --install it into a fresh prefix; every public header and the package files
#      must be there;
#   3. configure CONSUMER (a find_package(tad CONFIG REQUIRED) project) against that
#      prefix only: it must find this install (configure only: consumer.find_package builds
#      and runs that project against the full build's install);
#   4. the same tad configure with -DTAD_BUILD_TESTS=ON, and with -DTAD_BUILD_BENCHMARKS=ON,
#      must fail with the message naming the Debian package. This proves that the packages
#      really were hidden in step 1, so that step cannot pass by finding them.
# Hiding: CMAKE_DISABLE_FIND_PACKAGE_<name> for `benchmark` and for
# `boost_unit_test_framework`, the package that Boost's CMake config (Boost >= 1.70) looks up
# for the component, exactly as when libboost-test-dev is not installed. (A wrong
# <name>_DIR is not enough: CMake then searches anyway, and CMAKE_IGNORE_PATH misses
# /lib -> /usr/lib on merged-/usr systems.)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message("${out}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
function(expect what regex)
  if(NOT out MATCHES "${regex}")
    message("${out}")
    message(FATAL_ERROR "${what}: the output above does not match '${regex}'")
  endif()
endfunction()

foreach(v TAD_SOURCE_DIR BINARY_DIR GENERATOR CXX_COMPILER CONSUMER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "tad_install_only.cmake: -D${v}=... is required")
  endif()
endforeach()
set(root "${BINARY_DIR}/install-only")
set(build "${root}/tad")
set(prefix "${root}/prefix")
file(REMOVE_RECURSE "${root}")  # from scratch: a fresh configure is what is tested

set(generator_args -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(MAKE_PROGRAM)
  list(APPEND generator_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
set(hide -DCMAKE_DISABLE_FIND_PACKAGE_boost_unit_test_framework=ON
         -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON)

# 1. configure with the defaults
run("${CMAKE_COMMAND}" -S "${TAD_SOURCE_DIR}" -B "${build}" ${generator_args} ${hide})
expect("install-only configure" "tad: tests not built: Boost.Test [^\n]*TAD_BUILD_TESTS=AUTO")
expect("install-only configure" "tad: benchmarks not built: Google Benchmark [^\n]*TAD_BUILD_BENCHMARKS=AUTO")
if(EXISTS "${build}/test" OR EXISTS "${build}/benchmark")
  message(FATAL_ERROR "the install-only configure still added test/ or benchmark/ (${build})")
endif()

# 2. install
run("${CMAKE_COMMAND}" --install "${build}" --prefix "${prefix}")
file(GLOB_RECURSE headers RELATIVE "${TAD_SOURCE_DIR}/include" "${TAD_SOURCE_DIR}/include/tad/*.hpp")
list(LENGTH headers n_headers)
if(n_headers EQUAL 0)
  message(FATAL_ERROR "no headers under ${TAD_SOURCE_DIR}/include/tad")
endif()
set(missing "")
foreach(f IN LISTS headers)
  if(NOT EXISTS "${prefix}/include/${f}")
    list(APPEND missing "include/${f}")
  endif()
endforeach()
foreach(f tadConfig.cmake tadConfigVersion.cmake tadTargets.cmake tad_fix_xsimd.cmake)
  if(NOT EXISTS "${prefix}/share/cmake/tad/${f}")
    list(APPEND missing "share/cmake/tad/${f}")
  endif()
endforeach()
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "not installed into ${prefix}:\n  ${missing}")
endif()

# 3. find_package(tad) against this prefix
set(consumer "${root}/consumer")
run("${CMAKE_COMMAND}" -S "${CONSUMER}" -B "${consumer}" ${generator_args}
    "-DCMAKE_PREFIX_PATH=${prefix}")
file(STRINGS "${consumer}/CMakeCache.txt" tad_dir REGEX "^tad_DIR:")
string(REGEX REPLACE "^tad_DIR:[A-Z]+=" "" tad_dir "${tad_dir}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${tad_dir}" tad_dir)
if(NOT tad_dir STREQUAL "${real_prefix}/share/cmake/tad")
  message(FATAL_ERROR "find_package(tad) found ${tad_dir}, not the install in ${prefix}")
endif()

# 4. the hiding works: asked for explicitly, the tests and the benchmarks are errors
foreach(option TAD_BUILD_TESTS TAD_BUILD_BENCHMARKS)
  # The other option OFF, so that only this one can be the error.
  if(option STREQUAL "TAD_BUILD_TESTS")
    set(deb libboost-test-dev)
    set(args -DTAD_BUILD_TESTS=ON -DTAD_BUILD_BENCHMARKS=OFF)
  else()
    set(deb libbenchmark-dev)
    set(args -DTAD_BUILD_TESTS=OFF -DTAD_BUILD_BENCHMARKS=ON)
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${TAD_SOURCE_DIR}" -B "${build}" ${hide} ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message("${out}")
    message(FATAL_ERROR "-D${option}=ON with its dependency hidden configured without error: "
                        "the install-only configure proves nothing")
  endif()
  # (CMake wraps the lines of an error message: match words, not the sentence.)
  expect("-D${option}=ON with its dependency hidden" "tad: ${option}=ON needs")
  expect("-D${option}=ON with its dependency hidden" "${deb}")
endforeach()
message("consumer.install_only: OK (${prefix})")
