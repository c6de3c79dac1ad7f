// The one-pass kernel (cuda/mhc_pre_one_pass.cuh) against the shipped two
// kernels (mma_smem partial + finish, num_splits 1): us per call, y compared
// in ulps, post / comb relative differences, and both against a double
// reference on sampled tokens. Inputs as models see them: residual U(-2, 2)
// in bf16, fn ~ 1e-3 N(0, 1), scale / base ~ 0.1 N(0, 1); fused norm.
//   bench/experiments/build.sh one_pass_l2   -> build/experiments/one_pass_l2
// then on the GPU machine: ./one_pass_l2 [T [HIDDEN]]   (ITERS=N timed calls, default 30)
//   VARIANT=precise|generic: the kernel with precise reciprocals, or the generic
//           fatbin's (hidden at run time, fast reciprocals), instead of the
//           specialization (what the generic costs: docs/BENCHMARKS.md, "The one-pass
//           set-up in one round trip" and "The generic kernels within 1.3x of the
//           specialized ones").
//   WINDOW=N: chunks of TMA ahead of y (default: hcwarm_mhc::one_pass_window for
//           the device's L2, as the library launches it).
//   FAST=1: the one-pass kernel's time only (cheap inputs, no check, no two
//           kernels): for repeated variant runs; it starts before the GPU's
//           clocks are up, ~15 us above a checked run at T 8192.
// Tuning variants and per-chunk clock64 stamps edit a copy of the kernel: the
// production header carries no experiment hooks.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <cuda_runtime.h>
#include <cuda.h>
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_one_pass.cuh"
#include "cuda_check.cuh"
using namespace hcwarm_kernels::cuda;
constexpr int kSplitParts = hcwarm_mhc::cuda_subsplits(1);

template <int kD>
__global__ void __launch_bounds__(256) k_partial(hcwarm_mhc_pre_params p) { mhc_pre_partial<1, 4, kD>(p); }
template <int kD>
__global__ void __launch_bounds__(128, 8) k_finish(hcwarm_mhc_pre_params p) { mhc_pre_finish<1, 4, kD, true, true>(p); }
template <int kD, bool kFast = true>
__global__ void __launch_bounds__(hcwarm_mhc::one_pass_threads(kD), 1)
    k_chunk(hcwarm_mhc_pre_params p, const __grid_constant__ CUtensorMap tmap) {
  mhc_pre_one_pass<4, kD, true, kFast>(p, &tmap);
}
// The generic fatbin's one-pass kernel (hidden at run time; fast reciprocals, its default form).
__global__ void __launch_bounds__(hcwarm_mhc::one_pass_threads(hcwarm_mhc::kOnePassMaxHidden), 1)
    k_chunk_generic(hcwarm_mhc_pre_params p, const __grid_constant__ CUtensorMap tmap) {
  mhc_pre_one_pass<4, 0, true, true>(p, &tmap);
}


