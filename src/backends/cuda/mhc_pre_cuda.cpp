#include "backends/cuda/mhc_pre_cuda.hpp"

#include <algorithm>

namespace hcwarm::cuda {
namespace {

constexpr int kSliceCols = HCWARM_MHC_CLUSTER_CTAS * HCWARM_MHC_CLUSTER_WARP_D;  // 1024

// GEMM warps of a one-pass block (it has one more, the scalar warp).
unsigned one_pass_warps(int hidden) { return static_cast<unsigned>(hidden / kSliceCols); }

// The 16-block cluster launch of the one-pass kernel over `clusters` clusters.
CUlaunchConfig one_pass_config(const MhcPreCudaKernels& k, unsigned clusters, CUstream stream,
                               CUlaunchAttribute& cluster) {
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim = {HCWARM_MHC_CLUSTER_CTAS, 1, 1};
  CUlaunchConfig c;
  c.gridDimX = clusters * HCWARM_MHC_CLUSTER_CTAS;
  c.blockDimX = k.one_pass_threads;
  c.sharedMemBytes = k.one_pass_smem;
  c.hStream = stream;
  c.attrs = &cluster;
  c.numAttrs = 1;
  return c;
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
  return cc_major >= 9 && hc_mult == 4 && hidden > 0 && hidden % kSliceCols == 0 &&
         hidden <= HCWARM_MHC_CLUSTER_MAX_HIDDEN;
}

CUresult prepare_one_pass(const CudaDriver& d, CUfunction f, int hidden, MhcPreCudaKernels& k) {
  k.one_pass = nullptr;
  if (d.cuLaunchKernelEx == nullptr || d.cuFuncSetAttribute == nullptr || d.cuOccupancyMaxActiveClusters == nullptr ||
      f == nullptr || hidden % kSliceCols != 0) {
    return CUDA_SUCCESS;  // not available here: the two-kernel path
  }
  MhcPreCudaKernels g;
  g.one_pass_threads = (one_pass_warps(hidden) + 1) * 32;
  g.one_pass_smem = one_pass_warps(hidden) * HCWARM_MHC_CLUSTER_FN_WORDS_PER_WARP * 4u;
  CUresult rc = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(g.one_pass_smem));
  if (rc == CUDA_SUCCESS) rc = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  if (rc != CUDA_SUCCESS) return rc;
  CUlaunchAttribute cluster;
  CUlaunchConfig c = one_pass_config(g, 1024, nullptr, cluster);
  int clusters = 0;
  rc = d.cuOccupancyMaxActiveClusters(&clusters, f, &c);
  if (rc != CUDA_SUCCESS) return rc;
  if (clusters <= 0) return CUDA_SUCCESS;
  g.one_pass_clusters = static_cast<unsigned>(clusters);
  k.one_pass = f;
  k.one_pass_threads = g.one_pass_threads;
  k.one_pass_smem = g.one_pass_smem;
  k.one_pass_clusters = g.one_pass_clusters;
  return CUDA_SUCCESS;
}

CUresult launch_mhc_pre_cuda(const CudaDriver& d, const MhcPreCudaKernels& k, const hcwarm_mhc_pre_params& p,
                             CUstream stream, int stages) {
  if (p.num_tokens <= 0) return CUDA_SUCCESS;
  hcwarm_mhc_pre_params params = p;
  void* args[] = {&params};
  if (k.one_pass != nullptr && stages == 3) {
    params.num_parts = HCWARM_MHC_CLUSTER_CTAS;
    const long long tiles = (p.num_tokens + HCWARM_MHC_CLUSTER_TILE - 1) / HCWARM_MHC_CLUSTER_TILE;
    const unsigned clusters = static_cast<unsigned>(std::min<long long>(tiles, k.one_pass_clusters));
    CUlaunchAttribute cluster;
    const CUlaunchConfig c = one_pass_config(k, clusters, stream, cluster);
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
