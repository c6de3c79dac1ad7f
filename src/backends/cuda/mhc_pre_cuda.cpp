#include "backends/cuda/mhc_pre_cuda.hpp"

namespace hcwarm::cuda {

CUresult launch_mhc_pre_cuda(const CudaDriver& d, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages) {
  if (p.num_tokens <= 0) return CUDA_SUCCESS;
  hcwarm_mhc_pre_params params = p;
  void* args[] = {&params};
  const unsigned tiles =
      static_cast<unsigned>((p.num_tokens + HCWARM_MHC_TOKENS_PER_TILE - 1) / HCWARM_MHC_TOKENS_PER_TILE);
  if (k.fused != nullptr && p.counters != nullptr && stages == 3) {
    const CUresult rc = d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p.counters), 0, (1 + tiles) * sizeof(unsigned),
                                          stream);
    if (rc != CUDA_SUCCESS) return rc;
    const unsigned blocks = tiles * static_cast<unsigned>(p.num_parts + HCWARM_MHC_TOKENS_PER_TILE);
    return d.cuLaunchKernel(k.fused, blocks, 1, 1, HCWARM_MHC_CUDA_THREADS, 1, 1, 0, stream, args, nullptr);
  }
  if (stages & 1) {
    const CUresult rc = d.cuLaunchKernel(k.partial, static_cast<unsigned>(p.num_parts), tiles, 1,
                                         HCWARM_MHC_CUDA_THREADS, 1, 1, 0, stream, args, nullptr);
    if (rc != CUDA_SUCCESS) return rc;
  }
  if (!(stages & 2)) return CUDA_SUCCESS;
  return d.cuLaunchKernel(k.finish, static_cast<unsigned>(p.num_tokens), 1, 1, HCWARM_MHC_CUDA_THREADS, 1, 1, 0,
                          stream, args, nullptr);
}

}  // namespace hcwarm::cuda
