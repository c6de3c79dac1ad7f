// hc_pre's split-K pair in the buckets where it runs as one wave (hidden 4096 up to 512 tokens,
// 7168 up to 384), built from the shipped kernels' code in other shapes: the partial's warps,
// residual stages and part count; the finish holding the row or streaming it, one block per
// token or a y block and a comb block. Both launched as the library launches them (the partial a
// programmatic dependent of the kernel before it, the finish of the partial). Per shape: graph-replay
// µs of the pair and of each kernel alone (medians of 3 interleaved rounds, the pair's range), and
// how far y, post and comb land from the shipped shape's (a part count changes the f32 summation
// order; stages, warps and the finish's form do not); up to 128 tokens also 2 and 4 times the
// parts. Timing and agreement only: the library's GPU tests check the numerics. Standalone:
// bench/experiments/build.sh pair_parts, then ./pair_parts [D:T ...] on the GPU machine
// (default 4096:512 4096:384 7168:384).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>
#include "embed_pair.cuh"

using namespace hcwarm_kernels::cuda;
constexpr int kResidual = hcwarm_mhc::kInputResidual;
constexpr int kRounds = 3;

template <int D, int WARPS, int STAGES, int MINB>
__global__ void __launch_bounds__(32 * WARPS, MINB) k_partial(hcwarm_mhc_pre_params p) {
  partial_smem_impl<4, D, WARPS, STAGES, kResidual>(p, blockIdx.y, blockIdx.x, p.num_parts);
}
// The class's finish without its part-count check (any count its batch loop covers); STREAM:
// the large-T buckets' form instead (partials first, the residual streamed after the scalar
// part, 64 registers: 8 blocks per SM, not 3). A grid of 2 T blocks splits each token's work
// between a y block and a comb block (FinishRole), as the library does up to 128 tokens.
template <int CLASS, int D, bool STREAM>
__global__ void __launch_bounds__(hcwarm_mhc::kCudaThreads, STREAM ? 8 : 3) k_finish(hcwarm_mhc_pre_params p) {
  griddep_launch_dependents();
  constexpr int kBatch = hcwarm_mhc::cuda_finish_batch_parts(STREAM ? 1 : CLASS);
  const long long T = p.num_tokens, b = blockIdx.x;
  const bool split = (long long)gridDim.x == 2 * T;
  const FinishRole role = !split ? kFinishWhole : b < T ? kFinishY : kFinishComb;
  const long long t = T - 1 - (split && b >= T ? b - T : b);
  finish_impl<4, D, kBatch, STREAM ? 1 : 0, true, true, kResidual>(p, t, p.num_parts, role);
}
struct Finish {
  std::string name;
  void* kernel;
  bool split;
};

struct Shape {
  std::string name;
  void* partial;
  int warps, stages;
};
template <int D, int WARPS, int STAGES>
Shape shape() {
  constexpr int minb = WARPS == 2 ? 6 : WARPS == 4 ? 3 : 2;
  Shape s{std::to_string(WARPS) + " warps, " + std::to_string(STAGES) + " stages", (void*)k_partial<D, WARPS, STAGES, minb>,
          WARPS, STAGES};
  CK(cudaFuncSetAttribute(s.partial, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          hcwarm_mhc::cuda_partial_smem_stages(WARPS, STAGES)));
  return s;
}

// Up to 128 tokens (1-2 tiles: 64 splits at hidden 4096, 112 and 66 at 7168 on 132 SMs) the
// class's parts make at most one block a multiprocessor: there the study also tries two and
// four times the parts (four while a part keeps at least 64 columns).
std::vector<int> more_parts(long long T, int D, int s) {
  const int full = hcwarm_mhc::cuda_num_parts(s);
  if (T > 128) return {};
  if (4LL * D / (4 * full) >= 64) return {2 * full, 4 * full};
  return {2 * full};
}
int max_parts(long long T, int D, int s) {
  const std::vector<int> more = more_parts(T, D, s);
  return more.empty() ? hcwarm_mhc::cuda_num_parts(s) : more.back();
}

