#include "backends/cuda/mhc_pre_cuda.hpp"

#include <algorithm>

namespace hcwarm::cuda {
namespace {

// The cooperative launch of the one-pass kernel over `groups` groups of 64 blocks.
CUlaunchConfig one_pass_config(const MhcPreCudaKernels& k, unsigned groups, CUstream stream, CUlaunchAttribute& coop) {
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  CUlaunchConfig c;
  c.gridDimX = groups * HCWARM_MHC_STREAM_SLICES;
  c.blockDimX = k.one_pass_threads;
  c.sharedMemBytes = k.one_pass_smem;
  c.hStream = stream;
  c.attrs = &coop;
  c.numAttrs = 1;
  return c;
}

// hidden a positive multiple of 1024 up to 7168: whole compute warps of 16
// columns in each of the 64 slices, and shared memory for their tiles.
bool one_pass_hidden(int hidden) {
  return hidden > 0 && hidden % HCWARM_MHC_STREAM_HIDDEN_STEP == 0 && hidden <= HCWARM_MHC_STREAM_MAX_HIDDEN;
}

}  // namespace

CUresult prepare_partial_smem(const CudaDriver& d, MhcPreCudaKernels& k) {
  const unsigned bytes = HCWARM_MHC_CUDA_PARTIAL_SMEM(k.partial_warps);
  // Above the 48 KB default only with the attribute (every driver since CUDA 9 has it).
  if (d.cuFuncSetAttribute == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult rc =
      d.cuFuncSetAttribute(k.partial, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
  if (rc == CUDA_SUCCESS) k.partial_smem = bytes;
  return rc;
}

bool one_pass_supported(int hc_mult, int hidden, int cc_major) {
  return cc_major >= 9 && hc_mult == 4 && one_pass_hidden(hidden);
}

unsigned one_pass_threads(int hidden) { return static_cast<unsigned>(HCWARM_MHC_STREAM_THREADS(hidden)); }

size_t one_pass_workspace_bytes(unsigned groups) { return HCWARM_MHC_STREAM_WORKSPACE_BYTES(static_cast<size_t>(groups)); }

CUresult prepare_one_pass(const CudaDriver& d, CUfunction f, int hidden, int num_sms, MhcPreCudaKernels& k) {
  k.one_pass = nullptr;
  if (d.cuLaunchKernelEx == nullptr || d.cuFuncSetAttribute == nullptr ||
      d.cuOccupancyMaxActiveBlocksPerMultiprocessor == nullptr || f == nullptr || !one_pass_hidden(hidden)) {
    return CUDA_SUCCESS;  // not available here: the two-kernel path
  }
  const unsigned threads = one_pass_threads(hidden);
  const unsigned smem = HCWARM_MHC_STREAM_SMEM(static_cast<unsigned>(hidden));
  CUresult rc = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem));
  if (rc != CUDA_SUCCESS) return rc;
  int per_sm = 0;
  rc = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, static_cast<int>(threads), smem);
  if (rc != CUDA_SUCCESS) return rc;
  // Every block of the grid must be resident at once (they wait for each other).
  const int groups = per_sm * num_sms / HCWARM_MHC_STREAM_SLICES;
  if (groups <= 0) return CUDA_SUCCESS;
  k.one_pass = f;
  k.one_pass_threads = threads;
  k.one_pass_smem = smem;
  k.one_pass_groups = static_cast<unsigned>(groups);
  return CUDA_SUCCESS;
}

CUresult launch_mhc_pre_cuda(const CudaDriver& d, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages) {
  if (p.num_tokens <= 0) return CUDA_SUCCESS;
  hcwarm_mhc_pre_params params = p;
  void* args[] = {&params};
  if (k.one_pass != nullptr && stages == 3) {
    params.num_parts = HCWARM_MHC_STREAM_SLICES;
    const long long tiles = (p.num_tokens + HCWARM_MHC_STREAM_TILE - 1) / HCWARM_MHC_STREAM_TILE;
    const unsigned groups = static_cast<unsigned>(std::min<long long>(tiles, k.one_pass_groups));
    // The groups' counters start at zero (p.partials: HCWARM_MHC_STREAM_WORKSPACE_BYTES).
    const CUresult rc = d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p.partials), 0,
                                          HCWARM_MHC_STREAM_COUNTER_BYTES(static_cast<size_t>(groups)), stream);
    if (rc != CUDA_SUCCESS) return rc;
    CUlaunchAttribute coop;
    const CUlaunchConfig c = one_pass_config(k, groups, stream, coop);
    return d.cuLaunchKernelEx(&c, k.one_pass, args, nullptr);
  }
  const long long tile_tokens = 16LL * k.partial_warps;
  const unsigned tiles = static_cast<unsigned>((p.num_tokens + tile_tokens - 1) / tile_tokens);
  if (stages & 1) {
    const CUresult rc = d.cuLaunchKernel(k.partial, static_cast<unsigned>(p.num_parts), tiles, 1,
                                         32u * static_cast<unsigned>(k.partial_warps), 1, 1, k.partial_smem, stream,
                                         args, nullptr);
    if (rc != CUDA_SUCCESS) return rc;
  }
  if (!(stages & 2)) return CUDA_SUCCESS;
  const unsigned blocks = static_cast<unsigned>(p.num_tokens);
  if (d.cuLaunchKernelEx != nullptr && (stages & 1)) {
    CUlaunchAttribute pdl;
    pdl.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    pdl.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig c;
    c.gridDimX = blocks;
    c.blockDimX = HCWARM_MHC_CUDA_THREADS;
    c.hStream = stream;
    c.attrs = &pdl;
    c.numAttrs = 1;
    return d.cuLaunchKernelEx(&c, k.finish, args, nullptr);
  }
  return d.cuLaunchKernel(k.finish, blocks, 1, 1, HCWARM_MHC_CUDA_THREADS, 1, 1, 0, stream, args, nullptr);
}

}  // namespace hcwarm::cuda
