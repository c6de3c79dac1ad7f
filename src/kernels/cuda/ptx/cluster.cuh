#pragma once
// Thread block clusters (sm_90): the blocks of one cluster run at the same time
// on one GPC and read each other's shared memory (distributed shared memory).
// cluster_sync() is a barrier over every thread of the cluster; writes to
// shared memory before it are visible to the cluster's readers after it (it
// also orders this block's own threads, as __syncthreads does). A block must not
// exit while another may still read its shared memory: end with cluster_sync().
// Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

// This block's rank in its cluster, 0 .. cluster size - 1.
__device__ __forceinline__ unsigned int cluster_rank() {
  unsigned int r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The f32 at shared address `addr` (smem_u32) of this block, read in block `rank`'s shared memory.
__device__ __forceinline__ float ld_cluster_f32(unsigned int addr, unsigned int rank) {
  unsigned int remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

}  // namespace cuda
}  // namespace hcwarm_kernels
