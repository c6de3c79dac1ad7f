#pragma once
// What the tables of `hcwarm bench op` share: the rotation of input sets (how
// many, and the residual values they are filled from), and one measured
// column as JSON and as a text cell.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "cli/bench_timing.hpp"
#include "core/bf16.hpp"

namespace hcwarm::cli {

using BenchJson = nlohmann::ordered_json;  // keys in the order written: schema_version first

inline constexpr size_t kMinGraphCalls = 8;   // cuda: at least this many sets, the calls of one graph
inline constexpr size_t kMaxSets = 4096;      // cuda: bounds the graph's size for tiny shapes
inline constexpr size_t kMaxCpuSets = 64;     // cpu: bounds set-up time; a tiny shape stays in cache regardless

// N(0,1) bf16 values drawn once, handed out from rotating offsets.
class ResidualPool {
 public:
  explicit ResidualPool(std::mt19937_64& rng);
  // Contiguous runs of the pool from a moving offset (memcpy speed: a set can be ~1 GB).
  void fill(std::vector<bf16>& out);

 private:
  std::vector<bf16> values_;
  size_t pos_ = 0;
};

// Enough sets that together they are >= 3x the cache, so each call reads its
// inputs from memory; on CUDA at least kMinGraphCalls, one graph call per set.
size_t rotation_count(size_t set_bytes, size_t cache_bytes, bool cuda);

// CPU: the last-level cache the rotation must exceed (32 MiB when the C library does not say).
size_t cpu_cache_bytes();

// One measured column's JSON: eager and graph figures. us / gbps /
// copy_fraction are schema 1's names of the eager figures, kept for its
// readers. graph_calls: the calls per replay, 0 when the graph was not timed.
BenchJson variant_json(const Measured& m, double bytes, double copy_bw, size_t graph_calls);

// The text table's cell of one column: eager us, %copy, graph us, %copy.
std::string variant_cell(const Measured& m, double bytes, double copy_bw, bool cuda, bool graph_on);

}  // namespace hcwarm::cli
