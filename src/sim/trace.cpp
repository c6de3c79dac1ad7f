// Trace readers (Azure CSV, JSONL), format detection and load_trace.
#include "sim/trace.hpp"

#include "core/limits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"

namespace hcwarm::sim {
namespace {

// Collects per-line problems so one error can report many of them.
class LineErrors {
 public:
  LineErrors(std::string source, size_t max_listed) : source_(std::move(source)), max_(max_listed) {}
  void add(size_t line, const std::string& what) {
    if (listed_.size() < max_) listed_.push_back(fmt::format("  line {}: {}", line, what));
    ++total_;
  }
  bool any() const { return total_ > 0; }
  void throw_if_any(std::string_view kind) const {
    if (total_ == 0) return;
    std::string msg = fmt::format("{}: {} malformed line{} in {}:", source_, total_, total_ == 1 ? "" : "s", kind);
    for (const auto& l : listed_) msg += "\n" + l;
    if (total_ > listed_.size()) msg += fmt::format("\n  ... and {} more", total_ - listed_.size());
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}", msg);
  }

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

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on '\n' (dropping '\r'), skipping blank lines but keeping their numbers.
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

std::string unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(trim(s));
}

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

void sort_and_truncate(std::vector<Request>& reqs, const TraceReadOptions& opts) {
  std::stable_sort(reqs.begin(), reqs.end(), [](const Request& a, const Request& b) {
    return a.arrival_s < b.arrival_s;
  });
  if (opts.max_requests && *opts.max_requests >= 0 && static_cast<size_t>(*opts.max_requests) < reqs.size()) {
    reqs.resize(static_cast<size_t>(*opts.max_requests));
  }
}

}  // namespace

namespace {
constexpr EnumName<TraceFormat> kFormatNames[] = {
    {TraceFormat::Auto, "auto"}, {TraceFormat::AzureCsv, "azure-csv"}, {TraceFormat::Jsonl, "jsonl"}};
}  // namespace

const char* to_string(TraceFormat f) { return enum_name(kFormatNames, f); }

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
  errors.throw_if_any("Azure trace CSV");
  HCWARM_CHECK_ARG(reqs.size() <= static_cast<size_t>(limits::kMaxRequests), "{}: {} requests, above the limit {}",
                   source, reqs.size(), limits::kMaxRequests);
  HCWARM_CHECK_ARG(!reqs.empty(), "{}: no requests after the header", source);

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
  errors.throw_if_any("JSONL trace");
  HCWARM_CHECK_ARG(reqs.size() <= static_cast<size_t>(limits::kMaxRequests), "{}: {} requests, above the limit {}",
                   source, reqs.size(), limits::kMaxRequests);
  HCWARM_CHECK_ARG(!reqs.empty(), "{}: no requests in the JSONL trace", source);
  sort_and_truncate(reqs, opts);
  return reqs;
}

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
