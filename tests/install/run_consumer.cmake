# cmake -P script behind the install.consumer test (tests/install/tests.cmake gives the -D's).
cmake_minimum_required(VERSION 3.25)

# Runs a command; any failure fails the test with the command's output.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# A fresh prefix and consumer build every run, so nothing stale can pass the test.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(REAL_PATH ${WORK_DIR} WORK_DIR)
set(prefix ${WORK_DIR}/prefix)

run(${CMAKE_COMMAND} --install ${HCWARM_BUILD_DIR} --prefix ${prefix} --component hcwarm_dev)
foreach(f ${LIBDIR}/libhcwarm.a ${LIBDIR}/libhcwarm.so ${LIBDIR}/cmake/hcwarm/hcwarmConfig.cmake
          ${LIBDIR}/cmake/hcwarm/hcwarmConfigVersion.cmake include/hcwarm/mhc/hc_pre_op.hpp
          include/hcwarm/kernels/cuda/mhc_pre.cuh include/hcwarm/kernels/common/mhc_params.hpp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "hcwarm_dev did not install ${f}")
  endif()
endforeach()
# The CLI is its own component, and its headers are not part of the library.
foreach(f bin/hcwarm include/hcwarm/cli)
  if(EXISTS ${prefix}/${f})
    message(FATAL_ERROR "hcwarm_dev installed ${f}")
  endif()
endforeach()

set(launcher)
if(CXX_LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
# A sanitized libhcwarm needs the sanitizer's runtime in the program that links it.
set(sanitize_flags)
if(SANITIZE)
  set(sanitize_flags -DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE} -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE})
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${launcher} ${sanitize_flags}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)

# Without LD_LIBRARY_PATH, app must find libhcwarm.so in the prefix (the imported target's rpath).
run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/build/app)
string(FIND "${out}" "libhcwarm: ${prefix}/${LIBDIR}/libhcwarm.so" at)
if(at EQUAL -1)
  message(FATAL_ERROR "app did not run with ${prefix}/${LIBDIR}/libhcwarm.so:\n${out}")
endif()
message(STATUS "app: ${out}")
run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/build/app_static)
string(FIND "${out}" "libhcwarm: none" at)
if(at EQUAL -1)
  message(FATAL_ERROR "app_static loaded a shared libhcwarm:\n${out}")
endif()
message(STATUS "app_static: ${out}")
