#pragma once
// What every command's JSON has in common: an integer "schema_version" first
// (raised when a field changes meaning or goes away), two-space indent, and
// wall-clock times as ISO-8601 UTC ("2026-01-31T12:00:00Z").
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "mhc/hc_pre_op.hpp"
#include "model/server_args.hpp"

namespace hcwarm::cli {

// The schema of every JSON output that has not changed shape since it got one.
inline constexpr int kSchemaVersion = 1;

// body (an object) with "schema_version" put first.
nlohmann::ordered_json versioned(const nlohmann::json& body, int schema_version = kSchemaVersion);
void print_json(std::ostream& os, const nlohmann::json& body, int schema_version = kSchemaVersion);

std::string iso8601_utc(std::chrono::system_clock::time_point t);
std::string iso8601_utc(std::filesystem::file_time_type t);

// --json: "Print one JSON object instead of the text".
void add_json_flag(CLI::App* cmd, bool& json);

// The configuration block warm and cache build report: model, backend, SMs,
// token budget, cache directory ("" when kernels stay in memory).
nlohmann::json run_config_json(const std::string& model, mhc::Backend backend, const model::ServerArgs& server,
                               const std::optional<std::filesystem::path>& cache_dir);

}  // namespace hcwarm::cli
