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
#include "cuda/mhc_pre_fold.cuh"
// The one-pass kernel (TMA, mbarriers) exists from sm_90; the sm_80 image holds
// the split pair alone, which is all the portable forms run.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#include "cuda/mhc_pre_one_pass.cuh"
#endif

// Explicit instantiations of the kernel headers' __global__ templates; the
// host finds them by the mangled names of generic_partial_entry,
// generic_finish_entry, generic_fold_entry and generic_one_pass_entry (mhc_pre_cuda.hpp), whose
// template arguments these repeat: split class 0, hc 4, hidden 0 (both from the
// params), 2 residual stages, hcwarm_mhc::kCudaThreads a block and 3 blocks per SM
// (the streaming finish: kCudaAnyStreamingClass, 8); the one-pass kernel with the largest block
// (hcwarm_mhc::kOnePassMaxHidden's).
namespace hcwarm_kernels::cuda {
namespace {
constexpr int kResidual = hcwarm_mhc::kInputResidual, kEmbed = hcwarm_mhc::kInputEmbed, kPost = hcwarm_mhc::kInputPost;
constexpr int kThreads = hcwarm_mhc::kCudaThreads;
}  // namespace

template __global__ void mhc_pre_partial_kernel<0, 4, 0, kResidual, 2, kThreads, 3>(hcwarm_mhc_pre_params);
template __global__ void mhc_pre_partial_kernel<0, 4, 0, kEmbed, 2, kThreads, 3>(hcwarm_mhc_pre_params);
template __global__ void mhc_pre_partial_kernel<0, 4, 0, kPost, 2, kThreads, 3>(hcwarm_mhc_pre_params);

template __global__ void mhc_pre_fold_kernel<4, 0>(hcwarm_mhc_pre_params);

// A finish kernel (split class, input kind, streaming form, blocks per SM) with and without
// the norm, in both reciprocal forms.
#define HCWARM_GENERIC_FINISH_FORMS(CLASS, INPUT, STREAMS, MIN_BLOCKS)                                             \
  template __global__ void mhc_pre_finish_kernel<CLASS, 4, 0, false, false, INPUT, STREAMS, MIN_BLOCKS>(hcwarm_mhc_pre_params); \
  template __global__ void mhc_pre_finish_kernel<CLASS, 4, 0, false, true, INPUT, STREAMS, MIN_BLOCKS>(hcwarm_mhc_pre_params);  \
  template __global__ void mhc_pre_finish_kernel<CLASS, 4, 0, true, false, INPUT, STREAMS, MIN_BLOCKS>(hcwarm_mhc_pre_params);  \
  template __global__ void mhc_pre_finish_kernel<CLASS, 4, 0, true, true, INPUT, STREAMS, MIN_BLOCKS>(hcwarm_mhc_pre_params);

// The finish of any split count, per input kind.
HCWARM_GENERIC_FINISH_FORMS(0, kResidual, false, 3)
HCWARM_GENERIC_FINISH_FORMS(0, kEmbed, false, 3)
HCWARM_GENERIC_FINISH_FORMS(0, kPost, false, 3)

// The large-T buckets' streaming finish, 8 blocks per SM (kCudaAnyStreamingClass): the
// residual's pair (where the one-pass kernel does not run) and the embedding's.
constexpr int kStreaming = hcwarm_mhc::kCudaAnyStreamingClass;
HCWARM_GENERIC_FINISH_FORMS(kStreaming, kResidual, true, 8)
HCWARM_GENERIC_FINISH_FORMS(kStreaming, kEmbed, true, 8)

// The deep partial (hcwarm_mhc::cuda_deep_partial, and the one-wave pair's) 4 stages deep and
// the one-wave pair's streaming finish of any split count (hcwarm_mhc::cuda_one_wave), residual
// streams only.
constexpr int kDeep = hcwarm_mhc::kCudaDeepPartialStages;
template __global__ void mhc_pre_partial_kernel<0, 4, 0, kResidual, kDeep, kThreads, 3>(hcwarm_mhc_pre_params);
HCWARM_GENERIC_FINISH_FORMS(0, kResidual, true, 8)

#undef HCWARM_GENERIC_FINISH_FORMS

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr int kOnePassThreads = hcwarm_mhc::one_pass_threads(hcwarm_mhc::kOnePassMaxHidden);

template __global__ void mhc_pre_one_pass_kernel<4, 0, false, false, false, kOnePassThreads>(hcwarm_mhc_pre_params,
                                                                           const __grid_constant__ hcwarm_tensor_map);
template __global__ void mhc_pre_one_pass_kernel<4, 0, false, true, false, kOnePassThreads>(hcwarm_mhc_pre_params,
                                                                           const __grid_constant__ hcwarm_tensor_map);
template __global__ void mhc_pre_one_pass_kernel<4, 0, true, false, false, kOnePassThreads>(hcwarm_mhc_pre_params,
                                                                           const __grid_constant__ hcwarm_tensor_map);
template __global__ void mhc_pre_one_pass_kernel<4, 0, true, true, false, kOnePassThreads>(hcwarm_mhc_pre_params,
                                                                           const __grid_constant__ hcwarm_tensor_map);

#endif

}  // namespace hcwarm_kernels::cuda
