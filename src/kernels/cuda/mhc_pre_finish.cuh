#pragma once
// Stage (b) of hc_pre on CUDA, the finish kernel (overview: cuda/mhc_pre.cuh).
#include "cuda/mhc_pre_scalar.cuh"

namespace hcwarm_kernels {
namespace cuda {

// What a finish block does for its token. Whole: everything. At decode sizes
// (the launcher's grid of 2 T blocks, hcwarm_mhc::cuda_split_finish) two
// blocks share a token, each reducing the partials itself: Y writes pre's
// sigmoids, post and y, Comb runs the Sinkhorn and writes comb, so that the
// Sinkhorn's latency chain overlaps y and its norm instead of preceding them.
enum FinishRole { kFinishWhole, kFinishY, kFinishComb };

// Stage (b): one block of 128 threads per token t (or two, see FinishRole) over
// P parts. BATCH: the partials loaded in one unrolled batch (the rest in a loop).
template <int HC, int HIDDEN, int BATCH, int STREAM_X, bool FUSED_NORM, bool FAST,
          int INPUT = hcwarm_mhc::kInputResidual>
__device__ __forceinline__ void finish_impl(const hcwarm_mhc_pre_params& p, long long t, int P,
                                            FinishRole role = kFinishWhole) {
  const bool embed = input_is_embed<INPUT>(p);
  // Input POST: y mixes the new residual, which the partial grid wrote.
  const bool post_in = input_is_post<INPUT>(p);
  constexpr int kThreads = hcwarm_mhc::kCudaThreads;
  constexpr int kMix = HC * (2 + HC);
  constexpr int kWarps = kThreads / 32;
  // 16-byte vectors (8 bf16) per thread and stream.
  constexpr int kVpt = HIDDEN != 0 ? (HIDDEN / 8 + kThreads - 1) / kThreads : (hcwarm_mhc::kCudaMaxHidden / 8) / kThreads;
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  const int nvec = D / 8;
  const long long K = (long long)HC * D;
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;

  __shared__ float red[kWarps][32];
  __shared__ float mix_s[32];
  __shared__ float base_s[kMix];
  __shared__ float scale_s[3];
  __shared__ float pre_s[HC];
  __shared__ float ssq_s[kWarps];
  load_base_scale<HC>(p, base_s, scale_s, tid);
  // The norm weight is copied to shared memory at the start (each thread the
  // vectors it scales), so the norm does not wait on a global load after the
  // reduction, where nothing else is in flight. Only in the finish that holds
  // the residual: the streaming one runs 8 blocks per SM whose loads already overlap.
  static_assert(BATCH > 0, "BATCH: the partials of the first unrolled batch (>= 1)");
  constexpr bool kStageNorm = FUSED_NORM && STREAM_X == 0;
  __shared__ __align__(16) unsigned short norm_s[kStageNorm ? kVpt * kThreads * 8 : 8];
  const bool want_y = role != kFinishComb;
  if constexpr (kStageNorm) {
#pragma unroll
    for (int v = 0; v < kVpt; ++v) {
      const int idx = tid + v * kThreads;
      if (want_y && idx < nvec) cp_async16(smem_u32(norm_s + idx * 8), p.norm_weight + idx * 8, true);
    }
    cp_async_commit();
  }

  // 1. The loads. The residual rows do not depend on the partial kernel: for
  //    small and mid T they are issued before griddepcontrol.wait, overlapping
  //    the partial grid's tail. For the large-T buckets (STREAM_X: the
  //    partial grid finished long ago) the partials go first, and the residual
  //    is only read once the pre weights are known, a vector at a time: the
  //    block then needs about half the registers, twice as many blocks fit on
  //    a multiprocessor, and their scalar parts overlap each other's streaming.
  // Partials: lane = column, warp = every kWarps-th part; the first BATCH
  // parts are all loaded before the first add (predicated past P).
  constexpr int kPer = (BATCH + kWarps - 1) / kWarps;
  // STREAM_X > 0: the residual is streamed STREAM_X vectors (per stream) at a time.
  constexpr int kStreamX = STREAM_X;
  // Lanes past the sum of squares read it too (their sums go unused): every lane loads.
  const float* part = p.partials + t * P * hcwarm_mhc::kPartialStride + (lane <= kMix ? lane : kMix);
  float pv[kPer];
  auto load_parts = [&]() {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int pi = warp + i * kWarps;
      // pi < P is the same for the whole warp: no divergence around the loads.
      pv[i] = ldcg_f32_if(part + (long long)(pi < P ? pi : 0) * hcwarm_mhc::kPartialStride, pi < P);
    }
  };
  const unsigned short* x = post_in ? p.residual_out + t * K : input_row(p, t, K, D, embed);
  // With the embedding every stream is the same row: one load, hc copies. The
  // new residual is read from L2 (ld.global.cg), after griddepcontrol.wait.
  auto load_x = [&](int v, U4 (&xv)[HC]) {
    const int idx = tid + v * kThreads;
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      if (idx < nvec) {
        const unsigned short* src = x + (embed ? 0LL : (long long)i * D) + idx * 8;
        xv[i] = (embed && i > 0) ? xv[0] : post_in ? ldcg_u4(src) : ldg_u4(src);
      }
    }
  };
  U4 xr[kStreamX ? kStreamX : kVpt][HC];
  if constexpr (kStreamX) {
    griddep_wait();
    load_parts();
  } else {
    if (want_y && !post_in) {
#pragma unroll
      for (int v = 0; v < kVpt; ++v) load_x(v, xr[v]);
    }
    griddep_wait();
    if (want_y && post_in) {
#pragma unroll
      for (int v = 0; v < kVpt; ++v) load_x(v, xr[v]);
    }
    load_parts();
  }

