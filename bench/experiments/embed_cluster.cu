// The first layer's pre from the embedding in one pass on a thread-block
// cluster (embed_cluster_kernel.cuh, beside this file) against the split-K pair as the
// library runs it from 2048 tokens (the fold kernel, then partial and finish; here at every T):
// graph-replay µs over rotating inputs larger than the L2, fused norm on, and
// both routes' y, post and comb against a float64 reference of the same
// arithmetic (bf16 y, rounded once; the norm over the rounded y) on the first
// and last tokens. Standalone: bench/experiments/build.sh embed_cluster, then
// ./embed_cluster [T...] on the GPU machine (CHECK_ONLY=1: one call per route, no timing).
#include <cmath>
#include <cstring>
#include <vector>
#include "embed_cluster_kernel.cuh"
#include "embed_pair.cuh"
using namespace hcwarm_kernels::cuda;

// The cluster kernel: the fold first (or none: each block folds its slice), the kernel its programmatic dependent.
struct Cluster {
  const char* name;
  void* kernel;
  void* fold;
  int tokens, stages, smem;
  bool use_fold;
  int clusters = 0;  // the persistent grid: clusters resident at once, at most the tiles
  void prepare(long long T) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaLaunchConfig_t c = config(1, nullptr);
    int most = 0;
    CK(cudaOccupancyMaxActiveClusters(&most, kernel, &c));
    clusters = (int)std::min<long long>(most, (T + tokens - 1) / tokens);
  }
  cudaLaunchConfig_t config(int n, cudaStream_t s) const {
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(n * kEmbedCluster);
    c.blockDim = dim3(kEmbedClusterThreads);
    c.dynamicSmemBytes = smem;
    c.stream = s;
    return c;
  }
  void launch(hcwarm_mhc_pre_params p, cudaStream_t s) const {
    void* args[] = {&p};
    cudaLaunchAttribute a = pdl_attr();  // the cluster's size is the kernel's (__cluster_dims__)
    if (use_fold) {
      launch_fold(fold, p, s);
    } else {
      p.fn_folded = nullptr;
    }
    cudaLaunchConfig_t c = config(clusters, s);
    c.attrs = &a;
    c.numAttrs = use_fold ? 1 : 0;
    CK(cudaLaunchKernelExC(&c, kernel, args));
  }
};

// use_fold false: each block folds its slice of fn from fn itself (measured: 1-6% slower than after the fold kernel).
template <int D, int TOKENS, int STAGES, bool SELF_PRE = false>
Cluster cluster_kernel(const char* name, bool use_fold) {
  return {name, (void*)mhc_pre_embed_cluster_kernel<D, TOKENS, STAGES, true, true, SELF_PRE>,
          (void*)mhc_pre_fold_kernel<4, D>, TOKENS, STAGES, embed_cluster_smem(D, TOKENS, STAGES, SELF_PRE ? 2 : 1),
          use_fold};
}

