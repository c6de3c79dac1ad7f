// The generic CUDA mHC pre kernels: split count, hidden size and input
// (residual streams, the first layer's embedding or the fused boundary's
// previous residual) are run-time arguments. Built ahead of time by nvcc (src/backends/cuda/generic.cmake) into
// a fatbin embedded in libhcwarm; loaded with cuModuleLoadData.
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_one_pass.cuh"

extern "C" __global__ void __launch_bounds__(HCWARM_MHC_CUDA_THREADS, 3)
    hcwarm_mhc_pre_partial_generic(hcwarm_mhc_pre_params p) {
  hcwarm_kernels::cuda::mhc_pre_partial<0, 4, 0, HCWARM_MHC_INPUT_RUNTIME>(p);
}
extern "C" __global__ void __launch_bounds__(HCWARM_MHC_CUDA_THREADS, 3)
    hcwarm_mhc_pre_finish_generic(hcwarm_mhc_pre_params p) {
  hcwarm_kernels::cuda::mhc_pre_finish<0, 4, 0, false, false, HCWARM_MHC_INPUT_RUNTIME>(p);
}
extern "C" __global__ void __launch_bounds__(HCWARM_MHC_CUDA_THREADS, 3)
    hcwarm_mhc_pre_finish_generic_norm(hcwarm_mhc_pre_params p) {
  hcwarm_kernels::cuda::mhc_pre_finish<0, 4, 0, true, false, HCWARM_MHC_INPUT_RUNTIME>(p);
}
extern "C" __global__ void __launch_bounds__(HCWARM_MHC_ONE_PASS_THREADS(HCWARM_MHC_ONE_PASS_MAX_HIDDEN), 1)
    hcwarm_mhc_pre_one_pass_generic(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {
  hcwarm_kernels::cuda::mhc_pre_one_pass<4, 0, false, false>(p, &tmap);
}
extern "C" __global__ void __launch_bounds__(HCWARM_MHC_ONE_PASS_THREADS(HCWARM_MHC_ONE_PASS_MAX_HIDDEN), 1)
    hcwarm_mhc_pre_one_pass_generic_norm(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {
  hcwarm_kernels::cuda::mhc_pre_one_pass<4, 0, true, false>(p, &tmap);
}