  // 2. Sum the parts: the batch, then any beyond it.
  {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) s += pv[i];
    if (lane <= kMix) {
#pragma unroll 8
      for (int pi = warp + kPer * kWarps; pi < P; pi += kWarps) {
        s += ldcg_f32(part + (long long)pi * hcwarm_mhc::kPartialStride);
      }
    }
    red[warp][lane] = s;
  }
  __syncthreads();

  // 3. rsqrt, sigmoids, Sinkhorn (warp 0); writes post and comb (each of them
  //    in the block of its role).
  if (warp == 0) {
    float m = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m += red[w][lane];
    mix_s[lane] = m;
    __syncwarp();
    const float r = scalar_rms_inv<FAST>(p, mix_s, kMix, (float)K);
    if (want_y) scalar_sigmoids<HC, FAST>(p, t, true, mix_s, base_s, scale_s, pre_s, lane, r);
    if (role != kFinishY) scalar_comb<HC, FAST>(p, t, true, mix_s, base_s, scale_s, lane, r);
  }
  if (!want_y) return;  // the Comb block: nothing after the Sinkhorn
  __syncthreads();

  // 4. y = sum_i pre_i * x_i in f32, rounded to bf16; then the fused norm.
  float pre[HC];
#pragma unroll
  for (int i = 0; i < HC; ++i) pre[i] = pre_s[i];
  unsigned short* y = p.y + t * D;
  U4 yw[kVpt];
  float ssq = 0.f;
#pragma unroll
  for (int v = 0; v < kVpt; ++v) {
    const int idx = tid + v * kThreads;
    if (idx < nvec) {
      if constexpr (kStreamX > 0) {
        if (v % kStreamX == 0) {
#pragma unroll
          for (int b = 0; b < kStreamX && v + b < kVpt; ++b) load_x(v + b, xr[b]);
        }
      }
      yw[v] = mix_streams8<HC>(xr[kStreamX ? v % kStreamX : v], pre, ssq);
      if (!FUSED_NORM) stg_u4(y + idx * 8, yw[v]);
    }
  }
  if (FUSED_NORM) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) ssq += __shfl_xor_sync(0xffffffffu, ssq, off);
    if (lane == 0) ssq_s[warp] = ssq;
    __syncthreads();
    float tot = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) tot += ssq_s[w];
    const float rn = rcp_sel<FAST>(sqrtf(tot / (float)D + p.norm_eps));
    if constexpr (kStageNorm) cp_async_wait<0>();  // this thread's own copies: no barrier
