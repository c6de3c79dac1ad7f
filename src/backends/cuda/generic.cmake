# Included (OPTIONAL) by src/CMakeLists.txt after hcwarm_objects (the library's
# one compile of each source) is defined.
# 1. The kernel headers' own include root (kernels/...: "common/mhc_params.hpp"),
#    for the generic CPU kernels compiled into the library and for tests.
# 2. The generic CUDA kernels (mhc_pre and mhc_post): with nvcc (HCWARM_NVCC), one
#    fatbin each of sm_90a SASS and compute_90 PTX, embedded as bytes (no cudart
#    link); without it, empty images.
target_include_directories(hcwarm_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/backends/cpu/mhc_pre_cpu.cpp PROPERTIES COMPILE_OPTIONS "-O3")

# name: mhc_pre_generic | mhc_post_generic (backends/cuda/<name>.cu -> <name>_fatbin()); header declares it.
function(hcwarm_generic_fatbin name header)
  set(gen_cpp ${CMAKE_CURRENT_BINARY_DIR}/${name}_fatbin.cpp)
  if(HCWARM_NVCC)
    set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${name}.fatbin)
    file(GLOB_RECURSE kernel_deps CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cuh
         ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.hpp)
    add_custom_command(
      OUTPUT ${fatbin}
      COMMAND ${HCWARM_NVCC} -fatbin -std=c++17 -O3
              -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90
              -I${CMAKE_CURRENT_SOURCE_DIR}/kernels
              -o ${fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/${name}.cu
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/${name}.cu ${kernel_deps}
      COMMENT "nvcc: ${name} kernels (sm_90a + compute_90 PTX)"
      VERBATIM)
    add_custom_command(
      OUTPUT ${gen_cpp}
      COMMAND ${CMAKE_COMMAND} -DIN=${fatbin} -DOUT=${gen_cpp} -DFUNC=${name}_fatbin -DHEADER=${header}
              -P ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/embed_binary.cmake
      DEPENDS ${fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/embed_binary.cmake
      VERBATIM)
  else()
    file(CONFIGURE OUTPUT ${gen_cpp} CONTENT "// No nvcc at configure time: no generic CUDA kernels.
#include \"${header}\"
namespace hcwarm::cuda {
std::span<const std::byte> ${name}_fatbin() { return {}; }
}  // namespace hcwarm::cuda
")
  endif()
  target_sources(hcwarm_objects PRIVATE ${gen_cpp})
endfunction()

if(NOT HCWARM_NVCC)
  message(STATUS "hcwarm: no nvcc: the generic CUDA kernels are not built, so on CUDA tiered execution is off "
                 "(a kernel prewarm did not load compiles in the call's path); `hcwarm info` says so too")
endif()
hcwarm_generic_fatbin(mhc_pre_generic backends/cuda/mhc_pre_cuda.hpp)
hcwarm_generic_fatbin(mhc_post_generic backends/cuda/hc_post_cuda.hpp)
if(HCWARM_NVCC)
  target_compile_definitions(hcwarm_objects PRIVATE HCWARM_HAVE_CUDA_GENERIC=1)
endif()
