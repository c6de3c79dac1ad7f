// The Azure LLM inference trace reader: its CSV and TIMESTAMP datetimes.
#include "sim/trace.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_util.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "sim/trace_parsing.hpp"

namespace hcwarm::sim {
using namespace parsing;

namespace {

// Reads exactly `n` digits at s[pos..]; advances pos.
std::optional<int> digits(std::string_view s, size_t& pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

std::optional<double> parse_datetime_seconds(std::string_view s) {
  s = trim(s);
  size_t pos = 0;
  const auto y = digits(s, pos, 4);
  if (!y || !expect(s, pos, '-')) return std::nullopt;
  const auto mo = digits(s, pos, 2);
  if (!mo || !expect(s, pos, '-')) return std::nullopt;
  const auto d = digits(s, pos, 2);
  if (!d || pos >= s.size() || (s[pos] != ' ' && s[pos] != 'T')) return std::nullopt;
  ++pos;
  const auto h = digits(s, pos, 2);
  if (!h || !expect(s, pos, ':')) return std::nullopt;
  const auto mi = digits(s, pos, 2);
  if (!mi || !expect(s, pos, ':')) return std::nullopt;
  const auto sec = digits(s, pos, 2);
  if (!sec || *h > 23 || *mi > 59 || *sec > 60) return std::nullopt;
  double frac = 0.0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    double scale = 0.1;
    const size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      frac += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  // Optional zone: Z or +HH:MM / -HH:MM (Azure's 2024 traces carry +00:00).
  int64_t offset_s = 0;
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    const auto oh = digits(s, pos, 2);
    if (!oh || !expect(s, pos, ':')) return std::nullopt;
    const auto om = digits(s, pos, 2);
    if (!om) return std::nullopt;
    offset_s = sign * (int64_t{*oh} * 3600 + int64_t{*om} * 60);
  }
  if (pos != s.size()) return std::nullopt;

  using namespace std::chrono;
  const year_month_day ymd{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
  if (!ymd.ok()) return std::nullopt;
  const int64_t days = sys_days{ymd}.time_since_epoch().count();
  const int64_t whole = days * 86400 + int64_t{*h} * 3600 + int64_t{*mi} * 60 + *sec - offset_s;
  return static_cast<double>(whole) + frac;
}

std::vector<Request> parse_azure_csv(std::string_view text, const std::string& source, const TraceReadOptions& opts) {
  const std::vector<Line> lines = non_blank_lines(text);
  HCWARM_CHECK_ARG(!lines.empty(), "{}: empty trace (expected a header TIMESTAMP,ContextTokens,GeneratedTokens)",
                   source);

  // Columns by name, so extra columns and other orders are fine.
  const std::vector<std::string> header = split_csv(lines[0].text);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(lower(header[i]), i);
  std::vector<std::string> missing;
  for (const char* name : {"timestamp", "contexttokens", "generatedtokens"}) {
    if (!col.count(name)) missing.emplace_back(name);
  }
  HCWARM_CHECK_ARG(missing.empty(),
                   "{}: line {}: header '{}' lacks column(s) {} (expected TIMESTAMP,ContextTokens,GeneratedTokens)",
                   source, lines[0].number, excerpt(lines[0].text), fmt::join(missing, ", "));
  const size_t c_ts = col["timestamp"], c_ctx = col["contexttokens"], c_gen = col["generatedtokens"];

  LineErrors errors(source, opts.max_errors);
  std::vector<Request> reqs;
  std::optional<bool> datetimes;  // decided by the first good row; every row must agree
  for (size_t i = 1; i < lines.size(); ++i) {
    const Line& line = lines[i];
    const std::vector<std::string> f = split_csv(line.text);
    if (f.size() != header.size()) {
      errors.add(line.number, fmt::format("expected {} fields, got {}", header.size(), f.size()));
      continue;
    }
    std::vector<std::string> bad;
    std::optional<double> ts;
    bool is_datetime = false;
    if (auto dt = parse_datetime_seconds(f[c_ts])) {
      ts = dt;
      is_datetime = true;
    } else if (auto num = parse_double(f[c_ts])) {
      ts = num;
    } else {
      bad.push_back(
          fmt::format("TIMESTAMP '{}' is neither a datetime (YYYY-MM-DD HH:MM:SS.f) nor seconds", excerpt(f[c_ts])));
    }
    if (ts && datetimes && *datetimes != is_datetime) {
      bad.push_back(fmt::format("TIMESTAMP '{}' is {} but earlier rows are {}", excerpt(f[c_ts]),
                                is_datetime ? "a datetime" : "plain seconds",
                                *datetimes ? "datetimes" : "plain seconds"));
    }
    const auto ctx = parse_int(f[c_ctx]);
    if (!ctx || *ctx < 1 || *ctx > limits::kMaxRequestTokens) {
      bad.push_back(fmt::format("ContextTokens '{}' is not an integer in [1, {}]", excerpt(f[c_ctx]),
                                limits::kMaxRequestTokens));
    }
    const auto gen = parse_int(f[c_gen]);
    if (!gen || *gen < 0 || *gen > limits::kMaxRequestTokens) {
      bad.push_back(
          fmt::format("GeneratedTokens '{}' is not an integer in [0, {}]", excerpt(f[c_gen]), limits::kMaxRequestTokens));
    }
    if (!bad.empty()) {
      errors.add(line.number, fmt::format("{}", fmt::join(bad, "; ")));
      continue;
    }
    if (!datetimes) datetimes = is_datetime;
    reqs.push_back({static_cast<int64_t>(reqs.size()), *ts, *ctx, *gen});
  }
  check_requests(errors, "Azure trace CSV", reqs, source, "no requests after the header");

  double t0 = reqs[0].arrival_s, t1 = t0;
  for (const auto& r : reqs) {
    t0 = std::min(t0, r.arrival_s);
    t1 = std::max(t1, r.arrival_s);
  }
  // Every TIMESTAMP is finite, but the distance between two far apart need not be.
  HCWARM_CHECK_ARG(std::isfinite(t1 - t0), "{}: TIMESTAMPs from {} to {} seconds span too wide a range", source, t0,
                   t1);
  for (auto& r : reqs) r.arrival_s -= t0;
  sort_and_truncate(reqs, opts);
  return reqs;
}

}  // namespace hcwarm::sim
