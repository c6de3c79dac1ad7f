#pragma once
// The mHC head on CUDA (docs/MATH.md, section 6): after the last layer, the hc
// streams collapse into one row per token, with no Sinkhorn and no post gates.
// One key per (hc, hidden): a single compile covers every T. One kernel,
// mhc_head_cluster, instantiated twice; the launcher picks by T
// (backends/cuda/hc_head_cuda.cpp):
//   narrow  1 token per thread, while its grid is at most one block per SM
//           (decode sizes: a few tokens still spread over many SMs);
//   wide    hcwarm_mhc::head_wide_tpt tokens per thread beyond: each fn load
//           and each tile's barriers serve that many more tokens.
//
// mhc_head_cluster: a cluster of CLUSTER blocks takes one tile of
// TPT * hcwarm_mhc::kHeadTokens tokens (grid y: the tiles);
// block `rank` owns one slice of the hidden positions in every stream
// (common/mhc_head_params.hpp):
//   1. each thread loads its tokens' 16-byte vector of every stream into
//      registers and accumulates its share of the hc dot products with fn
//      (read from L2; the tile's token lanes of one vector share each load)
//      and of the sum of squares;
//   2. a warp and block reduction gives the block's partial sums, and the
//      cluster adds the CLUSTER blocks' partials through distributed shared
//      memory: every block computes the tile's pre gates (f32, accurate expf and
//      sqrtf);
//   3. each thread writes y = sum_i pre_i * x_i for its vectors from the
//      registers of step 1: the residual is read once.
// Compiled by NVRTC: no includes beyond these headers.
#include "cuda/mhc_head_tile.cuh"
#include "cuda/ptx/cluster.cuh"

namespace hcwarm_head {

template <int HC, int HIDDEN, int TPT = 1>
__device__ __forceinline__ void mhc_head_cluster(const hcwarm_mhc_head_params& p) {
  using S = HeadShape<HC, HIDDEN>;
  using Tile = HeadTile<HC, HIDDEN, TPT>;
  if (p.hc_mult != HC || p.hidden != HIDDEN) return;  // the launcher checked; never write garbage

  __shared__ typename Tile::Reduce red;
  __shared__ typename Tile::Part part;  // the block's partials, read by the whole cluster
  __shared__ typename Tile::Gates pre_s;

  const int rank = (int)ptx::cluster_rank();
  const int tid = threadIdx.x;
  const int u = tid % Tile::kLanes;   // token lane of the tile
  const int vl = tid / Tile::kLanes;  // vector of the slice
  const auto c = Tile::column(rank, vl);
  const long long t0 = (long long)blockIdx.y * Tile::kTokens + u;  // one tile per cluster: the launcher's rule

  typename Tile::Rows x;
  Tile::load(p, t0, c.v, c.in, x);
  typename Tile::Sums acc;
  Tile::zero(acc);
  Tile::accumulate(p, c.v, c.in, x, acc);
  Tile::block_sums(acc, red, part);
  ptx::cluster_sync();
  for (int e = tid; e < Tile::kTokens * HC; e += S::kThreads) {
    const int uu = e / HC, j = e % HC;
    const unsigned dot_addr = ptx::smem_u32(&part[uu][j]);
    const unsigned ss_addr = ptx::smem_u32(&part[uu][HC]);
    float m = 0.f, ss = 0.f;
#pragma unroll
    for (int r = 0; r < S::kCluster; ++r) {  // rank order: every block sums alike
      m += ptx::ld_cluster_f32(dot_addr, r);
      ss += ptx::ld_cluster_f32(ss_addr, r);
    }
    pre_s[uu][j] = Tile::gate(p, j, m, ss);
  }
  __syncthreads();
  Tile::store(p, t0, u, c.v, c.in, x, pre_s);
  ptx::cluster_sync();  // the other blocks may still read this block's partials
}

// The entry point instantiated by name (jit/kernel_entry.hpp): the launcher
// passes the cluster (hcwarm_mhc::head_cluster), the block (head_threads) and its
// blocks per SM (head_blocks_per_sm) of HIDDEN.
template <int HC, int HIDDEN, int TPT, int CLUSTER, int THREADS, int MIN_BLOCKS>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, MIN_BLOCKS)
    mhc_head_cluster_kernel(hcwarm_mhc_head_params p) {
  mhc_head_cluster<HC, HIDDEN, TPT>(p);
}

}  // namespace hcwarm_head