// Sets of residual rows and fn (more than 3x the L2 in all: decode calls read fn from memory, as a
// model's layers do), their y, and the rest of one call's inputs.
struct Inputs {
  Inputs(int D_, long long T_, int sms, size_t l2)
      : D(D_), T(T_), s(split_rule(T_, D_, sms)), xbytes((size_t)T_ * 4 * D_ * 2),
        sets((int)std::max<size_t>(2, (3 * l2 + xbytes + fnbytes - 1) / (xbytes + fnbytes) + 1)), x(sets), y(sets), fn(sets) {
    for (int i = 0; i < sets; ++i) {
      CK(cudaMalloc(&x[i], xbytes));
      CK(cudaMalloc(&y[i], xbytes / 4));
      fill_bf16<<<1024, 256>>>(x[i], (size_t)T * 4 * D, 17 + i);
      CK(cudaMalloc(&fn[i], fnbytes));
      fill_f32<<<256, 256>>>(fn[i], 24 * 4 * D, 5, 4e-3f);  // the same weights in every set, read from memory
    }
    CK(cudaMalloc(&scale, 16)); fill_f32<<<1, 32>>>(scale, 3, 7, 1.f);
    CK(cudaMalloc(&base, 128)); fill_f32<<<1, 32>>>(base, 24, 9, 1.f);
    CK(cudaMalloc(&nw, D * 2)); fill_bf16<<<16, 256>>>(nw, D, 11);
    CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
    CK(cudaMalloc(&partials, (size_t)T * max_parts(T_, D_, s) * hcwarm_mhc::kPartialStride * 4));
    CK(cudaDeviceSynchronize());
    p.num_tokens = T; p.fn = fn[0]; p.scale = scale; p.base = base; p.norm_weight = nw; p.post = post; p.comb = comb;
    p.partials = partials; p.num_splits = s; p.hc_mult = 4; p.hidden = D; p.sinkhorn_iters = 20;
    p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f; p.input = kResidual;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  }
  int D;
  long long T;
  int s;
  size_t xbytes, fnbytes = 24 * 4 * (size_t)D * 4;
  int sets;
  std::vector<unsigned short*> x, y;
  std::vector<float*> fn;
  float *scale, *base, *post, *comb, *partials;
  unsigned short* nw;
  hcwarm_mhc_pre_params p{};
  cudaStream_t st;
};

struct Outputs {
  std::vector<unsigned short> y;
  std::vector<float> post, comb;
};

