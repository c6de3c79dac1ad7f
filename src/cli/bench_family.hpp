#pragma once
// `hcwarm bench op --op post-pre|head|pre-embed`: the rest of the mHC family
// timed beside what it replaces or resembles, at the same D and T, eager and
// under CUDA-graph replay, specialized and (where there is one) generic:
//   post-pre   the fused sublayer boundary (hc_pre with input Post) beside
//              hc_post followed by hc_pre on its new residual;
//   head       hc_head beside hc_pre (on CUDA also its one-pass and cluster
//              kernels, each forced at every T);
//   pre-embed  hc_pre of the first layer from the embedding beside hc_pre.
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "cli/bench_rows.hpp"
#include "core/device.hpp"

namespace hcwarm::cuda {
class CudaDevice;
}
namespace hcwarm::jit {
class JitRuntime;
}

namespace hcwarm::cli {

enum class FamilyOp { PostPre, Head, PreEmbed };
const char* to_string(FamilyOp op);  // "post-pre" | "head" | "pre-embed"

struct FamilyBench {
  Device* dev = nullptr;
  cuda::CudaDevice* cuda = nullptr;  // null on the CPU
  jit::JitRuntime* rt = nullptr;     // the bench's memory-only runtime
  int num_sms = 0;
  double copy_bw = 0;                // bytes read + written per second
  size_t cache_bytes = 0;            // the rotation outgrows this
  int graph_replays = 0;             // 0: no graph timing (always on the CPU)
  double min_seconds = 0.2;
  bool norm = true;                  // the fused RMSNorm in every hc_pre column
  bool fast_finish = true;
  bool one_pass = true;              // HCWARM_MHC_ONE_PASS, for the residual-input hc_pre
  bool in_place = false;             // post-pre: the new residual over the previous one, as the model writes it
  bool text = true;                  // print the table (else only the JSON rows)
};

// One table: a row per (D, T) of `tokens` (or, with buckets > 0, the
// representative of every split bucket of [1, buckets]), appended to `rows`.
void run_family_bench(const FamilyBench& b, FamilyOp op, const std::vector<int>& hidden,
                      const std::vector<int64_t>& tokens, int64_t buckets, std::mt19937_64& rng, ResidualPool& pool,
                      BenchJson& rows);

}  // namespace hcwarm::cli
