# Included (OPTIONAL) by src/CMakeLists.txt after hcwarm_objects (the library's
# one compile of each source) is defined.
# 1. The kernel headers' own include root (kernels/...: "common/mhc_params.hpp"),
#    for the generic CPU kernels compiled into the library and for tests.
# 2. The generic CUDA kernels (mhc_pre and mhc_post): with nvcc (HCWARM_NVCC), one
#    fatbin each with SASS for every target of HCWARM_GENERIC_CUDA_ARCHS and
#    compute_90 PTX (forward compatibility), embedded as bytes (no cudart link);
#    without it, empty images.
target_include_directories(hcwarm_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/backends/cpu/mhc_pre_cpu.cpp PROPERTIES COMPILE_OPTIONS "-O3")

# The SASS targets: the portable floor (sm_80: the split pair and hc_post; no
# one-pass kernel below sm_90), Hopper, datacenter and workstation Blackwell.
# Targets the installed nvcc cannot build are left out, and said so.
set(HCWARM_GENERIC_CUDA_ARCHS "80;90a;100a;103a;120a" CACHE STRING
    "SASS targets of the generic CUDA kernels (nvcc -gencode code=sm_<arch>)")
set(hcwarm_generic_gencode "")
set(hcwarm_generic_archs "")
if(HCWARM_NVCC)
  execute_process(COMMAND ${HCWARM_NVCC} --list-gpu-code OUTPUT_VARIABLE hcwarm_nvcc_codes ERROR_QUIET)
  string(STRIP "${hcwarm_nvcc_codes}" hcwarm_nvcc_codes)
  string(REPLACE "\n" ";" hcwarm_nvcc_codes "${hcwarm_nvcc_codes}")
  foreach(arch IN LISTS HCWARM_GENERIC_CUDA_ARCHS)
    string(REGEX REPLACE "[af]$" "" arch_base "${arch}")  # 90a -> 90: nvcc lists the base targets
    if(hcwarm_nvcc_codes AND NOT "sm_${arch_base}" IN_LIST hcwarm_nvcc_codes)
      message(STATUS "hcwarm: ${HCWARM_NVCC} cannot build sm_${arch}: the generic CUDA kernels leave it out")
      continue()
    endif()
    list(APPEND hcwarm_generic_gencode "-gencode=arch=compute_${arch},code=sm_${arch}")
    list(APPEND hcwarm_generic_archs "sm_${arch}")
  endforeach()
  list(APPEND hcwarm_generic_gencode "-gencode=arch=compute_90,code=compute_90")
  list(JOIN hcwarm_generic_archs ", " hcwarm_generic_archs_text)
endif()

# name: mhc_pre_generic | mhc_post_generic (backends/cuda/<name>.cu -> <name>_fatbin()); header declares it.
function(hcwarm_generic_fatbin name header)
  set(gen_cpp ${CMAKE_CURRENT_BINARY_DIR}/${name}_fatbin.cpp)
  if(HCWARM_NVCC)
    set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${name}.fatbin)
    file(GLOB_RECURSE kernel_deps CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cuh
         ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.hpp)
    add_custom_command(
      OUTPUT ${fatbin}
      COMMAND ${HCWARM_NVCC} -fatbin -std=c++17 -O3 --threads 0 ${hcwarm_generic_gencode}
              -I${CMAKE_CURRENT_SOURCE_DIR}/kernels
              -o ${fatbin} ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/${name}.cu
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/${name}.cu ${kernel_deps}
      COMMENT "nvcc: ${name} kernels (${hcwarm_generic_archs_text} + compute_90 PTX)"
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
  target_compile_definitions(hcwarm_objects PRIVATE HCWARM_HAVE_CUDA_GENERIC=1
                             HCWARM_GENERIC_CUDA_TARGETS="${hcwarm_generic_archs_text}")
endif()
