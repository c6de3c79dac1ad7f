# Included (OPTIONAL) by src/CMakeLists.txt after hcwarm_objects (the library's
# one compile of each source) is defined.
# 1. The kernel headers' own include root (kernels/...: "common/mhc_params.hpp"),
#    for the generic CPU kernels compiled into the library and for tests.
# 2. The generic CUDA kernels: with nvcc (HCWARM_NVCC), a fatbin of sm_90a SASS and
#    compute_90 PTX, embedded as bytes (no cudart link); without it, an empty image.
target_include_directories(hcwarm_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/backends/cpu/mhc_pre_cpu.cpp PROPERTIES COMPILE_OPTIONS "-O3")

set(_hc_gen_cpp ${CMAKE_CURRENT_BINARY_DIR}/mhc_pre_generic_fatbin.cpp)
if(HCWARM_NVCC)
  set(_hc_fatbin ${CMAKE_CURRENT_BINARY_DIR}/mhc_pre_generic.fatbin)
  file(GLOB_RECURSE _hc_kernel_deps CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cuh
       ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.hpp)
  add_custom_command(
    OUTPUT ${_hc_fatbin}
    COMMAND ${HCWARM_NVCC} -fatbin -std=c++17 -O3
            -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90
            -I${CMAKE_CURRENT_SOURCE_DIR}/kernels
            -o ${_hc_fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/mhc_pre_generic.cu
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/mhc_pre_generic.cu ${_hc_kernel_deps}
    COMMENT "nvcc: generic mHC pre kernels (sm_90a + compute_90 PTX)"
    VERBATIM)
  add_custom_command(
    OUTPUT ${_hc_gen_cpp}
    COMMAND ${CMAKE_COMMAND} -DIN=${_hc_fatbin} -DOUT=${_hc_gen_cpp}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/embed_binary.cmake
    DEPENDS ${_hc_fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/embed_binary.cmake
    VERBATIM)
  target_compile_definitions(hcwarm_objects PRIVATE HCWARM_HAVE_CUDA_GENERIC=1)
else()
  file(CONFIGURE OUTPUT ${_hc_gen_cpp} CONTENT "// No nvcc at configure time: no generic CUDA kernels.
#include \"backends/cuda/mhc_pre_cuda.hpp\"
namespace hcwarm::cuda {
std::span<const std::byte> mhc_pre_generic_fatbin() { return {}; }
}  // namespace hcwarm::cuda
")
endif()
target_sources(hcwarm_objects PRIVATE ${_hc_gen_cpp})
