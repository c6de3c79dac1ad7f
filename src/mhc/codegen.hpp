#pragma once
// The generated translation units of the mHC pre kernels: a few lines that
// instantiate the templates of kernels/cpu/mhc_pre.hpp or kernels/cuda/mhc_pre.cuh
// for one (num_splits, hc, hidden, norm) and export them under fixed names.
// The CUDA source declares each kernel a part of its own (jit/cubin_set.hpp),
// so NVRTC compiles the kernels of a specialization in parallel.
#include <string>

namespace hcwarm::mhc {

// Host (.so) entry points: int fn(const hcwarm_mhc_pre_params*, long long begin, long long end).
inline constexpr const char* kCpuPartialSymbol = "hcwarm_mhc_pre_cpu_partial";
inline constexpr const char* kCpuFinishSymbol = "hcwarm_mhc_pre_cpu_finish";
inline constexpr const char* kCpuAbiSymbol = "hcwarm_mhc_pre_cpu_abi";
// CUDA kernels: __global__ void fn(hcwarm_mhc_pre_params).
inline constexpr const char* kCudaPartialSymbol = "hcwarm_mhc_pre_partial";
inline constexpr const char* kCudaFinishSymbol = "hcwarm_mhc_pre_finish";
// Only in num_splits == 1 modules built with one_pass: the one-pass kernel
// (partial + finish in one launch, sm_90+; see cuda/mhc_pre_chunk.cuh).
inline constexpr const char* kCudaOnePassSymbol = "hcwarm_mhc_pre_one_pass";

// Ffma: FP32 cores; Mma: mma.sync, fn fragments per warp; MmaSmem: mma.sync, fn staged per block.
enum class CudaGemm { Mma, Ffma, MmaSmem };
const char* to_string(CudaGemm g);
// Warps per block of the specialized partial kernel (its tile is 16 tokens per warp).
int cuda_partial_warps(int num_splits, CudaGemm gemm);

std::string mhc_pre_cpu_source(int num_splits, int hc, int hidden, bool fused_norm);
// one_pass (num_splits == 1 only): also export the one-pass kernel (kCudaOnePassSymbol).
// fast_finish: branch-free reciprocals in the finish's scalar part (opt-in).
std::string mhc_pre_cuda_source(int num_splits, int hc, int hidden, bool fused_norm, CudaGemm gemm = CudaGemm::MmaSmem,
                                bool one_pass = false, bool fast_finish = false);

}  // namespace hcwarm::mhc
