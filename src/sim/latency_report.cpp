#include "sim/latency_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "sim/svg_chart.hpp"

namespace hcwarm::sim {
namespace {

double median_sorted(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n == 0) return 0.0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median of sorted v without one element equal to `value` (which v holds):
// rank arithmetic over the gap, so a big bucket costs O(log n) per forward.
std::optional<double> median_without(const std::vector<double>& v, double value) {
  const size_t m = v.size() - 1;
  if (m == 0) return std::nullopt;
  const size_t gap = static_cast<size_t>(std::lower_bound(v.begin(), v.end(), value) - v.begin());
  auto at = [&](size_t rank) { return v[rank < gap ? rank : rank + 1]; };
  return m % 2 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
}

}  // namespace

std::string SlowForward::describe() const {
  std::string ref = reference_splits == num_splits
                        ? fmt::format("the median {:.3f} ms of its bucket", reference_ms)
                        : fmt::format("the median {:.3f} ms of the nearest bucket ({} splits)", reference_ms,
                                      reference_splits);
  std::string waited = compile_wait_s > 0 ? fmt::format(", {:.3f} s waiting for compiles", compile_wait_s) : "";
  return fmt::format("forward {}: {} tokens, {} splits, {:.1f} ms ({:.0f}x {}), {} compile{}{}", index, num_tokens,
                     num_splits, ms, reference_ms > 0 ? ms / reference_ms : 0.0, ref, compiles_during,
                     compiles_during == 1 ? "" : "s", waited);
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double h = (static_cast<double>(values.size()) - 1) * std::clamp(q, 0.0, 1.0);
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

namespace {

LatencyTail tail_of(const std::vector<double>& ms) {
  if (ms.empty()) return {};
  return {static_cast<int64_t>(ms.size()), percentile(ms, 0.50), percentile(ms, 0.99),
          *std::max_element(ms.begin(), ms.end())};
}

nlohmann::json tail_json(const LatencyTail& t) {
  return {{"requests", t.count}, {"p50", t.p50_ms}, {"p99", t.p99_ms}, {"max", t.max_ms}};
}

}  // namespace

RequestLatency summarize_requests(const std::vector<RequestTiming>& requests) {
  std::vector<double> ttft;
  std::vector<double> tpot;
  for (const auto& r : requests) {
    if (r.first_token_s < 0) continue;
    ttft.push_back((r.first_token_s - r.arrival_s) * 1e3);
    if (r.finish_s >= 0 && r.output_tokens >= 2) {
      tpot.push_back((r.finish_s - r.first_token_s) * 1e3 / static_cast<double>(r.output_tokens - 1));
    }
  }
  return {static_cast<int64_t>(requests.size()), tail_of(ttft), tail_of(tpot)};
}

LatencySummary summarize(const std::vector<ForwardRecord>& records, double slow_factor) {
  HCWARM_CHECK_ARG(slow_factor > 0, "slow-forward factor must be > 0, got {}", slow_factor);
  LatencySummary s;
  s.forwards = static_cast<int64_t>(records.size());
  if (records.empty()) return s;

  std::vector<double> ms;
  ms.reserve(records.size());
  std::map<int, std::vector<double>> by_bucket;
  std::map<int, std::vector<double>> tokens_by_bucket;
  for (const auto& r : records) {
    ms.push_back(r.seconds * 1e3);
    by_bucket[r.num_splits].push_back(r.seconds * 1e3);
    tokens_by_bucket[r.num_splits].push_back(static_cast<double>(r.num_tokens));
    s.total_s += r.seconds;
    s.compiles_during_forwards += r.compiles_during;
    s.forwards_with_compiles += r.compiles_during > 0;
    s.forwards_waited_for_compile += r.waited_for_compile > 0;
    s.compile_wait_s += r.compile_wait_s;
    s.served_by_generic += r.served_by_generic;
  }
  for (auto& [splits, v] : by_bucket) {
    std::sort(v.begin(), v.end());
    if (static_cast<int64_t>(v.size()) < kTailMinForwards) continue;
    const BucketTail t{splits, static_cast<int64_t>(v.size()), percentile(v, 0.99), v.back()};
    if (s.worst_bucket_tail.forwards == 0 || t.max_over_p99() > s.worst_bucket_tail.max_over_p99()) {
      s.worst_bucket_tail = t;
    }
  }
  std::map<int, double> median_tokens;
  for (auto& [splits, v] : tokens_by_bucket) {
    std::sort(v.begin(), v.end());
    median_tokens[splits] = median_sorted(v);
  }
  std::sort(ms.begin(), ms.end());
  s.mean_ms = s.total_s * 1e3 / static_cast<double>(records.size());
  s.p50_ms = percentile(ms, 0.50);
  s.p99_ms = percentile(ms, 0.99);
  s.p999_ms = percentile(ms, 0.999);
  s.max_ms = ms.back();

  // For a forward alone in its bucket: the nearest other bucket, fewer splits on a tie.
  auto nearest_other = [&](int splits) -> std::optional<std::pair<int, double>> {
    std::optional<std::pair<int, double>> best;
    for (const auto& [k, v] : by_bucket) {
      if (k == splits) continue;
      if (!best || std::abs(k - splits) < std::abs(best->first - splits)) best = {{k, median_sorted(v)}};
    }
    return best;
  };

  for (const auto& r : records) {
    const double r_ms = r.seconds * 1e3;
    std::optional<double> ref = median_without(by_bucket[r.num_splits], r_ms);
    int ref_splits = r.num_splits;
    if (!ref) {
      const auto other = nearest_other(r.num_splits);
      if (!other) continue;
      ref_splits = other->first;
      ref = other->second;
    }
    // A forward with more tokens than its reference bucket's typical one is
    // held to a proportionally larger reference: work grows with tokens (on a
    // CPU always, on a GPU within the large buckets), a compile does not.
    const double typical_tokens = median_tokens[ref_splits];
    if (typical_tokens > 0 && static_cast<double>(r.num_tokens) > typical_tokens) {
      *ref *= static_cast<double>(r.num_tokens) / typical_tokens;
    }
    if (*ref > 0 && r_ms > slow_factor * *ref && r_ms - *ref > kMinSlowMs) {
      s.slow_forwards.push_back(
          {r.index, r.num_tokens, r.num_splits, r_ms, *ref, ref_splits, r.compiles_during, r.compile_wait_s});
    }
  }
  std::sort(s.slow_forwards.begin(), s.slow_forwards.end(),
            [](const SlowForward& a, const SlowForward& b) { return a.index < b.index; });
  return s;
}

nlohmann::json to_json(const LatencySummary& s) {
  nlohmann::json slow = nlohmann::json::array();
  for (const auto& st : s.slow_forwards) {
    slow.push_back({{"index", st.index},
                    {"num_tokens", st.num_tokens},
                    {"num_splits", st.num_splits},
                    {"ms", st.ms},
                    {"reference_ms", st.reference_ms},
                    {"reference_splits", st.reference_splits},
                    {"compiles", st.compiles_during},
                    {"compile_wait_s", st.compile_wait_s},
                    {"description", st.describe()}});
  }
  return {{"forwards", s.forwards},
          {"compiles_after_ready", s.compiles_during_forwards},
          {"forwards_with_compiles", s.forwards_with_compiles},
          {"waited_for_compile", s.forwards_waited_for_compile},
          {"compile_wait_s", s.compile_wait_s},
          {"served_by_generic", s.served_by_generic},
          {"total_s", s.total_s},
          {"mean_ms", s.mean_ms},
          {"p50_ms", s.p50_ms},
          {"p99_ms", s.p99_ms},
          {"p999_ms", s.p999_ms},
          {"max_ms", s.max_ms},
          {"slow_forwards", s.slow_forwards.size()},
          {"slow_forward_details", slow},
          {"worst_bucket_tail", s.worst_bucket_tail.forwards == 0
                                    ? nlohmann::json()
                                    : nlohmann::json{{"num_splits", s.worst_bucket_tail.num_splits},
                                                     {"forwards", s.worst_bucket_tail.forwards},
                                                     {"p99_ms", s.worst_bucket_tail.p99_ms},
                                                     {"max_ms", s.worst_bucket_tail.max_ms},
                                                     {"max_over_p99", s.worst_bucket_tail.max_over_p99()}}}};
}

nlohmann::json report_json(const RunReport& run, bool include_records, double slow_factor) {
  nlohmann::json j = to_json(summarize(run.records, slow_factor));
  j["name"] = run.name;
  j["warmup_seconds"] = run.warmup_seconds;
  j["slow_factor"] = slow_factor;
  if (!run.requests.empty()) {
    const RequestLatency rl = summarize_requests(run.requests);
    j["ttft_ms"] = tail_json(rl.ttft);
    j["tpot_ms"] = tail_json(rl.tpot);
  }
  if (run.extra.is_object()) {
    for (const auto& [k, v] : run.extra.items()) j[k] = v;
  }
  if (include_records && !run.requests.empty()) {
    nlohmann::json cols = {{"id", nlohmann::json::array()},
                           {"arrival_s", nlohmann::json::array()},
                           {"first_token_s", nlohmann::json::array()},
                           {"finish_s", nlohmann::json::array()},
                           {"output_tokens", nlohmann::json::array()}};
    for (const auto& r : run.requests) {
      cols["id"].push_back(r.id);
      cols["arrival_s"].push_back(r.arrival_s);
      cols["first_token_s"].push_back(r.first_token_s);
      cols["finish_s"].push_back(r.finish_s);
      cols["output_tokens"].push_back(r.output_tokens);
    }
    j["request_records"] = std::move(cols);
  }
  if (include_records) {
    // Columns, not an array of objects: a third of the size for long runs.
    nlohmann::json cols = {{"index", nlohmann::json::array()},      {"time_s", nlohmann::json::array()},
                           {"num_tokens", nlohmann::json::array()}, {"num_splits", nlohmann::json::array()},
                           {"seconds", nlohmann::json::array()},    {"compiles", nlohmann::json::array()},
                           {"waited", nlohmann::json::array()},     {"wait_s", nlohmann::json::array()},
                           {"generic", nlohmann::json::array()}};
    for (const auto& r : run.records) {
      cols["index"].push_back(r.index);
      cols["time_s"].push_back(r.time_s);
      cols["num_tokens"].push_back(r.num_tokens);
      cols["num_splits"].push_back(r.num_splits);
      cols["seconds"].push_back(r.seconds);
      cols["compiles"].push_back(r.compiles_during);
      cols["waited"].push_back(r.waited_for_compile);
      cols["wait_s"].push_back(r.compile_wait_s);
      cols["generic"].push_back(r.served_by_generic);
    }
    j["records"] = std::move(cols);
  }
  return j;
}

RunReport run_report_from_json(const nlohmann::json& j, const std::string& source) {
  HCWARM_CHECK_ARG(j.is_object() && j.contains("name") && j.contains("records") && j["records"].is_object(),
                   "{}: not a replay report with records (write it with --report FILE.json)", source);
  RunReport run;
  run.name = j["name"].get<std::string>();
  run.warmup_seconds = j.value("warmup_seconds", 0.0);
  const auto& c = j["records"];
  const size_t n = c.at("index").size();
  for (const char* col : {"time_s", "num_tokens", "num_splits", "seconds", "compiles"}) {
    HCWARM_CHECK_ARG(c.contains(col) && c[col].size() == n, "{}: records column {} is missing or short", source, col);
  }
  // Reports from before the wait columns existed read as forwards that never waited.
  const bool waits = c.contains("waited");
  for (const char* col : {"waited", "wait_s", "generic"}) {
    HCWARM_CHECK_ARG(!waits || (c.contains(col) && c[col].size() == n), "{}: records column {} is missing or short",
                     source, col);
  }
  run.records.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    ForwardRecord r{c["index"][i].get<int64_t>(), c["time_s"][i].get<double>(), c["num_tokens"][i].get<int64_t>(),
                    c["num_splits"][i].get<int>(), c["seconds"][i].get<double>(), c["compiles"][i].get<int64_t>()};
    if (waits) {
      r.waited_for_compile = c["waited"][i].get<int64_t>();
      r.compile_wait_s = c["wait_s"][i].get<double>();
      r.served_by_generic = c["generic"][i].get<int64_t>();
    }
    run.records.push_back(r);
  }
  if (j.contains("request_records")) {
    const auto& q = j["request_records"];
    HCWARM_CHECK_ARG(q.is_object() && q.contains("id") && q["id"].is_array(),
                     "{}: request_records is not a set of columns", source);
    const size_t m = q["id"].size();
    for (const char* col : {"arrival_s", "first_token_s", "finish_s", "output_tokens"}) {
      HCWARM_CHECK_ARG(q.contains(col) && q[col].is_array() && q[col].size() == m,
                       "{}: request_records column {} is missing or short", source, col);
    }
    run.requests.reserve(m);
    for (size_t i = 0; i < m; ++i) {
      run.requests.push_back({q["id"][i].get<int64_t>(), q["arrival_s"][i].get<double>(),
                              q["output_tokens"][i].get<int64_t>(), q["first_token_s"][i].get<double>(),
                              q["finish_s"][i].get<double>()});
    }
  }
  static const char* kDerived[] = {"name", "warmup_seconds", "records", "forwards", "compiles_after_ready",
                                   "forwards_with_compiles", "waited_for_compile", "compile_wait_s",
                                   "served_by_generic", "total_s", "mean_ms", "p50_ms", "p99_ms", "p999_ms",
                                   "max_ms", "slow_forwards", "slow_forward_details", "slow_factor",
                                   "worst_bucket_tail", "ttft_ms", "tpot_ms", "request_records",
                                   // the names of schema 1, derived too
                                   "num_stalls", "stalls", "stall_factor", "schema_version"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(std::begin(kDerived), std::end(kDerived), k) == std::end(kDerived)) run.extra[k] = v;
  }
  return run;
}

