// The generic CUDA mHC pre kernels: split count, hidden size and input
// (residual streams, the first layer's embedding or the fused boundary's
// previous residual) are run-time arguments. Built ahead of time by nvcc (src/backends/cuda/generic.cmake) into
// a fatbin embedded in libhcwarm; loaded with cuModuleLoadData.
// The finish and one-pass kernels come in both reciprocal forms, as the
// specializations do (fast_finish): the comb warps' Sinkhorn sits on the
// one-pass chunk loop's path, where the IEEE form costs 1.4-1.8x.
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_one_pass.cuh"

extern "C" __global__ void __launch_bounds__(HCWARM_MHC_CUDA_THREADS, 3)
    hcwarm_mhc_pre_partial_generic(hcwarm_mhc_pre_params p) {
  hcwarm_kernels::cuda::mhc_pre_partial<0, 4, 0, HCWARM_MHC_INPUT_RUNTIME>(p);
}

// NAME: the entry point (mhc_pre_cuda.hpp, generic_symbols); NORM: fused norm; FAST: fast reciprocals.
#define HCWARM_GENERIC_FINISH(NAME, NORM, FAST)                                     \
  extern "C" __global__ void __launch_bounds__(HCWARM_MHC_CUDA_THREADS, 3)          \
      NAME(hcwarm_mhc_pre_params p) {                                               \
    hcwarm_kernels::cuda::mhc_pre_finish<0, 4, 0, NORM, FAST, HCWARM_MHC_INPUT_RUNTIME>(p); \
  }
#define HCWARM_GENERIC_ONE_PASS(NAME, NORM, FAST)                                                            \
  extern "C" __global__ void __launch_bounds__(HCWARM_MHC_ONE_PASS_THREADS(HCWARM_MHC_ONE_PASS_MAX_HIDDEN), 1) \
      NAME(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {                        \
    hcwarm_kernels::cuda::mhc_pre_one_pass<4, 0, NORM, FAST>(p, &tmap);                                      \
  }

HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_precise, false, false)
HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_fast, false, true)
HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_norm_precise, true, false)
HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_norm_fast, true, true)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_precise, false, false)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_fast, false, true)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_norm_precise, true, false)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_norm_fast, true, true)
