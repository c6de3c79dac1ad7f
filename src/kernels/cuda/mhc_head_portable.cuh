#pragma once
// The mHC head without thread-block clusters: the portable form, for GPUs
// below sm_90 (A100, A10, L40S) and wherever the portable kernels are forced
// (HCWARM_CUDA_PORTABLE=1). The cluster kernel's tile (mhc_head_tile.cuh) with
// one block in place of its CLUSTER blocks: the block walks the CLUSTER slices
// of the hidden positions in turn, so its partial sums are the tile's full sums
// and need no distributed shared memory; y then reads each slice's rows again
// (from L2: the tile read them moments before). Narrow and wide instantiations
// and the launcher's choice between them as for the cluster kernel, with a
// grid of one block per tile. Slower than the cluster kernel (one block does
// CLUSTER blocks' loads in sequence, and the residual is read twice); the same
// f32 arithmetic in another summation order.
// Compiled by NVRTC: no includes beyond these headers.
#include "cuda/mhc_head_tile.cuh"

namespace hcwarm_head {

template <int HC, int HIDDEN, int TPT = 1>
__device__ __forceinline__ void mhc_head_portable(const hcwarm_mhc_head_params& p) {
  using S = HeadShape<HC, HIDDEN>;
  using Tile = HeadTile<HC, HIDDEN, TPT>;
  if (p.hc_mult != HC || p.hidden != HIDDEN) return;  // the launcher checked; never write garbage

  __shared__ typename Tile::Reduce red;
  __shared__ typename Tile::Part part;
  __shared__ typename Tile::Gates pre_s;

  const int tid = threadIdx.x;
  const int u = tid % Tile::kLanes;   // token lane of the tile
  const int vl = tid / Tile::kLanes;  // vector of the slice
  const long long t0 = (long long)blockIdx.y * Tile::kTokens + u;

  typename Tile::Sums acc;
  Tile::zero(acc);
  for (int r = 0; r < S::kCluster; ++r) {  // the slice a cluster's block `r` would take
    const auto c = Tile::column(r, vl);
    typename Tile::Rows x;
    Tile::load(p, t0, c.v, c.in, x);
    Tile::accumulate(p, c.v, c.in, x, acc);
  }
  Tile::block_sums(acc, red, part);
  __syncthreads();
  for (int e = tid; e < Tile::kTokens * HC; e += S::kThreads) {
    const int uu = e / HC, j = e % HC;
    pre_s[uu][j] = Tile::gate(p, j, part[uu][j], part[uu][HC]);
  }
  __syncthreads();
  for (int r = 0; r < S::kCluster; ++r) {
    const auto c = Tile::column(r, vl);
    typename Tile::Rows x;
    Tile::load(p, t0, c.v, c.in, x);
    Tile::store(p, t0, u, c.v, c.in, x, pre_s);
  }
}

// The entry point instantiated by name (jit/kernel_entry.hpp): the launcher
// passes the block (hcwarm_mhc::head_threads) and its blocks per SM
// (head_blocks_per_sm) of HIDDEN, as for the cluster kernel.
template <int HC, int HIDDEN, int TPT, int THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) mhc_head_portable_kernel(hcwarm_mhc_head_params p) {
  mhc_head_portable<HC, HIDDEN, TPT>(p);
}

}  // namespace hcwarm_head
