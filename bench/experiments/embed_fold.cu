// The first layer's pre from the embedding with fn folded once per call (the
// fold kernel, cuda/mhc_pre_fold.cuh, then the partial as its programmatic
// dependent) against the partial folding fn per chunk: graph-replay time of
// the whole pair and of the partial stage alone, at the library's split rule
// and part count (132 SMs), fused norm on; y, post and comb of the two routes
// compared bit for bit. Standalone: bench/experiments/build.sh embed_fold, then
// ./embed_fold [T...] on the GPU machine.
#include <cstring>
#include <vector>
#include "embed_pair.cuh"

template <int D>
void run(long long T, int sms, size_t l2) {
  const int s = split_rule(T, D, sms);
  const EmbedPair k = embed_pair<D>(hcwarm_mhc::cuda_split_class(s));
  const int parts = hcwarm_mhc::cuda_embed_parts(s, T, sms);
  const size_t xbytes = (size_t)T * D * 2;
  const int sets = (int)std::max<size_t>(2, (3 * l2 + 2 * xbytes - 1) / (2 * xbytes));
  std::vector<unsigned short*> x(sets), y(sets);
  for (int i = 0; i < sets; ++i) {
    CK(cudaMalloc(&x[i], xbytes));
    CK(cudaMalloc(&y[i], xbytes));
    fill_bf16<<<1024, 256>>>(x[i], (size_t)T * D, 17 + i);
  }
  float *fn, *scale, *base, *post, *comb, *partials, *folded;
  unsigned short* nw;
  CK(cudaMalloc(&fn, 24 * 4 * D * 4)); fill_f32<<<256, 256>>>(fn, 24 * 4 * D, 5, 4e-3f);
  CK(cudaMalloc(&scale, 16)); fill_f32<<<1, 32>>>(scale, 3, 7, 1.f);
  CK(cudaMalloc(&base, 128)); fill_f32<<<1, 32>>>(base, 24, 9, 1.f);
  CK(cudaMalloc(&nw, D * 2)); fill_bf16<<<16, 256>>>(nw, D, 11);
  CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
  CK(cudaMalloc(&partials, (size_t)T * parts * hcwarm_mhc::kPartialStride * 4));
  CK(cudaMalloc(&folded, 24 * D * 4));
  CK(cudaDeviceSynchronize());  // the fills ran on the legacy stream, which `st` does not wait for
  hcwarm_mhc_pre_params p{};
  p.num_tokens = T; p.fn = fn; p.scale = scale; p.base = base; p.norm_weight = nw; p.post = post; p.comb = comb;
  p.partials = partials; p.num_splits = s; p.num_parts = parts; p.hc_mult = 4; p.hidden = D; p.sinkhorn_iters = 20;
  p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f; p.input = kEmbed; p.fn_folded = folded;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  // Bit-for-bit: set 0 through both routes.
  std::vector<unsigned short> y0((size_t)T * D), y1((size_t)T * D);
  std::vector<float> po0(T * 4), po1(T * 4), co0(T * 16), co1(T * 16);
  auto once = [&](bool f, std::vector<unsigned short>& yy, std::vector<float>& po, std::vector<float>& co) {
    CK(cudaMemsetAsync(y[0], 0, xbytes, st)); CK(cudaMemsetAsync(post, 0, T * 16, st)); CK(cudaMemsetAsync(comb, 0, T * 64, st));
    hcwarm_mhc_pre_params q = p; q.residual = x[0]; q.y = y[0];
    k.launch(q, st, f);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(yy.data(), y[0], xbytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(po.data(), post, T * 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(co.data(), comb, T * 64, cudaMemcpyDeviceToHost));
  };
  once(false, y0, po0, co0);
  once(true, y1, po1, co1);
  const bool same = memcmp(y0.data(), y1.data(), xbytes) == 0 && memcmp(po0.data(), po1.data(), T * 16) == 0 &&
                    memcmp(co0.data(), co1.data(), T * 64) == 0;

  auto time = [&](bool f, int stages) {
    return graph_replay_us(st, sets, [&](int i) {
      hcwarm_mhc_pre_params q = p; q.residual = x[i]; q.y = y[i];
      k.launch(q, st, f, stages);
    });
  };
  const float pair0 = time(false, 3), pair1 = time(true, 3), part0 = time(false, 1), part1 = time(true, 1);
  const double floor_us = 2.0 * xbytes / 3.0e3 / 1e3;  // at 3 TB/s, for scale only
  printf("D %d T %6lld splits %2d parts %2d | pair %8.2f -> %8.2f us (%+5.1f%%) | partial %8.2f -> %8.2f | %s | floor@3TB/s %.1f\n",
         D, T, s, parts, pair0, pair1, 100.0 * (pair1 - pair0) / pair0, part0, part1,
         same ? "bit-identical" : "DIFFERENT", floor_us);
  for (int i = 0; i < sets; ++i) { cudaFree(x[i]); cudaFree(y[i]); }
  cudaFree(fn); cudaFree(scale); cudaFree(base); cudaFree(nw); cudaFree(post); cudaFree(comb); cudaFree(partials);
  cudaFree(folded); cudaStreamDestroy(st);
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::vector<long long> ts = {512, 2048, 4500, 8192, 16384};
  if (argc > 1) {
    ts.clear();
    for (int i = 1; i < argc; ++i) ts.push_back(atoll(argv[i]));
  }
  for (long long T : ts) run<4096>(T, prop.multiProcessorCount, prop.l2CacheSize);
  for (long long T : ts) run<7168>(T, prop.multiProcessorCount, prop.l2CacheSize);
  return 0;
}