static float bf2f(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static unsigned short f2bf(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (unsigned short)(u >> 16);
}
static unsigned short d2bf(double d) { return f2bf((float)d); }  // double -> float -> bf16 (ties are rare)
// Distance in bf16 ulps (ordered integers).
static int ulps(unsigned short a, unsigned short b) {
  auto ord = [](unsigned short h) { return (h & 0x8000) ? -(int)(h & 0x7fff) : (int)h; };
  return std::abs(ord(a) - ord(b));
}

template <int kD>
int run(long long T) {
  constexpr long long kK = 4LL * kD;
  const int iters = getenv("ITERS") ? atoi(getenv("ITERS")) : 30;
  setvbuf(stdout, nullptr, _IOLBF, 0);  // line-buffered: a hung variant still shows the ones before it
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<float> u2(-2.f, 2.f);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<unsigned short> hx((size_t)T * kK), hw(kD);
  // FAST=1: time the one-pass kernel only (no two kernels, no reference, no
  // comparisons), inputs from a cheap generator: for repeated variant runs.
  const bool fast = getenv("FAST") && atoi(getenv("FAST")) != 0;
  if (fast) {
    unsigned long long st = 88172645463325252ULL;
    for (auto& v : hx) {
      st ^= st << 13, st ^= st >> 7, st ^= st << 17;
      v = f2bf((float)(st >> 40) * (4.0f / 16777216.0f) - 2.0f);
    }
  } else {
    for (auto& v : hx) v = f2bf(u2(rng));
  }
  std::vector<float> hfn(24 * kK), hsc(3), hbs(24);
  for (auto& v : hfn) v = 1e-3f * nd(rng);
  for (auto& v : hsc) v = 0.1f * nd(rng);
  for (auto& v : hbs) v = 0.1f * nd(rng);
  for (auto& v : hw) v = f2bf(1.f + 0.1f * nd(rng));

  unsigned short *x, *w, *y0, *y1;
  float *fn, *sc, *bs, *post0, *post1, *comb0, *comb1, *part, *ws;
  CK(cudaMalloc(&x, hx.size() * 2));
  CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&w, kD * 2));
  CK(cudaMemcpy(w, hw.data(), kD * 2, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&fn, hfn.size() * 4));
  CK(cudaMemcpy(fn, hfn.data(), hfn.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&sc, 16));
  CK(cudaMemcpy(sc, hsc.data(), 12, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&bs, 96));
  CK(cudaMemcpy(bs, hbs.data(), 96, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&y0, T * kD * 2));
  CK(cudaMalloc(&y1, T * kD * 2));
  CK(cudaMalloc(&post0, T * 16));
  CK(cudaMalloc(&post1, T * 16));
  CK(cudaMalloc(&comb0, T * 64));
  CK(cudaMalloc(&comb1, T * 64));
  CK(cudaMalloc(&part, (size_t)T * kSplitParts * hcwarm_mhc::kPartialStride * 4));
  CK(cudaMalloc(&ws, hcwarm_mhc::one_pass_workspace_bytes(T)));

  hcwarm_mhc_pre_params p{};
  p.residual = x;
  p.num_tokens = T;
  p.fn = fn;
  p.scale = sc;
  p.base = bs;
  p.norm_weight = w;
  p.partials = part;
  p.num_splits = 1;
  p.num_parts = kSplitParts;
  p.hc_mult = 4;
  p.hidden = kD;
  p.sinkhorn_iters = 20;
  p.hc_eps = 1e-6f;
  p.rms_eps = 1e-6f;
  p.norm_eps = 1e-6f;
  p.post_mult = 2.f;

  CUtensorMap tmap;
  {
    using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
    const cuuint64_t dims[2] = {(cuuint64_t)kK, (cuuint64_t)T};
    const cuuint64_t strides[1] = {(cuuint64_t)kK * 2};
    const cuuint32_t box[2] = {hcwarm_mhc::kOnePassBox, hcwarm_mhc::kOnePassBox};
    const cuuint32_t es[2] = {1, 1};
    CUresult r = ((Encode)f)(&tmap, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, x, dims, strides, box, es,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      printf("cuTensorMapEncodeTiled: %d\n", (int)r);
      return 1;
    }
  }

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto timeit = [&](auto launch) {
    for (int i = 0; i < 3; ++i) launch();
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaGetLastError());
    return 1000.0 * ms / iters;
  };

  std::vector<unsigned short> ya(T * kD), yb(T * kD);
  std::vector<float> pa(T * 4), pb(T * 4), ca(T * 16), cb(T * 16);
  struct Ref {
    std::vector<unsigned short> y;
    double post[4], comb[16];
  };
  std::vector<long long> sample;
  std::vector<Ref> ref;
  auto vs_ref = [&](const char* name, const std::vector<unsigned short>& y, const std::vector<float>& po,
                    const std::vector<float>& co) {
    long long exact = 0, n = 0, over = 0;
    int mx = 0;
    double pe = 0, ce = 0;
    for (size_t si = 0; si < sample.size(); ++si) {
      const long long t = sample[si];
      for (int d = 0; d < kD; ++d) {
        const int u = ulps(y[t * kD + d], ref[si].y[d]);
        exact += u == 0;
        over += u > 1;
        mx = std::max(mx, u);
        ++n;
      }
      for (int i = 0; i < 4; ++i) pe = std::max(pe, std::fabs(po[t * 4 + i] - ref[si].post[i]) / std::fabs(ref[si].post[i]));
      for (int i = 0; i < 16; ++i) ce = std::max(ce, std::fabs(co[t * 16 + i] - ref[si].comb[i]) / std::fabs(ref[si].comb[i]));
    }
    printf("  %-28s vs double (%zu tokens): y %.4f%% exact, %lld > 1 ulp, max %d ulp; post %.2e, comb %.2e\n", name,
           sample.size(), 100.0 * exact / n, over, mx, pe, ce);
  };
  if (!fast) {
  // The shipped two kernels.
  const int psmem = hcwarm_mhc::cuda_partial_smem(8);
  CK(cudaFuncSetAttribute(k_partial<kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, psmem));
  auto two = [&]() {
    hcwarm_mhc_pre_params q = p;
    q.y = y0, q.post = post0, q.comb = comb0;
    k_partial<kD><<<dim3(kSplitParts, (unsigned)((T + 127) / 128)), 256, psmem>>>(q);
    k_finish<kD><<<(unsigned)T, 128>>>(q);
  };
  const double t_two = timeit(two);
  printf("T %lld, D %d: shipped two kernels %.2f us\n", T, kD, t_two);
  CK(cudaMemcpy(ya.data(), y0, ya.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(pa.data(), post0, pa.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ca.data(), comb0, ca.size() * 4, cudaMemcpyDeviceToHost));

  // Double reference on sampled tokens.
  for (long long t = 0; t < T; t += std::max(1LL, T / 61)) sample.push_back(t);
  sample.push_back(T - 1);
  ref.resize(sample.size());
  for (size_t si = 0; si < sample.size(); ++si) {
    const long long t = sample[si];
    const unsigned short* xr = hx.data() + t * kK;
    double ss = 0, mix[24] = {};
    for (long long k = 0; k < kK; ++k) {
      const double v = bf2f(xr[k]);
      ss += v * v;
      for (int j = 0; j < 24; ++j) mix[j] += (double)hfn[j * kK + k] * v;
    }
    const double r = 1.0 / std::sqrt(ss / kK + 1e-6);
    double pre[4];
    for (int i = 0; i < 4; ++i) pre[i] = 1.0 / (1.0 + std::exp(-(mix[i] * r * hsc[0] + hbs[i]))) + 1e-6;
    for (int i = 0; i < 4; ++i) ref[si].post[i] = 2.0 / (1.0 + std::exp(-(mix[4 + i] * r * hsc[1] + hbs[4 + i])));
    double c[4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) c[i][j] = mix[8 + 4 * i + j] * r * hsc[2] + hbs[8 + 4 * i + j];
    for (int i = 0; i < 4; ++i) {
      double m = c[i][0];
      for (int j = 1; j < 4; ++j) m = std::max(m, c[i][j]);
      double s = 0;
      for (int j = 0; j < 4; ++j) s += (c[i][j] = std::exp(c[i][j] - m));
      for (int j = 0; j < 4; ++j) c[i][j] = c[i][j] / s + 1e-6;
    }
    for (int it = 0; it < 20; ++it) {
      if (it > 0)
        for (int i = 0; i < 4; ++i) {
          double s = 1e-6;
          for (int j = 0; j < 4; ++j) s += c[i][j];
          for (int j = 0; j < 4; ++j) c[i][j] /= s;
        }
      for (int j = 0; j < 4; ++j) {
        double s = 1e-6;
        for (int i = 0; i < 4; ++i) s += c[i][j];
        for (int i = 0; i < 4; ++i) c[i][j] /= s;
      }
    }
    for (int i = 0; i < 16; ++i) ref[si].comb[i] = c[i / 4][i % 4];
    std::vector<unsigned short> yb16(kD);
    double s2 = 0;
    for (int d = 0; d < kD; ++d) {
      double v = 0;
      for (int i = 0; i < 4; ++i) v += pre[i] * bf2f(xr[(long long)i * kD + d]);
      yb16[d] = d2bf(v);
      const double f = bf2f(yb16[d]);
      s2 += f * f;
    }
    const double rn = 1.0 / std::sqrt(s2 / kD + 1e-6);
    ref[si].y.resize(kD);
    for (int d = 0; d < kD; ++d) ref[si].y[d] = d2bf(bf2f(yb16[d]) * rn * bf2f(hw[d]));
  }
  vs_ref("shipped", ya, pa, ca);
  }


  {
    // VARIANT: spec (the library's specialization, fast reciprocals), precise
    // (the same with the precise ones), generic (the generic fatbin's kernel).
    const char* variant = getenv("VARIANT") ? getenv("VARIANT") : "spec";
    auto kern = strcmp(variant, "generic") == 0 ? k_chunk_generic : strcmp(variant, "precise") == 0 ? k_chunk<kD, false> : k_chunk<kD>;
    if (strcmp(variant, "spec") != 0) printf("variant %s\n", variant);
    const int smem = hcwarm_mhc::one_pass_smem(kD);
    const int threads = hcwarm_mhc::one_pass_threads(kD);
    // The window as the library launches it (the device's L2), or WINDOW=N.
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const int window = getenv("WINDOW") ? atoi(getenv("WINDOW")) : hcwarm_mhc::one_pass_window(kD, l2);
    printf("window %d (L2 %.1f MiB)\n", window, l2 / 1048576.0);
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaMemset(y1, 0, T * kD * 2));
    auto launch = [&]() {
      hcwarm_mhc_pre_params q = p;
      q.y = y1, q.post = post1, q.comb = comb1, q.partials = ws, q.num_parts = hcwarm_mhc::kOnePassParts;
      q.one_pass_window = window;
      CK(cudaMemsetAsync(ws, 0, hcwarm_mhc::one_pass_counter_bytes(T)));
      void* args[] = {&q, &tmap};
      CK(cudaLaunchCooperativeKernel((const void*)kern, hcwarm_mhc::kOnePassBlocks, threads, args, smem));
    };
    const double us = timeit(launch);
    if (fast) {
      printf("one-pass (mhc_pre_one_pass)  %8.2f us\n", us);
      return 0;
    }
    CK(cudaMemcpy(yb.data(), y1, yb.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(pb.data(), post1, pb.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cb.data(), comb1, cb.size() * 4, cudaMemcpyDeviceToHost));
    long long same = 0, over = 0;
    int mx = 0;
    for (size_t i = 0; i < ya.size(); ++i) {
      const int u = ulps(ya[i], yb[i]);
      same += u == 0;
      over += u > 1;
      mx = std::max(mx, u);
    }
    double pe = 0, ce = 0;
    for (size_t i = 0; i < pa.size(); ++i) pe = std::max(pe, (double)std::fabs(pa[i] - pb[i]) / std::fabs(pa[i]));
    for (size_t i = 0; i < ca.size(); ++i) ce = std::max(ce, (double)std::fabs(ca[i] - cb[i]) / std::fabs(ca[i]));
    printf("one-pass (mhc_pre_one_pass)  %8.2f us (%.0f GB/s)  y vs two kernels: %.4f%% same, %lld > 1 ulp, max %d; "
           "post %.2e comb %.2e\n",
           us, (T * kK * 2 + T * kD * 2) / us * 1e-3, 100.0 * same / ya.size(), over, mx, pe, ce);
    vs_ref("one-pass", yb, pb, cb);
  }
  return 0;
}

int main(int argc, char** argv) {
  const long long T = argc > 1 ? atoll(argv[1]) : 8192;
  const int d = argc > 2 ? atoi(argv[2]) : 7168;
  if (T < 1) {
    printf("T must be >= 1\n");
    return 2;
  }
  if (d == 4096) return run<4096>(T);
  if (d == 7168) return run<7168>(T);
  printf("hidden %d: 4096 or 7168\n", d);
  return 2;
}
