#pragma once
// The first layer's fn folded once per call (overview: cuda/mhc_pre.cuh). With
// the embedding every stream is the same row, so the partial kernel multiplies
// by fn summed over the streams; folding it here, once, instead of in every
// block for every chunk, leaves the partial a quarter of fn's loads. The
// partial is this kernel's programmatic dependent: it issues its first rows'
// copies, then waits (griddepcontrol.wait) before reading p.fn_folded.
#include "cuda/mhc_pre_common.cuh"

namespace hcwarm_kernels {
namespace cuda {

// Writes p.fn_folded (mix, D) from p.fn (mix, hc * D), four columns a thread,
// each the stream-order sum fold_fn4 forms in the partial kernel: the same
// f32 values, so both routes give the same partials bit for bit.
template <int HC, int HIDDEN>
__device__ __forceinline__ void mhc_pre_fold_fn(const hcwarm_mhc_pre_params& p) {
  griddep_launch_dependents();
  if (p.hc_mult != HC || (HIDDEN != 0 && p.hidden != HIDDEN) || p.fn_folded == nullptr) return;
  constexpr int kMix = HC * (2 + HC);
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  const long long K = (long long)HC * D;
  const long long quads = (long long)kMix * (D / 4);
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < quads; e += (long long)gridDim.x * blockDim.x) {
    const long long n = e / (D / 4);
    const long long col = (e % (D / 4)) * 4;
    const F4 f = fold_fn4<HC>(p.fn + n * K + col, D, true, true);
    *reinterpret_cast<F4*>(p.fn_folded + n * D + col) = f;
  }
}

// The entry point instantiated by name (jit/kernel_entry.hpp): hcwarm_mhc::kCudaFoldThreads a block.
template <int HC, int HIDDEN>
__global__ void __launch_bounds__(hcwarm_mhc::kCudaFoldThreads) mhc_pre_fold_kernel(hcwarm_mhc_pre_params p) {
  mhc_pre_fold_fn<HC, HIDDEN>(p);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
