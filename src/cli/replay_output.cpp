#include "cli/replay_output.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/json_output.hpp"

namespace hcwarm::cli {

nlohmann::json replay_results_json(const std::vector<sim::RunReport>& runs) {
  if (runs.size() == 1) return sim::report_json(runs.front());
  nlohmann::json j{{"runs", nlohmann::json::array()}};
  for (const auto& r : runs) j["runs"].push_back(sim::report_json(r));
  return j;
}

void print_replay_table(std::ostream& os, const std::vector<sim::RunReport>& runs) {
  os << fmt::format("\n{:<34} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7} {:>9}\n", "configuration", "warmup s", "forwards",
                    "p50 ms", "p99 ms", "max ms", "stalls", "compiles");
  for (const auto& r : runs) {
    const sim::LatencySummary s = sim::summarize(r.records);
    os << fmt::format("{:<34} {:>9.3f} {:>9} {:>9.2f} {:>9.2f} {:>10.2f} {:>7} {:>9}\n", r.name, r.warmup_seconds,
                      s.forwards, s.p50_ms, s.p99_ms, s.max_ms, s.stalls.size(), s.compiles_during_forwards);
  }
  for (const auto& r : runs) {
    const sim::LatencySummary s = sim::summarize(r.records);
    if (!s.stalls.empty()) {
      os << fmt::format("\nstalls of \"{}\":\n", r.name);
      for (const auto& st : s.stalls) os << "  " << st.describe() << "\n";
    }
    // Every compile after ready, stall or not: these are the forwards warmup should have covered.
    if (s.compiles_during_forwards > 0) {
      os << fmt::format("\nforwards that compiled a kernel while serving in \"{}\":\n", r.name);
      for (const auto& f : r.records) {
        if (f.compiles_during == 0) continue;
        os << fmt::format("  forward {}: {} tokens, {} splits, {:.1f} ms, {} compile{}\n", f.index, f.num_tokens,
                          f.num_splits, f.seconds * 1e3, f.compiles_during, f.compiles_during == 1 ? "" : "s");
      }
    }
  }
}

void write_replay_report(const std::string& path, const std::vector<sim::RunReport>& runs,
                         const std::string& title) {
  const bool as_json = path.size() >= 5 && path.substr(path.size() - 5) == ".json";
  if (as_json) {
    nlohmann::json j{{"title", title}, {"runs", nlohmann::json::array()}};
    for (const auto& r : runs) j["runs"].push_back(sim::report_json(r, /*include_records=*/true));
    sim::write_text_file(path, versioned(j).dump(1));
  } else {
    sim::write_text_file(path, sim::render_report_svg(runs, title));
  }
  spdlog::info("report written to {}", path);
}

}  // namespace hcwarm::cli
