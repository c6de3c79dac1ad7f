#pragma once
// What the trace readers share: numbered non-blank lines, a list of per-line
// errors thrown as one, CSV fields, strict numbers, and the final sort and cut.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/trace.hpp"

namespace hcwarm::sim::parsing {

// Collects per-line problems so one error can report many of them.
class LineErrors {
 public:
  LineErrors(std::string source, size_t max_listed) : source_(std::move(source)), max_(max_listed) {}
  void add(size_t line, const std::string& what);
  bool any() const { return total_ > 0; }
  void throw_if_any(std::string_view kind) const;

 private:
  std::string source_;
  size_t max_;
  size_t total_ = 0;
  std::vector<std::string> listed_;
};

struct Line {
  size_t number;  // 1-based
  std::string_view text;
};

std::string_view trim(std::string_view s);

// Splits on '\n' (dropping '\r'), skipping blank lines but keeping their numbers.
std::vector<Line> non_blank_lines(std::string_view text);

// Comma-separated fields, each trimmed and unquoted.
std::vector<std::string> split_csv(std::string_view line);

std::string lower(std::string s);

// The whole of `s` as a number, else nullopt (parse_double: finite only).
std::optional<int64_t> parse_int(std::string_view s);
std::optional<double> parse_double(std::string_view s);

// After a reader's last line: throws the lines' errors (`kind` names the
// format), then whether there are too many requests or none (`none` says so).
void check_requests(const LineErrors& errors, std::string_view kind, const std::vector<Request>& reqs,
                    const std::string& source, std::string_view none);

// Sorted by arrival (stable: ties keep their order), then cut to opts.max_requests.
void sort_and_truncate(std::vector<Request>& reqs, const TraceReadOptions& opts);

}  // namespace hcwarm::sim::parsing
