#pragma once
// How replay results are shown: a side-by-side table, JSON, and report files.
#include <ostream>
#include <string>
#include <vector>

#include "sim/latency_report.hpp"

namespace hcwarm::cli {

// One run: its JSON object; several: {"runs": [...]}. Text: a table, then each run's stalls.
void print_replay_results(std::ostream& os, const std::vector<sim::RunReport>& runs, bool json);

// .svg: the latency-over-time chart with stalls marked; .json: every forward of every run.
void write_replay_report(const std::string& path, const std::vector<sim::RunReport>& runs,
                         const std::string& title);

}  // namespace hcwarm::cli
