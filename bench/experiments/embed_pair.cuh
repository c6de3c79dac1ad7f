#pragma once
// What the embedding experiments (embed_fold.cu, embed_cluster.cu) share: the
// error check, the library's split rule, the split-K pair as the library
// launches it for the embedding, the inputs and their read-back, and the
// graph-replay timing.
// Built with src/kernels on the include path (bench/experiments/build.sh).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_fold.cuh"
#include "cuda_check.cuh"


constexpr int kEmbed = hcwarm_mhc::kInputEmbed;

// Gaussian bf16 values from a hash of the index.
__global__ void fill_bf16(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    const float u = ((h & 0xffff) + 0.5f) / 65536.f, v = ((h >> 16) + 0.5f) / 65536.f;
    const float g = sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
    p[i] = (unsigned short)(__float_as_uint(g) >> 16);
  }
}
// Uniform f32 values in offset + scale * [-0.5, 0.5).
__global__ void fill_f32(float* p, size_t n, unsigned seed, float scale, float offset = 0.f) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    p[i] = offset + scale * (((h & 0xffffff) + 0.5f) / 16777216.f - 0.5f);
  }
}

inline cudaLaunchAttribute pdl_attr() {
  cudaLaunchAttribute a;
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

// The fold kernel (cuda/mhc_pre_fold.cuh) over p.fn into p.fn_folded.
inline void launch_fold(void* fold, hcwarm_mhc_pre_params p, cudaStream_t s) {
  void* args[] = {&p};
  const int quads = 24 * p.hidden / 4;
  CK(cudaLaunchKernel(fold, dim3((quads + hcwarm_mhc::kCudaFoldThreads - 1) / hcwarm_mhc::kCudaFoldThreads),
                      dim3(hcwarm_mhc::kCudaFoldThreads), args, 0, s));
}

// The library's split count for T tokens on `sms` SMs (docs/MATH.md, section 4).
inline int split_rule(long long T, int D, int sms) {
  const long long grid = std::max(1LL, (T + 63) / 64);
  const long long cap = ((4LL * D + 63) / 64) / 4;
  return (int)std::max(1LL, std::min((long long)sms / grid, cap));
}

// The embedding's split-K pair of a split class, fused norm and fast reciprocals, as
// the library launches it. use_fold: the fold kernel first and the partial its
// programmatic dependent; else the partial folds fn per chunk (p.fn_folded cleared).
// stages: bit 1 adds the finish (1: the partial stage alone).
struct EmbedPair {
  void *partial, *finish, *fold;
  int warps;
  void launch(hcwarm_mhc_pre_params p, cudaStream_t s, bool use_fold = true, int stages = 3) const {
    void* args[] = {&p};
    cudaLaunchAttribute a = pdl_attr();
    if (use_fold) {
      launch_fold(fold, p, s);
    } else {
      p.fn_folded = nullptr;
    }
    const int tile = 16 * warps;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(p.num_parts, (unsigned)((p.num_tokens + tile - 1) / tile));
    c.blockDim = dim3(32 * warps);
    c.dynamicSmemBytes = hcwarm_mhc::cuda_partial_smem(warps);
    c.stream = s;
    c.attrs = &a;
    c.numAttrs = use_fold ? 1 : 0;
    CK(cudaLaunchKernelExC(&c, partial, args));
    if (!(stages & 2)) return;
    cudaLaunchConfig_t f{};
    const bool split = p.num_tokens <= hcwarm_mhc::kCudaFinishSplitTokens &&
                       !hcwarm_mhc::cuda_finish_streams(hcwarm_mhc::cuda_split_class(p.num_splits));
    f.gridDim = dim3((unsigned)p.num_tokens * (split ? 2 : 1));
    f.blockDim = dim3(hcwarm_mhc::kCudaThreads);
    f.stream = s;
    f.attrs = &a;
    f.numAttrs = 1;
    CK(cudaLaunchKernelExC(&f, finish, args));
  }
};

template <int CLASS, int D>
EmbedPair embed_pair_kernels() {
  using namespace hcwarm_kernels::cuda;
  constexpr int w = hcwarm_mhc::cuda_partial_warps(CLASS);
  constexpr bool stream = hcwarm_mhc::cuda_finish_streams(CLASS);
  return {(void*)mhc_pre_partial_kernel<CLASS, 4, D, kEmbed, 32 * w, w == 8 ? 2 : 3>,
          (void*)mhc_pre_finish_kernel<CLASS, 4, D, true, true, kEmbed, stream ? 8 : 3>,
          (void*)mhc_pre_fold_kernel<4, D>, w};
}
// The pair of split class `cls` (hcwarm_mhc::cuda_split_class), its partial allowed its shared memory.
template <int D>
EmbedPair embed_pair(int cls) {
  const EmbedPair k = cls == 1   ? embed_pair_kernels<1, D>()
                      : cls == 2 ? embed_pair_kernels<2, D>()
                      : cls == 3 ? embed_pair_kernels<3, D>()
                      : cls == 5 ? embed_pair_kernels<5, D>()
                                 : embed_pair_kernels<22, D>();
  CK(cudaFuncSetAttribute(k.partial, cudaFuncAttributeMaxDynamicSharedMemorySize, hcwarm_mhc::cuda_partial_smem(k.warps)));
  return k;
}

// One call's outputs, read back to the host.
struct EmbedOutputs {
  std::vector<unsigned short> y;
  std::vector<float> post, comb;
};

// What an embedding experiment runs on, for T tokens of hidden D on `sms` SMs: `sets`
// embeddings and their y (more than 3x the L2 in all, at least 2), fn, scale (its fill
// scale_offset + [-0.5, 0.5)), base, norm weight, post, comb, the partials at the library's
// part count and the folded fn, all filled; the params of the library's split rule (fused
// norm, 20 Sinkhorn iterations) and a non-blocking stream.
struct EmbedInputs {
  EmbedInputs(int D_, long long T_, int sms, size_t l2, float scale_offset = 0.f)
      : D(D_), T(T_), s(split_rule(T_, D_, sms)), parts(hcwarm_mhc::cuda_embed_parts(s, T_, sms)),
        xbytes((size_t)T_ * D_ * 2), sets((int)std::max<size_t>(2, (3 * l2 + 2 * xbytes - 1) / (2 * xbytes))),
        x(sets), y(sets) {
    for (int i = 0; i < sets; ++i) {
      CK(cudaMalloc(&x[i], xbytes));
      CK(cudaMalloc(&y[i], xbytes));
      fill_bf16<<<1024, 256>>>(x[i], (size_t)T * D, 17 + i);
    }
    CK(cudaMalloc(&fn, 24 * 4 * D * 4)); fill_f32<<<256, 256>>>(fn, 24 * 4 * D, 5, 4e-3f);
    CK(cudaMalloc(&scale, 16)); fill_f32<<<1, 32>>>(scale, 3, 7, 1.f, scale_offset);
    CK(cudaMalloc(&base, 128)); fill_f32<<<1, 32>>>(base, 24, 9, 1.f);
    CK(cudaMalloc(&nw, D * 2)); fill_bf16<<<16, 256>>>(nw, D, 11);
    CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
    CK(cudaMalloc(&partials, (size_t)T * parts * hcwarm_mhc::kPartialStride * 4));
    CK(cudaMalloc(&folded, 24 * D * 4));
    CK(cudaDeviceSynchronize());  // the fills ran on the legacy stream, which `st` does not wait for
    p.num_tokens = T; p.fn = fn; p.scale = scale; p.base = base; p.norm_weight = nw; p.post = post; p.comb = comb;
    p.partials = partials; p.num_splits = s; p.num_parts = parts; p.hc_mult = 4; p.hidden = D; p.sinkhorn_iters = 20;
    p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f; p.input = kEmbed; p.fn_folded = folded;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  }
  EmbedInputs(const EmbedInputs&) = delete;
  EmbedInputs& operator=(const EmbedInputs&) = delete;
  ~EmbedInputs() {
    for (int i = 0; i < sets; ++i) { cudaFree(x[i]); cudaFree(y[i]); }
    cudaFree(fn); cudaFree(scale); cudaFree(base); cudaFree(nw); cudaFree(post); cudaFree(comb); cudaFree(partials);
    cudaFree(folded); cudaStreamDestroy(st);
  }
  // p on set i's embedding and y.
  hcwarm_mhc_pre_params of_set(int i) const {
    hcwarm_mhc_pre_params q = p;
    q.residual = x[i];
    q.y = y[i];
    return q;
  }
  // launch(params) on set 0, its outputs first filled with `fill` bytes (on `st`, which the
  // launch uses), then read back.
  template <class F>
  EmbedOutputs outputs_of(F&& launch, int fill) const {
    CK(cudaMemsetAsync(y[0], fill, xbytes, st)); CK(cudaMemsetAsync(post, fill, T * 16, st));
    CK(cudaMemsetAsync(comb, fill, T * 64, st));
    launch(of_set(0));
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    EmbedOutputs o{std::vector<unsigned short>((size_t)T * D), std::vector<float>(T * 4), std::vector<float>(T * 16)};
    CK(cudaMemcpy(o.y.data(), y[0], xbytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.post.data(), post, T * 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.comb.data(), comb, T * 64, cudaMemcpyDeviceToHost));
    return o;
  }

  int D;
  long long T;
  int s, parts;  // the split count and the partial stage's parts
  size_t xbytes;
  int sets;
  std::vector<unsigned short*> x, y;
  float *fn, *scale, *base, *post, *comb, *partials, *folded;
  unsigned short* nw;
  hcwarm_mhc_pre_params p{};
  cudaStream_t st;
};

// Median µs per set of 20 replays (after 3 warm-up replays) of one CUDA graph that
// holds launch_set(i) for every set i.
template <class F>
float graph_replay_us(cudaStream_t st, int sets, F&& launch_set) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < sets; ++i) launch_set(i);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> us;
  for (int r = 0; r < 23; ++r) {
    cudaEventRecord(a, st);
    CK(cudaGraphLaunch(ge, st));
    cudaEventRecord(b, st);
    CK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= 3) us.push_back(ms * 1000.f / sets);
  }
  std::sort(us.begin(), us.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return us[us.size() / 2];
}