template <int D>
void run(long long T, int sms, size_t l2) {
  Inputs in(D, T, sms, l2);
  const int cls = hcwarm_mhc::cuda_split_class(in.s);
  if (cls != 5 && cls != 22) { printf("D %d T %lld: class %d is not a one-wave class\n", D, T, cls); return; }
  void* held = cls == 5 ? (void*)k_finish<5, D, false> : (void*)k_finish<22, D, false>;
  void* streamed = cls == 5 ? (void*)k_finish<5, D, true> : (void*)k_finish<22, D, true>;
  const bool split_now = T <= hcwarm_mhc::kCudaFinishSplitTokens;
  // Up to 128 tokens the class's held finish already runs in y and comb blocks, and streaming lost.
  const std::vector<Finish> finishes =
      split_now ? std::vector<Finish>{{"held, y|comb", held, true}}
                : std::vector<Finish>{{"held", held, false}, {"held, y|comb", held, true}, {"streamed", streamed, false},
                                      {"streamed, y|comb", streamed, true}};
  const int full = hcwarm_mhc::cuda_num_parts(in.s);
  const std::vector<Shape> shapes = {shape<D, 4, 2>(), shape<D, 4, 4>(), shape<D, 8, 2>()};
  // what: bit 1 the partial, bit 2 the finish.
  auto launch = [&](const Shape& sh, int parts, const Finish& fin, int i, int what) {
    hcwarm_mhc_pre_params q = in.p;
    q.residual = in.x[i];
    q.y = in.y[i];
    q.fn = in.fn[i];
    q.num_parts = parts;
    void* args[] = {&q};
    cudaLaunchAttribute a = pdl_attr();
    const int tile = 16 * sh.warps;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(parts, (unsigned)((T + tile - 1) / tile));
    c.blockDim = dim3(32 * sh.warps);
    c.dynamicSmemBytes = hcwarm_mhc::cuda_partial_smem_stages(sh.warps, sh.stages);
    c.stream = in.st;
    c.attrs = &a;
    c.numAttrs = 1;
    if (what & 1) CK(cudaLaunchKernelExC(&c, sh.partial, args));
    if (!(what & 2)) return;
    cudaLaunchConfig_t f{};
    f.gridDim = dim3((unsigned)T * (fin.split ? 2 : 1));
    f.blockDim = dim3(hcwarm_mhc::kCudaThreads);
    f.stream = in.st;
    f.attrs = &a;
    f.numAttrs = 1;
    CK(cudaLaunchKernelExC(&f, fin.kernel, args));
  };
  auto outputs = [&](const Shape& sh, int parts, const Finish& fin) {
    CK(cudaMemsetAsync(in.y[0], 0, in.xbytes / 4, in.st));
    launch(sh, parts, fin, 0, 3);
    CK(cudaStreamSynchronize(in.st));
    CK(cudaGetLastError());
    Outputs o{std::vector<unsigned short>((size_t)T * D), std::vector<float>(T * 4), std::vector<float>(T * 16)};
    CK(cudaMemcpy(o.y.data(), in.y[0], in.xbytes / 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.post.data(), in.post, T * 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.comb.data(), in.comb, T * 64, cudaMemcpyDeviceToHost));
    return o;
  };
  auto ulps = [](unsigned short a, unsigned short b) {
    auto key = [](unsigned short v) { return (v & 0x8000) ? 0x8000 - (int)(v & 0x7fff) : 0x8000 + (int)v; };
    return std::abs(key(a) - key(b));
  };
  auto max_rel = [](const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs((double)a[i] - b[i]) / std::max(1e-30, std::fabs((double)b[i])));
    return m;
  };
  const Outputs ref = outputs(shapes[0], full, finishes[0]);
  printf("\nD %d T %lld splits %d class %d, shipped: %d parts x %lld tiles of 64, the held finish; %d sets of %.1f MB\n", D,
         T, in.s, cls, full, (T + 63) / 64, in.sets, in.xbytes / 1e6);
  // Every shape once per round, rounds in turn, so that a drift of the machine's clocks or
  // neighbours spreads over all shapes; each cell the median of the rounds, the pair's range beside it.
  struct Config {
    const Shape* sh;
    int parts;
    const Finish* fin;
    std::vector<float> pair, part, fin_us;
  };
  std::vector<Config> configs;
  for (const Shape& sh : shapes) {
    std::vector<int> counts = {full, full * 2 / 3};
    for (int more : more_parts(T, D, in.s)) counts.push_back(more);
    for (int parts : counts) {
      for (const Finish& fin : finishes) configs.push_back({&sh, parts, &fin, {}, {}, {}});
    }
  }
  for (int round = 0; round < kRounds; ++round) {
    for (Config& c : configs) {
      auto time = [&](int what) {
        return graph_replay_us(in.st, in.sets, [&](int i) { launch(*c.sh, c.parts, *c.fin, i, what); });
      };
      c.pair.push_back(time(3));
      c.part.push_back(time(1));
      c.fin_us.push_back(time(2));
    }
  }
  auto median = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  printf("%-16s %5s %7s %-17s | %8s %13s %8s %8s | %s\n", "partial", "parts", "blocks", "finish", "pair us", "pair range",
         "partial", "finish", "against the shipped shape");
  for (const Config& c : configs) {
    const Outputs o = outputs(*c.sh, c.parts, *c.fin);
    int worst = 0;
    size_t diff = 0;
    for (size_t i = 0; i < o.y.size(); ++i) {
      const int u = ulps(o.y[i], ref.y[i]);
      worst = std::max(worst, u);
      diff += u != 0;
    }
    const long long blocks = (long long)c.parts * ((T + 16 * c.sh->warps - 1) / (16 * c.sh->warps));
    const auto range = std::minmax_element(c.pair.begin(), c.pair.end());
    printf("%-16s %5d %7lld %-17s | %8.2f %6.2f-%6.2f %8.2f %8.2f | y %zu differ (<= %d ulp), post %.1e, comb %.1e%s\n",
           c.sh->name.c_str(), c.parts, blocks, c.fin->name.c_str(), median(c.pair), *range.first, *range.second,
           median(c.part), median(c.fin_us), diff, worst, max_rel(o.post, ref.post), max_rel(o.comb, ref.comb),
           &c == &configs[0] ? "  (shipped)" : "");
  }
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::vector<std::string> cases = {"4096:512", "4096:384", "7168:384"};
  if (argc > 1) cases.assign(argv + 1, argv + argc);
  for (const std::string& c : cases) {
    const int D = atoi(c.c_str());
    const long long T = atoll(c.substr(c.find(':') + 1).c_str());
    if (D == 4096) run<4096>(T, prop.multiProcessorCount, prop.l2CacheSize);
    else if (D == 7168) run<7168>(T, prop.multiProcessorCount, prop.l2CacheSize);
    else printf("%s: hidden 4096 or 7168\n", c.c_str());
  }
  return 0;
}
