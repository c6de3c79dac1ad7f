# Optional: locate nvcc to build the generic (run-time split count) CUDA kernels
# ahead of time. Without it the library still builds; the generic CUDA variant
# then reports itself unavailable.
set(HCWARM_NVCC "" CACHE FILEPATH "nvcc used for the ahead-of-time generic kernels")
if(HCWARM_WITH_NVCC AND NOT HCWARM_NVCC)
  find_program(HCWARM_NVCC_FOUND nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
  if(HCWARM_NVCC_FOUND)
    set(HCWARM_NVCC "${HCWARM_NVCC_FOUND}")
  endif()
endif()
if(HCWARM_NVCC)
  message(STATUS "hcwarm: generic CUDA kernels built with ${HCWARM_NVCC}")
else()
  message(STATUS "hcwarm: nvcc not found; generic CUDA kernels disabled")
endif()
