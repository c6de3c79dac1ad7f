// Traces by name: format detection, read_trace over a file, and load_trace
// (a file, or the synthetic generator with overrides).
#include "sim/trace.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "core/json_util.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "sim/trace_parsing.hpp"

namespace hcwarm::sim {
using namespace parsing;

namespace {
constexpr EnumName<TraceFormat> kFormatNames[] = {
    {TraceFormat::Auto, "auto"}, {TraceFormat::AzureCsv, "azure-csv"}, {TraceFormat::Jsonl, "jsonl"}};
}  // namespace

const char* to_string(TraceFormat f) { return enum_name(kFormatNames, f); }

TraceFormat detect_trace_format(const std::filesystem::path& path, std::string_view text) {
  const std::string ext = lower(path.extension().string());
  if (ext == ".csv") return TraceFormat::AzureCsv;
  if (ext == ".jsonl" || ext == ".ndjson") return TraceFormat::Jsonl;
  const auto lines = non_blank_lines(text.substr(0, std::min<size_t>(text.size(), 64 * 1024)));
  if (!lines.empty() && lines[0].text.front() == '{') return TraceFormat::Jsonl;
  return TraceFormat::AzureCsv;
}

std::vector<Request> read_trace(const std::filesystem::path& path, const TraceReadOptions& opts) {
  // kMaxRequests lines of a few hundred bytes each fit in 4 GiB.
  const std::string text = read_input_file(path, "trace file", uint64_t{4} << 30);
  const TraceFormat fmt = opts.format == TraceFormat::Auto ? detect_trace_format(path, text) : opts.format;
  return fmt == TraceFormat::Jsonl ? parse_jsonl(text, path.string(), opts)
                                   : parse_azure_csv(text, path.string(), opts);
}

SyntheticTraceConfig synthetic_trace_config(const std::string& spec) {
  HCWARM_CHECK_ARG(spec == "synthetic" || spec.starts_with("synthetic:"), "trace '{}' is not a synthetic one",
                   excerpt(spec));
  // Overrides on the demo config; short aliases for the common ones.
  const std::map<std::string, std::string> aliases = {
      {"n", "num_requests"}, {"rate", "arrival_rate_per_s"}, {"seed", "seed"}};
  nlohmann::json j = builtin_demo_trace_config().to_json();
  std::string_view rest = spec == "synthetic" ? std::string_view{} : std::string_view(spec).substr(10);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    HCWARM_CHECK_ARG(eq != std::string_view::npos, "trace '{}': '{}' is not KEY=VALUE", excerpt(spec), excerpt(item));
    std::string key(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (auto a = aliases.find(key); a != aliases.end()) key = a->second;
    HCWARM_CHECK_ARG(j.contains(key), "trace '{}': unknown key '{}'", excerpt(spec), excerpt(key));
    if (const auto i = parse_int(value)) {
      j[key] = *i;
    } else if (const auto d = parse_double(value)) {
      j[key] = *d;
    } else {
      HCWARM_THROW(ErrorKind::InvalidArgument, "trace '{}': value of '{}' is not a number: '{}'", excerpt(spec), key,
                   excerpt(value));
    }
  }
  return SyntheticTraceConfig::from_json(j, "trace '" + excerpt(spec) + "'");
}

std::vector<Request> load_trace(const std::string& spec, const TraceReadOptions& opts) {
  if (spec != "synthetic" && !spec.starts_with("synthetic:")) return read_trace(spec, opts);
  std::vector<Request> reqs = synthetic_trace(synthetic_trace_config(spec));
  sort_and_truncate(reqs, opts);
  return reqs;
}

}  // namespace hcwarm::sim
