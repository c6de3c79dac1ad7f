# The installed package, as a C++ user gets it: install hcwarm_dev into a fresh prefix,
# build tests/install/consumer against it, run it on libhcwarm.so and on libhcwarm.a.
add_test(NAME install.consumer
  COMMAND ${CMAKE_COMMAND}
    -DHCWARM_BUILD_DIR=${PROJECT_BINARY_DIR}
    -DCONSUMER_DIR=${CMAKE_CURRENT_SOURCE_DIR}/install/consumer
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install-consumer
    -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
    -DGENERATOR=${CMAKE_GENERATOR}
    -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DCXX_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
    -DSANITIZE=${hcwarm_sanitize}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/install/run_consumer.cmake)
set_tests_properties(install.consumer PROPERTIES LABELS install TIMEOUT 180)