static float bf(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double round_bf16(double v) {
  float f = (float)v;
  unsigned u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

// Errors of one route against the float64 reference on the checked tokens.
struct Errors {
  double y_ulps = 0, post_rel = 0, comb_rel = 0;
};

struct Host {
  std::vector<unsigned short> x, nw;
  std::vector<float> fn, scale, base;
};

Errors check(const Host& h, int D, long long T, const std::vector<long long>& toks, const std::vector<unsigned short>& y,
             const std::vector<float>& post, const std::vector<float>& comb) {
  Errors e;
  const double K = 4.0 * D;
  for (long long t : toks) {
    const unsigned short* x = h.x.data() + t * D;
    double mix[24] = {0}, ss = 0;
    for (int d = 0; d < D; ++d) {
      const double v = bf(x[d]);
      ss += 4 * v * v;
      for (int n = 0; n < 24; ++n) {
        double f = 0;
        for (int j = 0; j < 4; ++j) f += h.fn[(size_t)n * 4 * D + j * D + d];
        mix[n] += f * v;
      }
    }
    const double r = 1.0 / std::sqrt(ss / K + 1e-6);
    double pre[4];
    for (int i = 0; i < 4; ++i) pre[i] = 1.0 / (1.0 + std::exp(-(mix[i] * r * h.scale[0] + h.base[i]))) + 1e-6;
    for (int i = 0; i < 4; ++i) {
      const double ref = 2.0 / (1.0 + std::exp(-(mix[4 + i] * r * h.scale[1] + h.base[4 + i])));
      e.post_rel = std::max(e.post_rel, std::fabs(post[t * 4 + i] - ref) / std::fabs(ref));
    }
    double c[4][4];
    for (int i = 0; i < 4; ++i) {
      double m = -1e300;
      for (int j = 0; j < 4; ++j) m = std::max(m, c[i][j] = mix[8 + 4 * i + j] * r * h.scale[2] + h.base[8 + 4 * i + j]);
      double s = 0;
      for (int j = 0; j < 4; ++j) s += (c[i][j] = std::exp(c[i][j] - m));
      for (int j = 0; j < 4; ++j) c[i][j] = c[i][j] / s + 1e-6;
    }
    for (int it = 0; it < 20; ++it) {
      if (it > 0) {
        for (int i = 0; i < 4; ++i) {
          const double s = c[i][0] + c[i][1] + c[i][2] + c[i][3] + 1e-6;
          for (int j = 0; j < 4; ++j) c[i][j] /= s;
        }
      }
      for (int j = 0; j < 4; ++j) {
        const double s = c[0][j] + c[1][j] + c[2][j] + c[3][j] + 1e-6;
        for (int i = 0; i < 4; ++i) c[i][j] /= s;
      }
    }
    for (int i = 0; i < 16; ++i) {
      e.comb_rel = std::max(e.comb_rel, std::fabs(comb[t * 16 + i] - c[i / 4][i % 4]) / std::fabs(c[i / 4][i % 4]));
    }
    std::vector<double> yr(D);
    double ssq = 0;
    for (int d = 0; d < D; ++d) {
      yr[d] = round_bf16((pre[0] + pre[1] + pre[2] + pre[3]) * bf(x[d]));
      ssq += yr[d] * yr[d];
    }
    const double rn = 1.0 / std::sqrt(ssq / D + 1e-6);
    for (int d = 0; d < D; ++d) {
      const double ref = yr[d] * rn * bf(h.nw[d]);
      const double ulp = std::max(std::ldexp(1.0, std::ilogb(std::fabs(ref) > 1e-30 ? ref : 1e-30) - 7), 1e-30);
      e.y_ulps = std::max(e.y_ulps, std::fabs(bf(y[t * D + d]) - ref) / ulp);
    }
  }
  return e;
}

template <int D>
void run(long long T, int sms, size_t l2, std::vector<Cluster> variants) {
  EmbedInputs in(D, T, sms, l2, 1.f);  // scale in [0.5, 1.5)
  const EmbedPair pair = embed_pair<D>(hcwarm_mhc::cuda_split_class(in.s));

  Host h;
  h.x.resize((size_t)T * D); h.nw.resize(D); h.fn.resize(24 * 4 * D); h.scale.resize(3); h.base.resize(24);
  CK(cudaMemcpy(h.x.data(), in.x[0], in.xbytes, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h.nw.data(), in.nw, D * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h.fn.data(), in.fn, h.fn.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h.scale.data(), in.scale, 12, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h.base.data(), in.base, 96, cudaMemcpyDeviceToHost));
  std::vector<long long> toks;
  for (long long t = 0; t < std::min<long long>(T, 24); ++t) toks.push_back(t);
  for (long long t = std::max<long long>(24, T - 24); t < T; ++t) toks.push_back(t);

  const bool check_only = getenv("CHECK_ONLY") != nullptr;  // under compute-sanitizer: no timing
  auto time = [&](auto&& launch) {
    if (check_only) return 0.f;
    return graph_replay_us(in.st, in.sets, [&](int i) { launch(in.of_set(i)); });
  };

  auto pair_launch = [&](hcwarm_mhc_pre_params q) { pair.launch(q, in.st); };
  const EmbedOutputs o0 = in.outputs_of(pair_launch, 0xff);
  const Errors pe = check(h, D, T, toks, o0.y, o0.post, o0.comb);
  const float pair_us = time(pair_launch);
  const double floor_us = 2.0 * in.xbytes / 4.24e3 / 1e3;
  printf("D %d T %6lld pair (splits %2d, parts %2d)  %8.2f us  %5.1f%% of floor@4.24TB/s | vs f64: y %.2f ulp, post %.1e, comb %.1e\n",
         D, T, in.s, in.parts, pair_us, 100 * floor_us / pair_us, pe.y_ulps, pe.post_rel, pe.comb_rel);
  for (Cluster& v : variants) {
    v.prepare(T);
    auto cl = [&](hcwarm_mhc_pre_params q) { v.launch(q, in.st); };
    const EmbedOutputs o1 = in.outputs_of(cl, 0xff);
    const Errors ce = check(h, D, T, toks, o1.y, o1.post, o1.comb);
    long long ydiff = 0;
    for (size_t i = 0; i < o0.y.size(); ++i) ydiff += o0.y[i] != o1.y[i];
    double pmax = 0, cmax = 0;
    for (size_t i = 0; i < o0.post.size(); ++i) pmax = std::max(pmax, (double)std::fabs(o0.post[i] - o1.post[i]) / std::fabs(o0.post[i]));
    for (size_t i = 0; i < o0.comb.size(); ++i) cmax = std::max(cmax, (double)std::fabs(o0.comb[i] - o1.comb[i]) / std::fabs(o0.comb[i]));
    const float us = time(cl);
    printf("  %-22s %3d clusters %8.2f us (%+6.1f%%) %5.1f%% of floor | vs f64: y %.2f ulp, post %.1e, comb %.1e | vs pair: %lld y differ, post %.1e, comb %.1e\n",
           v.name, v.clusters, us, 100.0 * (us - pair_us) / pair_us, 100 * floor_us / us, ce.y_ulps, ce.post_rel,
           ce.comb_rel, ydiff, pmax, cmax);
  }
  // Without the Sinkhorn (sinkhorn_iters 0): how much of each route's time its latency chain is.
  if (!variants.empty() && !check_only) {
    const int iters = in.p.sinkhorn_iters;
    in.p.sinkhorn_iters = 0;
    Cluster& v = variants.front();
    const float pair0 = time(pair_launch);
    const float cl0 = time([&](hcwarm_mhc_pre_params q) { v.launch(q, in.st); });
    printf("  no Sinkhorn: pair %8.2f us, %s %8.2f us\n", pair0, v.name, cl0);
    in.p.sinkhorn_iters = iters;
  }
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::vector<long long> ts = {512, 2048, 8192, 16384};
  if (argc > 1) {
    ts.clear();
    for (int i = 1; i < argc; ++i) ts.push_back(atoll(argv[i]));
  }
  for (long long T : ts) {
    run<4096>(T, prop.multiProcessorCount, prop.l2CacheSize,
              {cluster_kernel<4096, 64, 2>("t64 s2", true), cluster_kernel<4096, 64, 2, true>("t64 s2 self-pre", true),
               cluster_kernel<4096, 32, 3, true>("t32 s3 self-pre", true)});
  }
  for (long long T : ts) {
    run<7168>(T, prop.multiProcessorCount, prop.l2CacheSize,
              {cluster_kernel<7168, 32, 2>("t32 s2", true), cluster_kernel<7168, 32, 2, true>("t32 s2 self-pre", true),
               cluster_kernel<7168, 32, 3, true>("t32 s3 self-pre", true)});
  }
  return 0;
}
