#pragma once
// How replay results are shown: a side-by-side table, JSON, and report files.
#include <ostream>
#include <string>
#include <vector>

#include "sim/latency_report.hpp"

namespace hcwarm::cli {

// The "schema_version" of replay, demo and bench serve JSON: 2 since the
// heuristic "stalls" became "slow_forwards" beside the exact "waited_for_compile".
inline constexpr int kReplaySchemaVersion = 2;

// One run: its JSON object; several: {"runs": [...]} (without "schema_version": cli/json_output.hpp adds it).
nlohmann::json replay_results_json(const std::vector<sim::RunReport>& runs);
// A table of forwards, one of requests (time to first token, time per output
// token), then each run's forwards that waited for a compile and its slow forwards.
void print_replay_table(std::ostream& os, const std::vector<sim::RunReport>& runs);

// .svg: the latency-over-time chart, forwards that waited marked; .json: every forward of every run.
void write_replay_report(const std::string& path, const std::vector<sim::RunReport>& runs,
                         const std::string& title);

}  // namespace hcwarm::cli
