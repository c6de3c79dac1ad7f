# CLI checks against the independent NumPy reference (tools/mhc_reference.py).
# They need a Python with NumPy: the set-up script installs Debian's python3-numpy.
set(HCWARM_NUMPY_PYTHON "" CACHE FILEPATH "Python interpreter with NumPy for the script tests")
if(NOT HCWARM_NUMPY_PYTHON)
  foreach(candidate /usr/bin/python3 python3)
    find_program(_py NAMES ${candidate} NO_CACHE)
    if(_py)
      execute_process(COMMAND ${_py} -c "import numpy" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(HCWARM_NUMPY_PYTHON ${_py})
        break()
      endif()
    endif()
    unset(_py)
  endforeach()
endif()
if(NOT HCWARM_NUMPY_PYTHON)
  message(FATAL_ERROR "hcwarm tests need Python 3 with NumPy (apt-get install python3-numpy), "
                      "or configure with -DHCWARM_BUILD_TESTS=OFF")
endif()

foreach(backend reference cpu)
  add_test(NAME tools.op_hc_pre_vs_numpy.${backend}
           COMMAND ${HCWARM_NUMPY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_op_hc_pre.py $<TARGET_FILE:hcwarm> ${backend})
  set_tests_properties(tools.op_hc_pre_vs_numpy.${backend} PROPERTIES LABELS cli ENVIRONMENT "${HCWARM_TEST_MEMO_DIR}"
                       ENVIRONMENT_MODIFICATION "${HCWARM_TEST_MEMO_PATH}")
endforeach()

# The compiler memo the tests' CPU kernels go through (tests/compiler_memo/c++).
add_test(NAME tools.compiler_memo COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/compiler_memo/check.sh)
set_tests_properties(tools.compiler_memo PROPERTIES LABELS jit)
