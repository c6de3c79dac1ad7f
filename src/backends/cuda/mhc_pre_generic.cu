// The generic CUDA mHC pre kernels: split count and hidden size are run-time
// arguments. Built ahead of time by nvcc (src/backends/cuda/generic.cmake) into
// a fatbin embedded in libhcwarm; loaded with cuModuleLoadData.
// The partial and finish kernels come once per input kind (residual streams,
// the first layer's embedding, the fused boundary's previous residual): read
// at run time, the kind cost 1.1-1.3x at decode sizes (docs/BENCHMARKS.md,
// "The generic kernels within 1.3x of the specialized ones"). The finish and
// one-pass kernels come in both reciprocal forms, as the specializations do
// (fast_finish).
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_one_pass.cuh"

// NAME: the entry point (mhc_pre_cuda.hpp, kGeneric*Symbols); INPUT: hcwarm_mhc::kInput*;
// NORM: fused norm; FAST: fast reciprocals.
#define HCWARM_GENERIC_PARTIAL(NAME, INPUT)                                 \
  extern "C" __global__ void __launch_bounds__(hcwarm_mhc::kCudaThreads, 3)  \
      NAME(hcwarm_mhc_pre_params p) {                                       \
    hcwarm_kernels::cuda::mhc_pre_partial<0, 4, 0, INPUT>(p);               \
  }
#define HCWARM_GENERIC_FINISH(NAME, NORM, FAST, INPUT)                     \
  extern "C" __global__ void __launch_bounds__(hcwarm_mhc::kCudaThreads, 3) \
      NAME(hcwarm_mhc_pre_params p) {                                      \
    hcwarm_kernels::cuda::mhc_pre_finish<0, 4, 0, NORM, FAST, INPUT>(p);   \
  }
#define HCWARM_GENERIC_ONE_PASS(NAME, NORM, FAST)                                                            \
  extern "C" __global__ void __launch_bounds__(hcwarm_mhc::one_pass_threads(hcwarm_mhc::kOnePassMaxHidden), 1) \
      NAME(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {                        \
    hcwarm_kernels::cuda::mhc_pre_one_pass<4, 0, NORM, FAST>(p, &tmap);                                      \
  }
// The four finishes of one input kind.
#define HCWARM_GENERIC_FINISHES(KIND, INPUT)                                                  \
  HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_precise_##KIND, false, false, INPUT)      \
  HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_fast_##KIND, false, true, INPUT)          \
  HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_norm_precise_##KIND, true, false, INPUT)  \
  HCWARM_GENERIC_FINISH(hcwarm_mhc_pre_finish_generic_norm_fast_##KIND, true, true, INPUT)

HCWARM_GENERIC_PARTIAL(hcwarm_mhc_pre_partial_generic_residual, hcwarm_mhc::kInputResidual)
HCWARM_GENERIC_PARTIAL(hcwarm_mhc_pre_partial_generic_embed, hcwarm_mhc::kInputEmbed)
HCWARM_GENERIC_PARTIAL(hcwarm_mhc_pre_partial_generic_post, hcwarm_mhc::kInputPost)
HCWARM_GENERIC_FINISHES(residual, hcwarm_mhc::kInputResidual)
HCWARM_GENERIC_FINISHES(embed, hcwarm_mhc::kInputEmbed)
HCWARM_GENERIC_FINISHES(post, hcwarm_mhc::kInputPost)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_precise, false, false)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_fast, false, true)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_norm_precise, true, false)
HCWARM_GENERIC_ONE_PASS(hcwarm_mhc_pre_one_pass_generic_norm_fast, true, true)
