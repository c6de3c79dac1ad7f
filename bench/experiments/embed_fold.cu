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
  const EmbedInputs in(D, T, sms, l2);
  const EmbedPair k = embed_pair<D>(hcwarm_mhc::cuda_split_class(in.s));

  // Bit-for-bit: set 0 through both routes.
  const EmbedOutputs o0 = in.outputs_of([&](hcwarm_mhc_pre_params q) { k.launch(q, in.st, false); }, 0);
  const EmbedOutputs o1 = in.outputs_of([&](hcwarm_mhc_pre_params q) { k.launch(q, in.st, true); }, 0);
  const bool same = o0.y == o1.y && memcmp(o0.post.data(), o1.post.data(), T * 16) == 0 &&
                    memcmp(o0.comb.data(), o1.comb.data(), T * 64) == 0;

  auto time = [&](bool f, int stages) {
    return graph_replay_us(in.st, in.sets, [&](int i) { k.launch(in.of_set(i), in.st, f, stages); });
  };
  const float pair0 = time(false, 3), pair1 = time(true, 3), part0 = time(false, 1), part1 = time(true, 1);
  const double floor_us = 2.0 * in.xbytes / 3.0e3 / 1e3;  // at 3 TB/s, for scale only
  printf("D %d T %6lld splits %2d parts %2d | pair %8.2f -> %8.2f us (%+5.1f%%) | partial %8.2f -> %8.2f | %s | floor@3TB/s %.1f\n",
         D, T, in.s, in.parts, pair0, pair1, 100.0 * (pair1 - pair0) / pair0, part0, part1,
         same ? "bit-identical" : "DIFFERENT", floor_us);
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
