# `cmake --install build --component hcwarm_dev`: the libraries, headers and CMake package
# (find_package(hcwarm) -> hcwarm::hcwarm, hcwarm::hcwarm_static) for C++ users.
# `--component hcwarm_cli`: the hcwarm command alone.
include(CMakePackageConfigHelpers)
set(HCWARM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hcwarm)

install(TARGETS hcwarm_shared hcwarm_lib EXPORT hcwarmTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT hcwarm_dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT hcwarm_dev NAMELINK_COMPONENT hcwarm_dev)

# Headers keep their paths under src/ (they include each other as "core/error.hpp");
# the CLI's headers stay out: their code is in the executable, not the library.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hcwarm
  COMPONENT hcwarm_dev
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh" PATTERN "cli" EXCLUDE)

install(EXPORT hcwarmTargets NAMESPACE hcwarm:: DESTINATION ${HCWARM_CMAKE_DIR} COMPONENT hcwarm_dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hcwarmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hcwarmConfig.cmake INSTALL_DESTINATION ${HCWARM_CMAKE_DIR})
# Before 1.0 a minor release may break the API, so only the same major.minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hcwarmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hcwarmConfig.cmake ${PROJECT_BINARY_DIR}/hcwarmConfigVersion.cmake
  DESTINATION ${HCWARM_CMAKE_DIR} COMPONENT hcwarm_dev)

install(TARGETS hcwarm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT hcwarm_cli)
