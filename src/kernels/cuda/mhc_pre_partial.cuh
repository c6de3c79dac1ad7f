#pragma once
// Stage (a) of hc_pre on CUDA, the partial kernel (overview: cuda/mhc_pre.cuh).
#include "cuda/mhc_pre_common.cuh"

namespace hcwarm_kernels {
namespace cuda {

// Stage (a): the 24 mix dot products and the sum of squares of one tile of
// 16 * WARPS tokens over one K-part, on the tensor cores (mma.sync m16n8k16,
// bf16 -> f32; fn split into hi + lo bf16, see the top of this file). Warp w
// holds tokens t0 + 16w + [0, 16); thread (g = lane / 4, q = lane % 4) rows g
// and g + 8 of them. fn is read once per block in chunks of 128 k, split into hi/lo bf16
// by the whole block and stored in shared memory in B-fragment order
// (sb[buf][step][n-tile][lane][hi0..3, lo0..3]); fn of the next chunk is loaded
// into registers while the current one is multiplied.
// The residual goes to shared memory by cp.async, each warp its own 16 rows, a
// row's 256 bytes of a chunk by 16 lanes (a warp load covers 2 rows x 256 B,
// which streams faster than the mma fragment order, 8 rows x 64 B; see
// bench/experiments/partial_stream.cu).
// STAGES - 1 chunks are in flight while the current one is multiplied (2
// stages by default: more leave fewer blocks per SM and are slower); the
// mma A fragments are read from shared memory (16-byte granule c of row r is
// stored at c ^ 4 (r & 1): the 8 lanes of a phase hit 32 distinct banks).
// Dynamic shared memory: hcwarm_mhc::cuda_partial_smem_stages(WARPS, STAGES) bytes.
// WARPS warps of 16 tokens each: a tile of 16 * WARPS tokens shares one fn chunk.
// Input POST: a chunk is 32 hidden positions of all 4 streams (post_part_range);
// lane l stages the previous residual and post_x of row l / 2, 8-feature
// granules 2 (l % 2) + {0, 1}, by cp.async into the row's slots (stream j of
// granule u in the slot of virtual granule 4u + j) and post_x's stage (after
// the residual's, hcwarm_mhc::cuda_partial_smem_post); once they landed the same
// lane replaces them in place by the new residual (post_mix8) and stores that to
// residual_out: it read every stream of those positions itself, and no other
// thread of any block touches them, so residual_out may alias residual.
template <int HC, int HIDDEN, int WARPS, int STAGES = 2, int INPUT = hcwarm_mhc::kInputResidual>
__device__ __forceinline__ void partial_smem_impl(const hcwarm_mhc_pre_params& p, long long tile, int part, int P) {
  const bool embed = input_is_embed<INPUT>(p);
  const bool post_in = input_is_post<INPUT>(p);
  constexpr int kMix = HC * (2 + HC);
  constexpr int kChunk = 128;
  constexpr int kSteps = kChunk / 32;
  constexpr int kThreads = 32 * WARPS;
  constexpr int kF4 = kMix * kChunk / 4;                            // fn float4s of a chunk
  constexpr int kF4PerThread = (kF4 + kThreads - 1) / kThreads;  // 6 with 4 warps
  constexpr int kRowBytes = kChunk * 2;                          // one row of a chunk: 16 granules of 16 B
  constexpr int kWarpBytes = 16 * kRowBytes;
  constexpr int kStageBytes = WARPS * kWarpBytes;
  static_assert(STAGES >= 2, "at least the current chunk and the next one");
  static_assert(STAGES * kStageBytes == hcwarm_mhc::cuda_partial_smem_stages(WARPS, STAGES),
                "the launcher's dynamic shared memory");
  static_assert(kRowBytes == 16 * 16, "16 lanes x 16 bytes load a row of a chunk");
  static_assert(HC == 4 || INPUT == hcwarm_mhc::kInputResidual || INPUT == hcwarm_mhc::kInputEmbed,
                "input POST: a 128-column chunk is 32 positions of exactly 4 streams");
  constexpr int kPostRowBytes = kChunk / HC * 2;  // post_x of a row of a chunk: 4 granules
  constexpr int kPostWarpBytes = 16 * kPostRowBytes;
  constexpr int kPostStageBytes = WARPS * kPostWarpBytes;
  static_assert(STAGES * kPostStageBytes == hcwarm_mhc::cuda_partial_post_x_stages(WARPS, STAGES),
                "the launcher's dynamic shared memory with input POST");
  __shared__ __align__(16) unsigned int sb[2][kSteps][3][32][8];
  extern __shared__ __align__(16) unsigned char xs_dyn[];

  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  const long long K = (long long)HC * D;
  const long long T = p.num_tokens;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int q = lane & 3;
  const long long t0 = tile * (16 * WARPS) + warp * 16;
  const bool active = t0 < T;  // idle warps still help with fn and the barriers

  // The embedding's hc streams are one row: its parts cover D columns, and fn
  // is folded over the streams (fold_fn4 per chunk, or once per call into
  // p.fn_folded by the fold kernel), a quarter of the tensor-core work.
  long long k0, k1;
  if (post_in) {
    post_part_range(D, P, part, k0, k1);
  } else {
    k_part_range(embed ? (long long)D : K, P, part, k0, k1);
  }
  const bool v0 = t0 + g < T, v1 = t0 + g + 8 < T;
  const F4 zf = {0.f, 0.f, 0.f, 0.f};

  float acc[3][4];
#pragma unroll
  for (int j = 0; j < 3; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  float ss0 = 0.f, ss1 = 0.f;

  // This warp's rows in stage s start at xw + s * kStageBytes.
  const unsigned int xw = smem_u32(xs_dyn) + warp * kWarpBytes;
  // Copy of chunk kc: lane -> granule c = lane % 16 of rows 2u + lane / 16.
  const int c = lane & 15;
  auto issue_x = [&](long long kc, int stage) {
    const long long k = kc + 8 * c;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int rr = 2 * u + (lane >> 4);
      const bool ok = active && t0 + rr < T && k < k1;
      const unsigned short* src = ok ? input_row(p, t0 + rr, K, D, embed) + k : p.residual;
      cp_async16(xw + stage * kStageBytes + rr * kRowBytes + ((c ^ ((rr & 1) << 2)) << 4), src, ok);
    }
    cp_async_commit();
  };
  // Input POST: this lane's row (l / 2, below T or not) and first granule (2 (l % 2)),
  // and its row's post gates and comb matrix (prev_post / prev_comb), read once.
  const int prow = lane >> 1;
  const int pgran = 2 * (lane & 1);
  const bool prow_ok = post_in && active && t0 + prow < T;
  const long long ptok = prow_ok ? t0 + prow : 0;
  float ppost[HC], pcomb[HC * HC];
  if (post_in) {
    const F4 pp = prow_ok ? ldg_f4(p.prev_post + ptok * HC) : zf;
    ppost[0] = pp.x, ppost[1] = pp.y, ppost[2] = pp.z, ppost[3] = pp.w;
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      const F4 c4 = prow_ok ? ldg_f4(p.prev_comb + (ptok * HC + i) * HC) : zf;
      pcomb[i * HC] = c4.x, pcomb[i * HC + 1] = c4.y, pcomb[i * HC + 2] = c4.z, pcomb[i * HC + 3] = c4.w;
    }
  }
  const unsigned int pxw = smem_u32(xs_dyn) + STAGES * kStageBytes + warp * kPostWarpBytes;
  // The slot of virtual granule c (stream c % 4 of granule c / 4) in row r of a stage.
  auto slot = [&](int stage, int r, int vc) {
    return xw + stage * kStageBytes + r * kRowBytes + ((vc ^ ((r & 1) << 2)) << 4);
  };
  auto issue_post = [&](long long kc, int stage) {
    const long long d = (kc >> 2) + 8 * pgran;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const bool ok = prow_ok && kc + 32 * (pgran + u) < k1;
      const long long dd = d + 8 * u;
      cp_async16(pxw + stage * kPostStageBytes + prow * kPostRowBytes + (pgran + u) * 16,
                 ok ? p.post_x + ptok * D + dd : p.post_x, ok);
#pragma unroll
      for (int j = 0; j < HC; ++j) {
        cp_async16(slot(stage, prow, 4 * (pgran + u) + j), ok ? p.residual + (ptok * HC + j) * D + dd : p.residual,
                   ok);
      }
    }
    cp_async_commit();
  };
  // After this lane's copies of chunk kc landed: the new residual in place, and to residual_out.
  auto mix_post = [&](long long kc, int stage) {
    const long long d = (kc >> 2) + 8 * pgran;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const bool ok = prow_ok && kc + 32 * (pgran + u) < k1;
      if (ok) {
        const U4 xv = lds_u4(pxw + stage * kPostStageBytes + prow * kPostRowBytes + (pgran + u) * 16);
        U4 rv[HC], nv[HC];
#pragma unroll
        for (int j = 0; j < HC; ++j) rv[j] = lds_u4(slot(stage, prow, 4 * (pgran + u) + j));
        hcwarm_post::post_mix8<HC>(xv, rv, ppost, pcomb, nv);
#pragma unroll
        for (int j = 0; j < HC; ++j) {
          sts_u4(slot(stage, prow, 4 * (pgran + u) + j), nv[j]);
          stg_u4(p.residual_out + (ptok * HC + j) * D + d + 8 * u, nv[j]);
        }
      }
    }
  };
  auto issue = [&](long long kc, int stage) {
    if (post_in) {
      issue_post(kc, stage);
    } else {
      issue_x(kc, stage);
    }
  };
  // Thread (g, q)'s A fragment of step u: row r (g or g + 8), granule 4u + q.
  auto x_frag = [&](int stage, int r, int u) {
    return lds_u4(xw + stage * kStageBytes + r * kRowBytes + (((4 * u + q) ^ ((r & 1) << 2)) << 4));
  };

  F4 fr[kF4PerThread];
  // With the early load (the 4-warp kernels, specialized and generic, which
  // have the registers) a fold's loads are predicated, not branched around, so
  // all of a chunk's are in flight at once: at decode sizes a branch per fold
  // serialized them (docs/BENCHMARKS.md, "The generic kernels within 1.3x of
  // the specialized ones" and "The rest of the family"). The 8-warp ones keep one branch per fold:
  // 12 more live registers would spill at their 128 and their many
  // blocks hide the latency.
  constexpr bool kFnEarly = WARPS <= 4;
  // The embedding's fn folded ahead by the fold kernel (cuda/mhc_pre_fold.cuh), or null;
  // null at compile time for the other inputs, whose code stays as it was.
  constexpr bool kMayFold = INPUT == hcwarm_mhc::kInputEmbed || INPUT == hcwarm_mhc::kInputRuntime;
  const float* folded = kMayFold && embed ? p.fn_folded : nullptr;
  auto load_fn = [&](long long kc, F4 (&f)[kF4PerThread]) {
#pragma unroll
    for (int i = 0; i < kF4PerThread; ++i) {
      const int e = tid + kThreads * i;
      const int n = e / (kChunk / 4);
      const int cc = (e % (kChunk / 4)) * 4;
      const long long kk = kc + cc;
      const long long col = post_in ? post_col(kc, cc, D) : kk;
      const bool ok = (kF4 % kThreads == 0 || e < kF4) && kk < k1;
      if (folded != nullptr) {
        f[i] = ok ? ldcg_f4(folded + n * D + col) : zf;
      } else if (kFnEarly) {
        f[i] = fold_fn4<HC>(p.fn + n * K + col, D, ok, embed);
      } else {
        f[i] = !ok ? zf : fold_fn4<HC>(p.fn + n * K + col, D, true, embed);
      }
    }
  };

  // Chunks 0 .. STAGES - 2 in flight before the loop; chunk i lands in stage i % STAGES.
  // With the folded fn the rows go first: they do not depend on the fold kernel, its fn does.
  // A programmatic dependent of the kernel before it (without the fold): it starts as that kernel
  // drains and reads nothing before that kernel has completed, but with p.fn_early its first fn
  // chunk, which the caller promised that kernel does not write. Where all tokens are one tile
  // (decode), residual or embedding input, it meanwhile pulls fn's first two chunks into L2 (a
  // weight, read from memory in a model): a prefetch reads no value, so it needs no such promise,
  // and the loads after the wait find fn in L2. (More tiles prefetch the same lines again, and the
  // fused boundary ran slower with it: docs/BENCHMARKS.md, "fn pulled into L2 before the wait".)
  const bool fn_early = folded == nullptr && p.fn_early != 0;
  if (fn_early && k0 < k1) load_fn(k0, fr);
  if (folded == nullptr) {
    const long long first = fn_early ? k0 + kChunk : k0;
    const long long last = k1 < k0 + 2 * kChunk ? k1 : k0 + 2 * kChunk;
    if (!post_in && T <= 16 * WARPS && first < last) {  // one range per fn row (and stream)
      for (int e = tid; e < kMix * (embed ? HC : 1); e += kThreads) {
        prefetch_l2_bulk(p.fn + (e % kMix) * K + (e / kMix) * (long long)D + first, (unsigned int)(last - first) * 4u);
      }
    }
    griddep_wait();
    griddep_launch_dependents();  // this call's finish only once the call before has completed
    if (!fn_early && k0 < k1) load_fn(k0, fr);
  }
