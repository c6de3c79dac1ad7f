#include "cli/bench_rows.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace hcwarm::cli {

ResidualPool::ResidualPool(std::mt19937_64& rng) : values_(size_t{1} << 22) {
  std::normal_distribution<float> n01;
  for (auto& v : values_) v = bf16::from_float(n01(rng));
}

void ResidualPool::fill(std::vector<bf16>& out) {
  for (size_t i = 0; i < out.size();) {
    const size_t from = (pos_ + i) % values_.size();
    const size_t n = std::min(out.size() - i, values_.size() - from);
    std::copy_n(values_.begin() + static_cast<std::ptrdiff_t>(from), n, out.begin() + static_cast<std::ptrdiff_t>(i));
    i += n;
  }
  pos_ += 1237;
}

size_t rotation_count(size_t set_bytes, size_t cache_bytes, bool cuda) {
  const size_t n = (3 * cache_bytes + set_bytes - 1) / set_bytes;
  return cuda ? std::clamp(n, kMinGraphCalls, kMaxSets) : std::clamp<size_t>(n, 1, kMaxCpuSets);
}

size_t cpu_cache_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<size_t>(l3) : size_t{32} << 20;
}

BenchJson variant_json(const Measured& m, double bytes, double copy_bw, size_t graph_calls) {
  auto gbps = [&](double us) { return bytes / (us * 1e-6) / 1e9; };
  auto fraction = [&](double us) { return copy_bw > 0 ? BenchJson(gbps(us) * 1e9 / copy_bw) : BenchJson(); };
  BenchJson j;
  j["eager_us"] = m.us;
  j["eager_gbps"] = gbps(m.us);
  j["eager_copy_fraction"] = fraction(m.us);
  j["us"] = j["eager_us"];
  j["gbps"] = j["eager_gbps"];
  j["copy_fraction"] = j["eager_copy_fraction"];
  // Null unless the graph was timed (the CPU, --graph-replays 0, a failed capture).
  j["graph_us"] = nullptr;
  j["graph_gbps"] = nullptr;
  j["graph_copy_fraction"] = nullptr;
  j["graph_calls_per_replay"] = graph_calls > 0 ? BenchJson(graph_calls) : BenchJson();
  if (m.graph_us) {
    j["graph_us"] = *m.graph_us;
    j["graph_gbps"] = gbps(*m.graph_us);
    j["graph_copy_fraction"] = fraction(*m.graph_us);
  }
  if (!m.graph_error.empty()) j["graph_error"] = m.graph_error;
  return j;
}

std::string variant_cell(const Measured& m, double bytes, double copy_bw, bool cuda, bool graph_on) {
  auto pct = [&](double us) { return fmt::format("{:>5.0f}%", 100.0 * bytes / (us * 1e-6) / copy_bw); };
  if (!m.ok) return fmt::format("{:>9} {:>6} {:>9} {:>6}", "-", "-", "-", "-");
  std::string graph;
  if (!cuda) {
    graph = fmt::format("{:>9} {:>6}", "n/a", "n/a");
  } else if (m.graph_us) {
    graph = fmt::format("{:>9.2f} {}", *m.graph_us, pct(*m.graph_us));
  } else {
    graph = fmt::format("{:>9} {:>6}", graph_on ? "error" : "-", "-");
  }
  return fmt::format("{:>9.2f} {} {}", m.us, pct(m.us), graph);
}

}  // namespace hcwarm::cli
