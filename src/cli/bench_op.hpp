#pragma once
// `hcwarm bench op`: its options, and the run that sets up the device, a
// memory-only JIT runtime and the copy bandwidth, times the hc_pre table
// (cli/bench_pre_table.hpp) and the other ops' tables (cli/bench_family.hpp),
// and writes the text or the JSON report.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace hcwarm::cli {

struct BenchOpOptions {
  std::vector<int> hidden{4096, 7168};
  std::vector<int64_t> tokens{1, 8, 64, 128, 512, 2048, 4096, 8192, 16384};
  int64_t buckets = 0;  // > 0: instead of tokens, the representative of every split bucket of [1, buckets]
  std::string backend;  // "" = default
  std::string op = "pre";  // pre | post-pre | head | pre-embed | all
  std::string variant = "both";
  bool precise_finish = false;  // cuda: IEEE reciprocals in the scalar part instead of the default fast ones
  bool norm = true;
  bool json = false;
  bool stages = false;  // also time the two kernels apart (and num_splits 1's other path)
  std::string json_out;  // also write the JSON here
  double min_seconds = 0.2;
  int graph_replays = 20;  // cuda: timed replays of each row's graph; 0 = no graph timing
  int num_sms = 0;
  bool in_place = false;    // post-pre: the new residual over the previous one
  int sinkhorn_iters = 20;  // the pre table: 0 shows what the Sinkhorn chain costs a call
};

void run_bench_op(const CliContext& ctx, const BenchOpOptions& o);

}  // namespace hcwarm::cli
