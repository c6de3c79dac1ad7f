#include "cli/replay_output.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cli/json_output.hpp"

namespace hcwarm::cli {

nlohmann::json replay_results_json(const std::vector<sim::RunReport>& runs) {
  if (runs.size() == 1) return sim::report_json(runs.front());
  nlohmann::json j{{"runs", nlohmann::json::array()}};
  for (const auto& r : runs) j["runs"].push_back(sim::report_json(r));
  return j;
}

namespace {

void print_request_table(std::ostream& os, const std::vector<sim::RunReport>& runs) {
  const bool any = std::any_of(runs.begin(), runs.end(), [](const sim::RunReport& r) { return !r.requests.empty(); });
  if (!any) return;
  // TTFT: arrival to first token, queueing included; TPOT: the pace after it.
  os << fmt::format("\n{:<38} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "configuration", "requests",
                    "TTFT p50", "TTFT p99", "TTFT max", "TPOT p50", "TPOT p99", "TPOT max", "TPOT m/p99");
  for (const auto& r : runs) {
    const sim::RequestLatency q = sim::summarize_requests(r.requests);
    os << fmt::format("{:<38} {:>8} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.3f} {:>10.3f} {:>10.3f} {:>9.2f}\n", r.name,
                      q.requests, q.ttft.p50_ms, q.ttft.p99_ms, q.ttft.max_ms, q.tpot.p50_ms, q.tpot.p99_ms,
                      q.tpot.max_ms, q.tpot.max_over_p99());
  }
  os << "(milliseconds; TTFT: arrival to first token, TPOT: time per output token after the first)\n";
}

}  // namespace

void print_replay_table(std::ostream& os, const std::vector<sim::RunReport>& runs) {
  // waited: forwards in which a call blocked on a compile (the runtime's counters);
  // generic: calls a generic kernel served while their specialization compiled in the
  // background; slow: forwards over 10x their bucket's median (a timing heuristic);
  // bucket max/p99: the largest max / p99 within one split bucket of >= 100 forwards;
  // of bucket: that bucket's split count.
  // start-up s: construction and warmup (compiles may finish during construction; warmup s is what remained).
  os << fmt::format("\n{:<38} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>7} {:>8} {:>8} {:>9} {:>5} {:>14} {:>9}\n",
                    "configuration", "start-up s", "warmup s", "forwards", "p50 ms", "p99 ms", "max ms", "waited",
                    "wait s", "generic", "compiles", "slow", "bucket max/p99", "of bucket");
  for (const auto& r : runs) {
    const sim::LatencySummary s = sim::summarize(r.records);
    const auto& tail = s.worst_bucket_tail;
    const std::string tail_cell = tail.forwards == 0 ? "-" : fmt::format("{:.2f}", tail.max_over_p99());
    const std::string tail_bucket = tail.forwards == 0 ? "-" : fmt::format("{} spl", tail.num_splits);
    const std::string startup =
        r.extra.contains("startup_seconds") ? fmt::format("{:.3f}", r.extra["startup_seconds"].get<double>()) : "-";
    os << fmt::format(
        "{:<38} {:>10} {:>9.3f} {:>8} {:>8.2f} {:>8.2f} {:>9.2f} {:>7} {:>8.3f} {:>8} {:>9} {:>5} {:>14} {:>9}\n", r.name,
        startup, r.warmup_seconds, s.forwards, s.p50_ms, s.p99_ms, s.max_ms, s.forwards_waited_for_compile,
        s.compile_wait_s, s.served_by_generic, s.compiles_during_forwards, s.slow_forwards.size(), tail_cell,
        tail_bucket);
  }
  print_request_table(os, runs);
  for (const auto& r : runs) {
    const sim::LatencySummary s = sim::summarize(r.records);
    // Every forward that waited for a compile: what warmup (or tiering) should have spared.
    if (s.forwards_waited_for_compile > 0) {
      os << fmt::format("\nforwards that waited for a kernel compile in \"{}\":\n", r.name);
      for (const auto& f : r.records) {
        if (f.waited_for_compile == 0) continue;
        os << fmt::format("  forward {}: {} tokens, {} splits, {:.1f} ms, {:.3f} s waiting ({} call{}), {} compile{}\n",
                          f.index, f.num_tokens, f.num_splits, f.seconds * 1e3, f.compile_wait_s,
                          f.waited_for_compile, f.waited_for_compile == 1 ? "" : "s", f.compiles_during,
                          f.compiles_during == 1 ? "" : "s");
      }
    }
    if (const int64_t bg = r.extra.value("background_compiled", int64_t{0}); bg > 0 || s.served_by_generic > 0) {
      os << fmt::format("\n\"{}\": {} kernel{} compiled in the background while generic kernels served {} call{}\n",
                        r.name, bg, bg == 1 ? "" : "s", s.served_by_generic, s.served_by_generic == 1 ? "" : "s");
    }
    if (!s.slow_forwards.empty()) {
      os << fmt::format("\nslow forwards of \"{}\" (over 10x their bucket's median; a timing heuristic):\n", r.name);
      for (const auto& st : s.slow_forwards) os << "  " << st.describe() << "\n";
    }
  }
}

void write_replay_report(const std::string& path, const std::vector<sim::RunReport>& runs,
                         const std::string& title) {
  const bool as_json = path.size() >= 5 && path.substr(path.size() - 5) == ".json";
  if (as_json) {
    nlohmann::json j{{"title", title}, {"runs", nlohmann::json::array()}};
    for (const auto& r : runs) j["runs"].push_back(sim::report_json(r, /*include_records=*/true));
    sim::write_text_file(path, versioned(j, kReplaySchemaVersion).dump(1));
  } else {
    sim::write_text_file(path, sim::render_report_svg(runs, title));
  }
  spdlog::info("report written to {}", path);
}

}  // namespace hcwarm::cli
