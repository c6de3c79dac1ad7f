#pragma once
// Per-forward latency records of a replay, their summary (percentiles, forwards
// that waited for a compile, slow forwards), JSON, and the SVG report that puts
// several configurations side by side.
//
// Two different measures: a forward "waited for a compile" when the JIT
// runtime's own counters say a call inside it blocked on a compile (exact); a
// "slow forward" is a timing heuristic (slower than 10x its bucket's median),
// which scheduling noise can trip without any compile.
//
// Requests have their own measures, the ones a serving SLO names: time to
// first token (arrival to the end of the forward that finished its prefill,
// queueing included) and time per output token (first token to last, over the
// tokens after the first). A compile wait raises both for every request in
// flight; a large prefill forward, spread over a request's decode, barely.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scheduler.hpp"

namespace hcwarm::sim {

struct ForwardRecord {
  int64_t index = 0;            // forward number
  double time_s = 0.0;          // simulated clock at its start
  int64_t num_tokens = 0;
  int num_splits = 0;           // the mHC split bucket of num_tokens
  double seconds = 0.0;         // measured duration
  int64_t compiles_during = 0;  // JIT compiles after ready in this forward's calls' own path (compiles_after_ready)
  int64_t waited_for_compile = 0;  // calls inside it that blocked on a compile (own, another thread's or process's)
  double compile_wait_s = 0.0;     // their total wait
  int64_t served_by_generic = 0;   // calls served by a generic kernel while their specialization was pending
};

// A forward slower than slow_factor x the median of its split bucket (a timing heuristic).
struct SlowForward {
  int64_t index = 0;
  int64_t num_tokens = 0;
  int num_splits = 0;
  double ms = 0.0;
  double reference_ms = 0.0;    // the median it was compared with
  int reference_splits = 0;     // the bucket that median came from (see summarize)
  int64_t compiles_during = 0;
  double compile_wait_s = 0.0;
  // "forward 12: 130 tokens, 44 splits, 2710.3 ms (31x the median 0.900 ms of its bucket), 1 compile, 2.701 s waiting for compiles"
  std::string describe() const;
};

// The tail of one split bucket: forwards of similar work, so that a max well
// above its p99 is an outlier (a wait) rather than a larger batch.
struct BucketTail {
  int num_splits = 0;
  int64_t forwards = 0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
  double max_over_p99() const { return p99_ms > 0 ? max_ms / p99_ms : 0.0; }
};
// Buckets with fewer forwards have no meaningful p99 and are left out.
inline constexpr int64_t kTailMinForwards = 100;

struct LatencySummary {
  int64_t forwards = 0;
  double total_s = 0.0;
  double mean_ms = 0.0;
  double p50_ms = 0.0;
  double p99_ms = 0.0;
  double p999_ms = 0.0;
  double max_ms = 0.0;
  int64_t compiles_during_forwards = 0;  // sum over records: foreground compiles after ready
  int64_t forwards_with_compiles = 0;
  int64_t forwards_waited_for_compile = 0;  // forwards in which some call waited for a compile
  double compile_wait_s = 0.0;              // the total of those waits
  int64_t served_by_generic = 0;            // calls served generically while their specialization was pending
  std::vector<SlowForward> slow_forwards;   // by forward index
  // Of the buckets with at least kTailMinForwards forwards, the one whose max is
  // furthest above its own p99 (forwards == 0: no such bucket).
  BucketTail worst_bucket_tail;
};

// p50 / p99 / max of one request measure, in milliseconds, over `count` requests.
struct LatencyTail {
  int64_t count = 0;
  double p50_ms = 0.0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
  double max_over_p99() const { return p99_ms > 0 ? max_ms / p99_ms : 0.0; }
};

struct RequestLatency {
  int64_t requests = 0;
  LatencyTail ttft;  // requests with a first token
  LatencyTail tpot;  // finished requests of at least 2 output tokens
};

// Requests the run stopped before their first token (or their last) are left
// out of the measure they lack.
RequestLatency summarize_requests(const std::vector<RequestTiming>& requests);

// q in [0, 1]; linear interpolation between closest ranks (numpy's default). 0 for no values.
double percentile(std::vector<double> values, double q);

// Slow forwards: each forward is compared with the median of the *other* forwards of
// its split bucket, so a bucket's one slow first forward cannot hide itself by
// raising its own median. A forward alone in its bucket is compared with the
// nearest bucket by split count that has forwards (fewer splits first, i.e. the
// larger, slower token counts: the cautious choice); with no other forward at
// all it is never slow. A forward with more tokens than the median forward
// of its reference bucket is compared with that median scaled by the ratio of
// token counts (never scaled down): cost grows with tokens, a compile does not.
// A forward is slow only if it is also more than kMinSlowMs over that reference:
// a 0.3 ms forward that takes 3 ms lost a scheduler time slice (a pool thread
// preempted by another process on a 2-core machine), not a compile, which
// costs at least a hundred milliseconds.
inline constexpr double kMinSlowMs = 1.0;
LatencySummary summarize(const std::vector<ForwardRecord>& records, double slow_factor = 10.0);

// One configuration's replay, as reports and charts show it.
struct RunReport {
  std::string name;                  // e.g. "no prewarm, empty cache"
  double warmup_seconds = 0.0;       // start-up warmup before serving
  std::vector<ForwardRecord> records;
  std::vector<RequestTiming> requests;  // in the order of the trace
  nlohmann::json extra = nlohmann::json::object();  // caller's fields (keys compiled, cache hits, ...)
};

// {"name", "warmup_seconds", "forwards", "compiles_after_ready" (foreground, summed over forwards), "forwards_with_compiles",
//  "waited_for_compile" (forwards), "compile_wait_s", "served_by_generic" (calls),
//  "p50_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms", "total_s", "slow_factor", "slow_forwards" (count),
//  "slow_forward_details": [{"index","num_tokens","num_splits","ms","reference_ms","reference_splits","compiles",
//  "compile_wait_s","description"}...], "ttft_ms" and "tpot_ms" ({"requests","p50","p99","max"}, present
//  when the run has requests), extra's fields merged in, and "records" and "request_records" (arrays by
//  column) when include_records}.
nlohmann::json to_json(const LatencySummary& s);
nlohmann::json report_json(const RunReport& run, bool include_records = false, double slow_factor = 10.0);

// The inverse of report_json(run, /*include_records=*/true): name, warmup
// seconds, the per-forward and per-request records (reports without the latter
// read as a run without requests), and every other field as `extra`.
// ErrorKind::InvalidArgument naming `source` when the records are missing or malformed.
RunReport run_report_from_json(const nlohmann::json& j, const std::string& source);

// The chart of a replay report: latency over time (log y) with the forwards that
// waited for a compile marked, one series per run, above a bar chart of each
// run's warmup seconds.
std::string render_report_svg(const std::vector<RunReport>& runs, const std::string& title,
                              double slow_factor = 10.0);

// Writes text to a file (parent directories created); ErrorKind::Io on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace hcwarm::sim