#pragma unroll
  for (int i = 0; i + 1 < STAGES; ++i) {
    if (k0 + (long long)i * kChunk < k1) {
      issue(k0 + (long long)i * kChunk, i);
    } else {
      cp_async_commit();
    }
  }
  if (folded != nullptr) {
    griddep_wait();
    if (k0 < k1) load_fn(k0, fr);
  }
  int buf = 0;     // fn fragments of this chunk: sb[buf]
  int xstage = 0;  // its residual rows
  // With 4 warps (170 registers a thread) the next chunk's fn is loaded before
  // this one is split, so a short K-part (2 chunks at decode sizes) waits for
  // memory once, not once per chunk; 8 warps (128 registers) load it after the
  // barrier, and so does the generic kernel (HIDDEN 0), which ran 7-9% slower
  // at large T with the early load (docs/BENCHMARKS.md, "Every split bucket").
  for (long long kc = k0; kc < k1; kc += kChunk) {
    const long long kn = kc + kChunk;
    F4 frn[kF4PerThread];
    if (kFnEarly && kn < k1) load_fn(kn, frn);
    // fn chunk -> hi/lo bf16 pairs in fragment order.
#pragma unroll
    for (int i = 0; i < kF4PerThread; ++i) {
      const int e = tid + kThreads * i;
      if (kF4 % kThreads != 0 && e >= kF4) break;
      const int n = e / (kChunk / 4);
      const int cc = (e % (kChunk / 4)) * 4;  // k offset in the chunk
      const int u = cc >> 5;
      const int kk = cc & 31;
      const int half = (kk >> 2) & 1;
      unsigned int h0, l0, h1, l1;
      split_fn_pair(fr[i].x, fr[i].y, h0, l0);
      split_fn_pair(fr[i].z, fr[i].w, h1, l1);
      unsigned int* dst = &sb[buf][u][n >> 3][(n & 7) * 4 + (kk >> 3)][0];
      dst[half * 2] = h0;
      dst[half * 2 + 1] = h1;
      dst[4 + half * 2] = l0;
      dst[4 + half * 2 + 1] = l1;
    }
    // Chunk STAGES - 1 ahead goes into the stage this warp's lanes finished
    // reading in the previous iteration.
    const long long ka = kc + (long long)(STAGES - 1) * kChunk;
    const int astage = xstage == 0 ? STAGES - 1 : xstage - 1;
    __syncwarp();
    if (ka < k1) {
      issue(ka, astage);
    } else {
      cp_async_commit();  // an empty group keeps the count of groups in flight uniform
    }
    cp_async_wait<STAGES - 1>();  // this thread's copies of chunk kc have landed
    if (post_in) {
      mix_post(kc, xstage);  // from this lane's own copies only: no barrier before it
    }
    __syncthreads();     // everyone's: the fn fragments and the warp's rows (with POST: the new ones)
    if (!kFnEarly && kn < k1) load_fn(kn, frn);
    if (active) {
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        if (kc + 32 * u < k1) {
          const U4 xa = x_frag(xstage, g, u);
          const U4 xb = x_frag(xstage, g + 8, u);
          add_squares8(xa, ss0);
          add_squares8(xb, ss1);
          mma_step_smem(acc, xa, xb, &sb[buf][u][0][0][0], lane);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kF4PerThread; ++i) fr[i] = frn[i];
    buf ^= 1;
    xstage = xstage + 1 == STAGES ? 0 : xstage + 1;
  }

  ss0 = quad_sum(ss0);
  ss1 = quad_sum(ss1);
  if (embed) {  // every stream's squares: exact, HC is a power of two
    ss0 *= (float)HC;
    ss1 *= (float)HC;
  }
  if (active) {
    float* out0 = p.partials + ((t0 + g) * P + part) * hcwarm_mhc::kPartialStride;
    float* out1 = p.partials + ((t0 + g + 8) * P + part) * hcwarm_mhc::kPartialStride;
    store_acc_rows(acc, out0, out1, v0, v1, q);
    if (q == 0) {
      if (v0) out0[kMix] = ss0;
      if (v1) out1[kMix] = ss1;
    }
  }
}

