// The JSONL trace reader: one object per line with arrival_s, prompt_tokens, output_tokens.
#include "sim/trace.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/limits.hpp"
#include "sim/trace_parsing.hpp"

namespace hcwarm::sim {
using namespace parsing;

std::vector<Request> parse_jsonl(std::string_view text, const std::string& source, const TraceReadOptions& opts) {
  LineErrors errors(source, opts.max_errors);
  std::vector<Request> reqs;
  for (const Line& line : non_blank_lines(text)) {
    if (json_too_deep_at(line.text)) {
      errors.add(line.number, fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
      continue;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line.text);
    } catch (const nlohmann::json::parse_error& e) {
      errors.add(line.number, fmt::format("not valid JSON (byte {} of the line)", e.byte));
      continue;
    } catch (const nlohmann::json::exception& e) {  // out_of_range: a number too large
      errors.add(line.number, fmt::format("not valid JSON: {}", json_error_text(e)));
      continue;
    }
    if (!j.is_object()) {
      errors.add(line.number, fmt::format("expected a JSON object, got {}", j.type_name()));
      continue;
    }
    std::vector<std::string> bad;
    auto number = [&](const char* key) -> std::optional<double> {
      auto it = j.find(key);
      if (it == j.end()) {
        bad.push_back(fmt::format("missing \"{}\"", key));
        return std::nullopt;
      }
      if (!it->is_number() || !std::isfinite(it->get<double>())) {
        bad.push_back(fmt::format("\"{}\" is {}, not a number", key, json_excerpt(*it)));
        return std::nullopt;
      }
      return it->get<double>();
    };
    auto integer = [&](const char* key, int64_t min) -> std::optional<int64_t> {
      const auto v = number(key);
      if (!v) return std::nullopt;
      if (*v != std::floor(*v) || *v < static_cast<double>(min) || *v > static_cast<double>(limits::kMaxRequestTokens)) {
        bad.push_back(fmt::format("\"{}\" is {}, not an integer in [{}, {}]", key, json_excerpt(j[key]), min,
                                  limits::kMaxRequestTokens));
        return std::nullopt;
      }
      return static_cast<int64_t>(*v);
    };
    const auto arrival = number("arrival_s");
    if (arrival && *arrival < 0) bad.push_back(fmt::format("\"arrival_s\" is {}, must be >= 0", *arrival));
    const auto prompt = integer("prompt_tokens", 1);
    const auto output = integer("output_tokens", 0);
    if (!bad.empty()) {
      errors.add(line.number, fmt::format("{}", fmt::join(bad, "; ")));
      continue;
    }
    reqs.push_back({static_cast<int64_t>(reqs.size()), *arrival, *prompt, *output});
  }
  check_requests(errors, "JSONL trace", reqs, source, "no requests in the JSONL trace");
  sort_and_truncate(reqs, opts);
  return reqs;
}

}  // namespace hcwarm::sim
