#include "cli/json_output.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace hcwarm::cli {

nlohmann::ordered_json versioned(const nlohmann::json& body, int schema_version) {
  nlohmann::ordered_json out{{"schema_version", schema_version}};
  for (const auto& [key, value] : body.items()) {
    if (key != "schema_version") out[key] = nlohmann::ordered_json(value);
  }
  return out;
}

void print_json(std::ostream& os, const nlohmann::json& body, int schema_version) {
  os << versioned(body, schema_version).dump(2) << "\n";
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  // fmt::gmtime: fmt 9 formats a system_clock time_point in local time.
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

std::string iso8601_utc(std::filesystem::file_time_type t) {
  return iso8601_utc(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::file_clock::to_sys(t)));
}

void add_json_flag(CLI::App* cmd, bool& json) {
  cmd->add_flag("--json", json, "Print one JSON object instead of the text");
}

nlohmann::json run_config_json(const std::string& model, mhc::Backend backend, const model::ServerArgs& server,
                               const std::optional<std::filesystem::path>& cache_dir) {
  return {{"model", model},
          {"backend", mhc::to_string(backend)},
          {"num_sms", server.num_sms},
          {"max_num_tokens", server.max_num_tokens()},
          {"cache_dir", cache_dir ? cache_dir->string() : std::string()}};
}

}  // namespace hcwarm::cli