// STAGES: the residual chunks in flight, 2 (the classes' shape) or
// hcwarm_mhc::kCudaDeepPartialStages (the deep partial: hcwarm_mhc::cuda_deep_partial and the
// one-wave pair's).
template <int SPLIT_CLASS, int HC, int HIDDEN, int INPUT, int STAGES = 2>
__device__ __forceinline__ void mhc_pre_partial_smem(const hcwarm_mhc_pre_params& p) {
  static_assert(STAGES == 2 || (STAGES == hcwarm_mhc::kCudaDeepPartialStages && INPUT == hcwarm_mhc::kInputResidual),
                "STAGES: 2, or hcwarm_mhc::kCudaDeepPartialStages for residual streams (the deep partial; the "
                "launcher sizes input POST's staging for 2)");
  if (!shape_ok<SPLIT_CLASS, HC, HIDDEN, false, INPUT>(p)) return;
  constexpr int kWarps = SPLIT_CLASS != 0 ? hcwarm_mhc::cuda_partial_warps(SPLIT_CLASS) : 4;
  // p.num_parts: shape_ok held it to at most the split count's parts (the plan's choice).
  partial_smem_impl<HC, HIDDEN, kWarps, STAGES, INPUT>(p, blockIdx.y, blockIdx.x, p.num_parts);
}

template <int SPLIT_CLASS, int HC, int HIDDEN, int INPUT = hcwarm_mhc::kInputResidual, int STAGES = 2>
__device__ __forceinline__ void mhc_pre_partial(const hcwarm_mhc_pre_params& p) {
  // With the folded fn the finish kernel may be scheduled now (the fold kernel before this
  // one launched normally): it prefetches the residual rows and waits for this grid.
  if (p.fn_folded != nullptr) griddep_launch_dependents();
  mhc_pre_partial_smem<SPLIT_CLASS, HC, HIDDEN, INPUT, STAGES>(p);
}

// The entry point NVRTC and nvcc instantiate by name (jit/kernel_entry.hpp):
// the block (THREADS = 32 * warps) and its blocks per SM come from the launcher.
template <int SPLIT_CLASS, int HC, int HIDDEN, int INPUT, int STAGES, int THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) mhc_pre_partial_kernel(hcwarm_mhc_pre_params p) {
  mhc_pre_partial<SPLIT_CLASS, HC, HIDDEN, INPUT, STAGES>(p);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