#pragma unroll
    for (int v = 0; v < kVpt; ++v) {
      const int idx = tid + v * kThreads;
      if (idx < nvec) {
        const U4 w = kStageNorm ? lds_u4(smem_u32(norm_s + idx * 8)) : ldg_u4(p.norm_weight + idx * 8);
        stg_u4(y + idx * 8, norm8(yw[v], w, rn));
      }
    }
  }
}

// FAST: branch-free reciprocals in the scalar part (see rcp_fast). STREAMS: the
// streaming form (partials first, the residual streamed after the scalar part, 64
// registers): the classes that stream (hcwarm_mhc::cuda_class_streams) and the
// one-wave pair of classes 5 and 22 (hcwarm_mhc::cuda_one_wave), which runs it in
// a y block and a comb block per token.
template <int SPLIT_CLASS, int HC, int HIDDEN, bool FUSED_NORM, bool FAST = false,
          int INPUT = hcwarm_mhc::kInputResidual, bool STREAMS = hcwarm_mhc::cuda_class_streams(SPLIT_CLASS)>
__device__ __forceinline__ void mhc_pre_finish(const hcwarm_mhc_pre_params& p) {
  static_assert(STREAMS || !hcwarm_mhc::cuda_class_streams(SPLIT_CLASS),
                "the classes of at most 4 splits finish in the streaming form only");
  // The next call's partial may start now: it waits for this grid before it reads anything
  // (fn's first chunk excepted with p.fn_early).
  griddep_launch_dependents();
  if (!shape_ok<SPLIT_CLASS, HC, HIDDEN, false, INPUT>(p)) return;
  if (FUSED_NORM && p.norm_weight == nullptr) return;
  // The generic kernel batches as the 5-21 class does (decode's 112 parts in two
  // rounds, not a chain of loads; section 3f); 160 would leave it at its 168-register limit.
  // The streaming form batches as the streaming classes do (24: within its 64 registers).
  constexpr int kBatch = hcwarm_mhc::cuda_finish_batch_parts(STREAMS ? 1 : SPLIT_CLASS != 0 ? SPLIT_CLASS : 5);
  // A grid of 2 T blocks splits each token's work (FinishRole): blocks [0, T) Y, [T, 2T) Comb.
  // The embedding's streaming form interleaves them (Y, Comb, Y, ...): its grid is many waves,
  // and each wave then holds both, the Comb blocks' Sinkhorn chains beside the Y blocks' rows.
  constexpr bool kInterleave = STREAMS && INPUT == hcwarm_mhc::kInputEmbed;
  constexpr int kStreamRows = STREAMS ? hcwarm_mhc::cuda_finish_stream_rows(SPLIT_CLASS, HIDDEN, INPUT) : 0;
  const long long T = p.num_tokens;
  const long long b = blockIdx.x;
  const bool split = (long long)gridDim.x == 2 * T;
  const bool comb_block = kInterleave ? (b & 1) != 0 : b >= T;
  const FinishRole role = !split ? kFinishWhole : comb_block ? kFinishComb : kFinishY;
  const long long order = !split ? b : kInterleave ? b >> 1 : comb_block ? b - T : b;
  // Tokens in reverse launch order: the first blocks find the residual rows the
  // partial kernel read last still in L2.
  const long long t = T - 1 - order;
  // p.num_parts: shape_ok held it to at most the split count's parts (the plan's choice).
  finish_impl<HC, HIDDEN, kBatch, kStreamRows, FUSED_NORM, FAST, INPUT>(p, t, p.num_parts, role);
}

// The entry point instantiated by name (jit/kernel_entry.hpp): hcwarm_mhc::kCudaThreads
// a block; MIN_BLOCKS per SM from the launcher (8 where it streams the residual, else 3).
template <int SPLIT_CLASS, int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int INPUT, bool STREAMS, int MIN_BLOCKS>
__global__ void __launch_bounds__(hcwarm_mhc::kCudaThreads, MIN_BLOCKS) mhc_pre_finish_kernel(hcwarm_mhc_pre_params p) {
  mhc_pre_finish<SPLIT_CLASS, HC, HIDDEN, FUSED_NORM, FAST, INPUT, STREAMS>(p);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
