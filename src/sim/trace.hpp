#pragma once
// Requests to replay through the scheduler: read from an Azure LLM inference
// trace CSV or a JSONL file, or drawn by a seeded synthetic generator.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hcwarm::sim {

struct Request {
  int64_t id = 0;            // position in the source (0-based), kept through sorting
  double arrival_s = 0.0;    // seconds since the start of the trace
  int64_t prompt_tokens = 0; // >= 1
  int64_t output_tokens = 0; // >= 0; the prefill makes the first, each decode forward one more
};

enum class TraceFormat { Auto, AzureCsv, Jsonl };
const char* to_string(TraceFormat f);

struct TraceReadOptions {
  TraceFormat format = TraceFormat::Auto;
  // Malformed lines are all counted; the error lists the first max_errors of them.
  size_t max_errors = 10;
  // Keep only the first N requests by arrival.
  std::optional<int64_t> max_requests;
};

// Reads a trace file. Requests come back sorted by (arrival_s, id). A malformed
// file throws ErrorKind::InvalidArgument naming the file and, per bad line, its
// line number and what is wrong.
std::vector<Request> read_trace(const std::filesystem::path& path, const TraceReadOptions& opts = {});

// The same on text already in memory; `source` names it in errors.
// Azure: header with TIMESTAMP, ContextTokens, GeneratedTokens (any order, extra
// columns ignored). TIMESTAMP is "YYYY-MM-DD HH:MM:SS[.fraction]" or plain
// seconds; arrival = seconds since the earliest row (the first, in a sorted trace).
std::vector<Request> parse_azure_csv(std::string_view text, const std::string& source,
                                     const TraceReadOptions& opts = {});
// JSONL: one object per line with arrival_s, prompt_tokens, output_tokens; blank lines skipped.
std::vector<Request> parse_jsonl(std::string_view text, const std::string& source,
                                 const TraceReadOptions& opts = {});

// By extension (.csv; .jsonl/.ndjson), else by the first non-blank line ('{' means JSONL).
TraceFormat detect_trace_format(const std::filesystem::path& path, std::string_view text);

// "2023-11-16 18:15:46.6805900" (also with 'T') -> seconds since 1970 (no time zone);
// nullopt when it is not such a datetime.
std::optional<double> parse_datetime_seconds(std::string_view s);

// Knobs of the synthetic workload: Poisson arrivals, lognormal prompt lengths,
// and outputs that are mostly short (geometric) with a heavy Pareto tail, so
// a replay mixes prefill chunks with long runs of small decode batches.
struct SyntheticTraceConfig {
  uint64_t seed = 1;
  int64_t num_requests = 2000;
  double arrival_rate_per_s = 20.0;   // mean arrivals per simulated second
  double prompt_median = 600.0;       // lognormal median, tokens
  double prompt_sigma = 1.3;          // lognormal sigma (of the natural log)
  int64_t min_prompt_tokens = 16;
  int64_t max_prompt_tokens = 16384;
  double output_mean = 160.0;         // mean of the geometric body
  double output_tail_fraction = 0.1;  // share of requests drawn from the tail
  double output_tail_min = 512.0;     // Pareto scale of the tail
  double output_tail_alpha = 1.2;     // Pareto shape (smaller = heavier)
  int64_t max_output_tokens = 8192;

  // Checks every field; throws ErrorKind::InvalidArgument naming the bad one.
  void validate() const;
  // Unknown keys are errors; missing keys keep their defaults. `source` names the text in errors.
  static SyntheticTraceConfig from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::json to_json() const;
};

// The small workload `hcwarm demo` replays (built in, so the demo needs no files).
SyntheticTraceConfig builtin_demo_trace_config();

// Deterministic for a given config on every platform: draws come from
// mt19937_64 through explicit transforms, not the std:: distributions.
std::vector<Request> synthetic_trace(const SyntheticTraceConfig& config);

// The config of "synthetic" or "synthetic:KEY=V,..." (as load_trace reads it), checked.
SyntheticTraceConfig synthetic_trace_config(const std::string& spec);

// A trace by name: "synthetic" (the built-in demo config), "synthetic:KEY=V,..."
// (demo config with overrides: n, seed, rate, prompt_median, output_mean, ...),
// or a file path read with read_trace.
std::vector<Request> load_trace(const std::string& spec, const TraceReadOptions& opts = {});

}  // namespace hcwarm::sim