std::string render_report_svg(const std::vector<RunReport>& runs, const std::string& title, double slow_factor) {
  svg::LineChart lines;
  lines.title = title + ": forward latency over time";
  // From each run's process start: its start-up (construction and warmup, the
  // band at the bottom) first, then serving on the simulated clock.
  lines.x_label = "seconds from start-up (bands: start-up and warmup), then simulated serving time";
  lines.y_label = "forward latency (ms)";
  lines.mark_legend = "waited for a compile";
  svg::BarChart bars;
  bars.title = "start-up warmup";
  bars.y_label = "warmup (s)";
  for (const auto& run : runs) {
    const LatencySummary s = summarize(run.records, slow_factor);
    svg::LineSeries series;
    series.name = fmt::format("{}: p99 {:.3g} ms, max {:.3g} ms, {} waited for a compile ({:.3g} s), {} slow", run.name,
                              s.p99_ms, s.max_ms, s.forwards_waited_for_compile, s.compile_wait_s,
                              s.slow_forwards.size());
    series.points.reserve(run.records.size());
    // start-up: what the run measured from construction through warmup, else its warmup alone.
    const double startup = run.extra.contains("startup_seconds") && run.extra["startup_seconds"].is_number()
                               ? run.extra["startup_seconds"].get<double>()
                               : run.warmup_seconds;
    series.span_lo = 0.0;
    series.span_hi = std::max(startup, 0.0);
    series.span_tooltip = fmt::format("{}: start-up {:.3g} s (warmup {:.3g} s)", run.name, startup, run.warmup_seconds);
    for (const auto& r : run.records) {
      series.points.push_back({startup + r.time_s, r.seconds * 1e3});
      if (r.waited_for_compile > 0) {
        series.marks.push_back({{startup + r.time_s, r.seconds * 1e3},
                                fmt::format("forward {}: {} tokens, {} splits, {:.1f} ms; {} call{} waited {:.3f} s "
                                            "for compiles",
                                            r.index, r.num_tokens, r.num_splits, r.seconds * 1e3, r.waited_for_compile,
                                            r.waited_for_compile == 1 ? "" : "s", r.compile_wait_s)});
      }
    }
    lines.series.push_back(std::move(series));
    bars.bars.push_back({run.name, run.warmup_seconds, fmt::format("{:.3g} s", run.warmup_seconds)});
  }
  const double gap = 10;
  const double top = svg::panel_height(lines) + gap;
  return svg::document(lines.width, top + bars.height,
                       {svg::line_chart_panel(lines, 0, 0), svg::bar_chart_panel(bars, 0, top)});
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  write_output_file(p, text);
}

}  // namespace hcwarm::sim
