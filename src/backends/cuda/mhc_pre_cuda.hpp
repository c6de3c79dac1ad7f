#pragma once
// The CUDA side of mHC pre: launching the two kernels of a module (NVRTC
// specialization or the library's generic nvcc fatbin) with cuLaunchKernel.
#include <cstddef>
#include <span>

#include "backends/cuda/cuda_driver.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::cuda {

struct MhcPreCudaKernels {
  CUfunction partial = nullptr;
  CUfunction finish = nullptr;
  CUfunction fused = nullptr;  // one-pass kernel (num_splits == 1 modules), or null
};

// Launcher: queues both kernels on `stream`; returns the first driver error
// (CUDA_SUCCESS otherwise). T == 0 queues nothing.
// stages: bit 0 = partial, bit 1 = finish (benchmarks time them apart).
// With k.fused set, p.counters set and stages == 3, runs the one-pass kernel
// instead (p.num_parts must then be HCWARM_MHC_FUSED_PARTS(K)).
CUresult launch_mhc_pre_cuda(const CudaDriver& driver, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages = 3);

// K-parts of the CUDA partial stage for a split count (see mhc_params.hpp).
inline int cuda_num_parts(int num_splits) { return num_splits * HCWARM_MHC_CUDA_SUBSPLITS(num_splits); }
inline int cuda_fused_parts(long long k) { return HCWARM_MHC_FUSED_PARTS(k); }

// The generic kernels built ahead of time by nvcc (sm_90a SASS + compute_90 PTX),
// embedded in the library; empty when the library was built without nvcc.
std::span<const std::byte> mhc_pre_generic_fatbin();
inline constexpr const char* kGenericPartialSymbol = "hcwarm_mhc_pre_partial_generic";
inline constexpr const char* kGenericFinishSymbol = "hcwarm_mhc_pre_finish_generic";
inline constexpr const char* kGenericFinishNormSymbol = "hcwarm_mhc_pre_finish_generic_norm";
inline constexpr const char* kGenericFusedSymbol = "hcwarm_mhc_pre_fused_generic";
inline constexpr const char* kGenericFusedNormSymbol = "hcwarm_mhc_pre_fused_generic_norm";

}  // namespace hcwarm::cuda
