#pragma once
// `hcwarm bench op`'s hc_pre table: microseconds per call eager and under
// CUDA-graph replay, GB/s and the fraction of the copy bandwidth, specialized
// (JIT) and generic (ahead of time) kernels side by side, and the compile time
// of each specialization.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cli/bench_family.hpp"
#include "cli/bench_rows.hpp"

namespace hcwarm::cli {

// What only the hc_pre table takes, beside the settings it shares with the other tables.
struct PreTableOptions {
  std::string variant = "both";  // both | specialized | generic
  bool stages = false;           // also time the two kernels apart (and num_splits 1's other path)
  int sinkhorn_iters = 20;
};

// Prints the table's header, then a row per (D, T) of `given_tokens` (or, with
// buckets > 0, the representative of every split bucket of [1, buckets]),
// each appended to `rows`.
void run_pre_table(const FamilyBench& b, const PreTableOptions& t, const std::vector<int>& hidden,
                   const std::vector<int64_t>& given_tokens, int64_t buckets, std::mt19937_64& rng, ResidualPool& pool,
                   BenchJson& rows);

}  // namespace hcwarm::cli
