// The trace readers' shared text handling (see trace_parsing.hpp).
#include "sim/trace_parsing.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace hcwarm::sim::parsing {

void LineErrors::add(size_t line, const std::string& what) {
  if (listed_.size() < max_) listed_.push_back(fmt::format("  line {}: {}", line, what));
  ++total_;
}

void LineErrors::throw_if_any(std::string_view kind) const {
  if (total_ == 0) return;
  std::string msg = fmt::format("{}: {} malformed line{} in {}:", source_, total_, total_ == 1 ? "" : "s", kind);
  for (const auto& l : listed_) msg += "\n" + l;
  if (total_ > listed_.size()) msg += fmt::format("\n  ... and {} more", total_ - listed_.size());
  HCWARM_THROW(ErrorKind::InvalidArgument, "{}", msg);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<Line> non_blank_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 BOM
  std::vector<Line> lines;
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    line = trim(line);
    if (!line.empty()) lines.push_back({number, line});
  }
  return lines;
}

namespace {

std::string unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(trim(s));
}

}  // namespace

std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> fields;
  while (true) {
    const size_t comma = line.find(',');
    fields.push_back(unquote(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return fields;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

void check_requests(const LineErrors& errors, std::string_view kind, const std::vector<Request>& reqs,
                    const std::string& source, std::string_view none) {
  errors.throw_if_any(kind);
  HCWARM_CHECK_ARG(reqs.size() <= static_cast<size_t>(limits::kMaxRequests), "{}: {} requests, above the limit {}",
                   source, reqs.size(), limits::kMaxRequests);
  HCWARM_CHECK_ARG(!reqs.empty(), "{}: {}", source, none);
}

void sort_and_truncate(std::vector<Request>& reqs, const TraceReadOptions& opts) {
  std::stable_sort(reqs.begin(), reqs.end(), [](const Request& a, const Request& b) {
    return a.arrival_s < b.arrival_s;
  });
  if (opts.max_requests && *opts.max_requests >= 0 && static_cast<size_t>(*opts.max_requests) < reqs.size()) {
    reqs.resize(static_cast<size_t>(*opts.max_requests));
  }
}

}  // namespace hcwarm::sim::parsing
