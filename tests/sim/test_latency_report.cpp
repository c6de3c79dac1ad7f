#include "sim/latency_report.hpp"

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/error.hpp"

namespace hcwarm::sim {
namespace {

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

// n forwards of `ms` in bucket `splits`, appended with consecutive indices; a
// forward with compiles waited for them (most of its time).
void add(std::vector<ForwardRecord>& r, int n, int splits, int64_t tokens, double ms, int64_t compiles = 0) {
  for (int i = 0; i < n; ++i) {
    const int64_t idx = static_cast<int64_t>(r.size());
    ForwardRecord f{idx, 0.01 * static_cast<double>(idx), tokens, splits, ms / 1e3, compiles};
    f.waited_for_compile = compiles;
    f.compile_wait_s = compiles > 0 ? 0.9 * ms / 1e3 : 0.0;
    r.push_back(f);
  }
}

TEST(LatencyReportTest, Percentiles) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 50.5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 99.01);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 100);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.999), 7);
}

TEST(LatencyReportTest, WorstBucketTailComparesAForwardWithItsOwnBucket) {
  std::vector<ForwardRecord> r;
  add(r, 300, 64, 8, 1.0);   // decode: a bucket of 300
  add(r, 1, 64, 8, 3.0);     // one decode forward 3x the rest: an outlier in its bucket
  add(r, 150, 2, 4096, 40);  // prefill: slower, but as its own bucket expects
  add(r, 20, 1, 8192, 90);   // too few forwards for a p99: left out
  LatencySummary s = summarize(r);
  EXPECT_EQ(s.worst_bucket_tail.num_splits, 64);
  EXPECT_EQ(s.worst_bucket_tail.forwards, 301);
  EXPECT_DOUBLE_EQ(s.worst_bucket_tail.max_ms, 3.0);
  EXPECT_NEAR(s.worst_bucket_tail.max_over_p99(), 3.0, 1e-9);  // p99 of the bucket is 1 ms
  EXPECT_DOUBLE_EQ(s.max_ms, 90.0);                           // the overall max is the largest prefill
  EXPECT_EQ(to_json(s)["worst_bucket_tail"]["num_splits"], 64);

  std::vector<ForwardRecord> few;
  add(few, 50, 64, 8, 1.0);
  EXPECT_EQ(summarize(few).worst_bucket_tail.forwards, 0);
  EXPECT_TRUE(to_json(summarize(few))["worst_bucket_tail"].is_null());
}

TEST(LatencyReportTest, FindsSlowForwardsPerBucket) {
  std::vector<ForwardRecord> r;
  add(r, 1, 44, 150, 2500.0, 1);  // 0: first forward of bucket 44 compiles
  add(r, 5, 44, 150, 1.0);        // 1-5
  add(r, 1, 1, 8000, 40.0);       // 6: slow but normal for 8000 tokens (alone in its bucket)
  add(r, 3, 2, 4000, 20.0);       // 7-9
  add(r, 1, 64, 1, 500.0, 1);     // 10: bucket 64 has two forwards: a compile and a normal one
  add(r, 1, 64, 1, 0.5);          // 11
  add(r, 1, 66, 1, 0.6);          // 12: alone; compared with bucket 64 (nearest)
  const LatencySummary s = summarize(r);
  ASSERT_EQ(s.slow_forwards.size(), 2u);
  EXPECT_EQ(s.slow_forwards[0].index, 0);
  EXPECT_EQ(s.slow_forwards[0].num_splits, 44);
  EXPECT_EQ(s.slow_forwards[0].num_tokens, 150);
  EXPECT_DOUBLE_EQ(s.slow_forwards[0].ms, 2500.0);
  EXPECT_DOUBLE_EQ(s.slow_forwards[0].reference_ms, 1.0);
  EXPECT_EQ(s.slow_forwards[0].compiles_during, 1);
  EXPECT_EQ(s.slow_forwards[1].index, 10);
  EXPECT_DOUBLE_EQ(s.slow_forwards[1].reference_ms, 0.5);
  EXPECT_EQ(s.compiles_during_forwards, 2);
  EXPECT_EQ(s.forwards_with_compiles, 2);
  EXPECT_EQ(s.forwards, 13);
  EXPECT_DOUBLE_EQ(s.max_ms, 2500.0);
  const std::string d = s.slow_forwards[0].describe();
  EXPECT_NE(d.find("forward 0: 150 tokens, 44 splits, 2500.0 ms"), std::string::npos) << d;
  EXPECT_NE(d.find("1 compile, 2.250 s waiting for compiles"), std::string::npos) << d;
  EXPECT_EQ(s.forwards_waited_for_compile, 2);
  EXPECT_DOUBLE_EQ(s.compile_wait_s, 0.9 * 2.5 + 0.9 * 0.5);
}

// The exact counters and the heuristic are independent: a forward can wait for a
// compile without being 10x its bucket (a large forward), and be 10x without a compile.
TEST(LatencyReportTest, WaitsComeFromTheRecordsNotFromTiming) {
  std::vector<ForwardRecord> r;
  add(r, 5, 8, 1000, 400.0);
  add(r, 1, 8, 1000, 700.0, 1);  // waited 0.63 s, not 10x: counted, not slow
  add(r, 5, 64, 2, 1.0);
  add(r, 1, 64, 2, 30.0);        // 30x, no compile: slow, not counted
  r[3].served_by_generic = 4;
  r[7].served_by_generic = 2;
  const LatencySummary s = summarize(r);
  EXPECT_EQ(s.forwards_waited_for_compile, 1);
  EXPECT_DOUBLE_EQ(s.compile_wait_s, 0.63);
  EXPECT_EQ(s.served_by_generic, 6);
  ASSERT_EQ(s.slow_forwards.size(), 1u);
  EXPECT_EQ(s.slow_forwards[0].index, 11);
  EXPECT_EQ(s.slow_forwards[0].compiles_during, 0);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["waited_for_compile"], 1);
  EXPECT_DOUBLE_EQ(j["compile_wait_s"].get<double>(), 0.63);
  EXPECT_EQ(j["served_by_generic"], 6);
  EXPECT_EQ(j["slow_forwards"], 1);
}

// The pattern of a prewarmed CPU replay on a busy 2-core machine: sub-millisecond
// decode forwards, a few of which lose a scheduler time slice (10x their median,
// under a millisecond over it). Not slow forwards; a forward that waits for a
// host compile (hundreds of ms) still is one.
TEST(LatencyReportTest, SubMillisecondHiccupsAreNotSlowForwards) {
  std::vector<ForwardRecord> r;
  add(r, 200, 64, 4, 0.08);
  add(r, 3, 64, 4, 0.95);   // 200-202: 12x the median, 0.87 ms over it: noise
  add(r, 1, 64, 4, 1.2);    // 203: 15x and 1.12 ms over: slow
  add(r, 1, 64, 4, 300.0);  // 204: a compile's worth
  const LatencySummary s = summarize(r);
  ASSERT_EQ(s.slow_forwards.size(), 2u);
  EXPECT_EQ(s.slow_forwards[0].index, 203);
  EXPECT_EQ(s.slow_forwards[1].index, 204);
  EXPECT_GT(kMinSlowMs, 0.87);
}

TEST(LatencyReportTest, ReferenceScalesUpWithTokensButNeverDown) {
  std::vector<ForwardRecord> r;
  add(r, 9, 64, 2, 1.0);     // 0-8: the bucket's typical forward: 2 tokens, 1 ms
  add(r, 1, 64, 100, 40.0);  // 9: 50x the tokens, 40x the time: work, not a stall
  add(r, 1, 64, 1, 11.0);    // 10: fewer tokens than typical, 11x: a stall (no scaling down)
  add(r, 1, 64, 100, 600.0); // 11: 50x the tokens but 600x the time: a stall
  const LatencySummary s = summarize(r);
  ASSERT_EQ(s.slow_forwards.size(), 2u);
  EXPECT_EQ(s.slow_forwards[0].index, 10);
  EXPECT_DOUBLE_EQ(s.slow_forwards[0].reference_ms, 1.0);
  EXPECT_EQ(s.slow_forwards[1].index, 11);
  EXPECT_DOUBLE_EQ(s.slow_forwards[1].reference_ms, 50.0);
}

TEST(LatencyReportTest, LoneForwardUsesNearestBucketWithFewerSplitsOnTie) {
  std::vector<ForwardRecord> r;
  add(r, 3, 4, 2000, 10.0);
  add(r, 3, 8, 1000, 0.1);
  add(r, 1, 6, 1500, 50.0);  // equally near 4 and 8: compared with 4 (10 ms), so not a stall
  EXPECT_TRUE(summarize(r).slow_forwards.empty());
  add(r, 1, 9, 900, 50.0);  // nearest is 8 (0.1 ms): a stall
  const auto s = summarize(r);
  ASSERT_EQ(s.slow_forwards.size(), 1u);
  EXPECT_EQ(s.slow_forwards[0].reference_splits, 8);
  EXPECT_NE(s.slow_forwards[0].describe().find("nearest bucket (8 splits)"), std::string::npos);
}

TEST(LatencyReportTest, NoSlowForwardsWithoutAReference) {
  std::vector<ForwardRecord> r;
  add(r, 1, 3, 10, 1000.0, 1);
  EXPECT_TRUE(summarize(r).slow_forwards.empty());
  EXPECT_EQ(summarize({}).forwards, 0);
  EXPECT_THROW(summarize(r, 0.0), Error);
}

TEST(LatencyReportTest, Json) {
  RunReport run;
  run.name = "no prewarm";
  run.warmup_seconds = 0.0;
  add(run.records, 1, 44, 150, 2500.0, 1);
  add(run.records, 9, 44, 150, 1.0);
  run.extra = {{"keys_compiled", 22}};
  const nlohmann::json j = report_json(run, true);
  for (const char* key : {"name", "forwards", "compiles_after_ready", "waited_for_compile", "compile_wait_s",
                          "served_by_generic", "slow_forwards", "slow_forward_details", "slow_factor",
                          "warmup_seconds", "p50_ms", "p99_ms", "p999_ms", "max_ms", "keys_compiled", "records"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["forwards"], 10);
  EXPECT_EQ(j["compiles_after_ready"], 1);
  EXPECT_FALSE(j.contains("stalls") || j.contains("num_stalls"));
  EXPECT_EQ(j["waited_for_compile"], 1);
  EXPECT_EQ(j["slow_forwards"], 1);
  EXPECT_EQ(j["slow_forward_details"][0]["index"], 0);
  EXPECT_EQ(j["keys_compiled"], 22);
  EXPECT_EQ(j["records"]["num_tokens"].size(), 10u);
  EXPECT_DOUBLE_EQ(j["p50_ms"].get<double>(), 1.0);
  EXPECT_FALSE(report_json(run).contains("records"));
}

// TTFT is arrival to first token; TPOT spreads first-to-last over the tokens after the first.
TEST(LatencyReportTest, RequestLatencyFromTimings) {
  std::vector<RequestTiming> q;
  for (int i = 0; i < 99; ++i) q.push_back({i, 1.0, 11, 1.002, 1.012});  // TTFT 2 ms, TPOT 1 ms
  q.push_back({99, 2.0, 3, 2.5, 2.6});       // TTFT 500 ms, TPOT 50 ms
  q.push_back({100, 3.0, 1, 3.004, 3.004});  // one output token: a TTFT, no TPOT
  q.push_back({101, 4.0, 5, 4.001, -1.0});   // stopped before its last token
  q.push_back({102, 5.0, 5, -1.0, -1.0});    // stopped before its first
  const RequestLatency r = summarize_requests(q);
  EXPECT_EQ(r.requests, 103);
  EXPECT_EQ(r.ttft.count, 102);
  EXPECT_EQ(r.tpot.count, 100);
  EXPECT_NEAR(r.ttft.p50_ms, 2.0, 1e-9);
  EXPECT_NEAR(r.ttft.max_ms, 500.0, 1e-9);
  EXPECT_NEAR(r.tpot.p50_ms, 1.0, 1e-9);
  EXPECT_NEAR(r.tpot.max_ms, 50.0, 1e-9);
  // p99 of 99 values of 1 ms and one of 50: rank 98.01 interpolates 1% of the way to 50.
  EXPECT_NEAR(r.tpot.p99_ms, 1.0 + 0.01 * 49.0, 1e-9);
  EXPECT_NEAR(r.tpot.max_over_p99(), 50.0 / 1.49, 1e-9);
  const RequestLatency none = summarize_requests({});
  EXPECT_EQ(none.ttft.count, 0);
  EXPECT_DOUBLE_EQ(none.tpot.max_over_p99(), 0.0);
}

TEST(LatencyReportTest, JsonRoundTripKeepsForwardsAndRequests) {
  RunReport run;
  run.name = "tiered";
  run.warmup_seconds = 0.25;
  add(run.records, 1, 44, 150, 2500.0, 1);
  add(run.records, 4, 44, 150, 1.0);
  run.requests = {{3, 0.5, 4, 0.75, 0.90}, {8, 0.6, 1, 0.80, 0.80}};
  run.extra = {{"keys_compiled", 22}};
  const nlohmann::json j = report_json(run, true);
  ASSERT_TRUE(j.contains("ttft_ms") && j.contains("tpot_ms") && j.contains("request_records"));
  EXPECT_EQ(j["ttft_ms"]["requests"], 2);
  EXPECT_NEAR(j["ttft_ms"]["max"].get<double>(), 250.0, 1e-9);
  EXPECT_EQ(j["tpot_ms"]["requests"], 1);
  EXPECT_NEAR(j["tpot_ms"]["p50"].get<double>(), 50.0, 1e-9);
  EXPECT_FALSE(report_json(run).contains("request_records"));

  const RunReport back = run_report_from_json(j, "r.json");
  EXPECT_EQ(back.name, "tiered");
  EXPECT_DOUBLE_EQ(back.warmup_seconds, 0.25);
  ASSERT_EQ(back.records.size(), 5u);
  EXPECT_EQ(back.records[0].waited_for_compile, 1);
  ASSERT_EQ(back.requests.size(), 2u);
  EXPECT_EQ(back.requests[0].id, 3);
  EXPECT_EQ(back.requests[0].output_tokens, 4);
  EXPECT_DOUBLE_EQ(back.requests[0].first_token_s, 0.75);
  EXPECT_DOUBLE_EQ(back.requests[1].finish_s, 0.80);
  // Derived fields are recomputed, not carried as extra; the caller's fields are.
  EXPECT_FALSE(back.extra.contains("ttft_ms") || back.extra.contains("request_records"));
  EXPECT_EQ(back.extra["keys_compiled"], 22);

  // A run without requests writes none and reads back without them.
  RunReport bare = run;
  bare.requests.clear();
  const nlohmann::json jb = report_json(bare, true);
  EXPECT_FALSE(jb.contains("ttft_ms") || jb.contains("request_records"));
  EXPECT_TRUE(run_report_from_json(jb, "b.json").requests.empty());
}

TEST(LatencyReportTest, MalformedRequestRecordsAreRefusedByName) {
  RunReport run;
  run.name = "x";
  add(run.records, 2, 44, 150, 1.0);
  run.requests = {{0, 0.0, 2, 0.1, 0.2}, {1, 0.0, 2, 0.1, 0.2}};
  nlohmann::json j = report_json(run, true);
  auto refusal = [](const nlohmann::json& report, const std::string& source) -> std::string {
    try {
      run_report_from_json(report, source);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
      return e.message();
    }
    ADD_FAILURE() << "no error for " << source;
    return {};
  };
  j["request_records"]["finish_s"].erase(1);
  std::string msg = refusal(j, "short.json");
  EXPECT_NE(msg.find("short.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("finish_s"), std::string::npos) << msg;
  j["request_records"] = 7;
  msg = refusal(j, "bad.json");
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("request_records"), std::string::npos) << msg;
}

TEST(LatencyReportTest, SvgMarksCompileWaitsAndDrawsWarmupBars) {
  RunReport a, b;
  a.name = "no prewarm <cold>";
  add(a.records, 1, 44, 150, 2500.0, 1);
  add(a.records, 20, 44, 150, 1.0);
  add(a.records, 1, 8, 1000, 900.0, 1);
  add(a.records, 5, 8, 1000, 2.0);
  b.name = "prewarm";
  b.warmup_seconds = 2.5;
  add(b.records, 27, 44, 150, 1.0);
  const std::string svg = render_report_svg({a, b}, "test");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 2u + 1u);  // two forwards that waited + the legend's symbol
  EXPECT_NE(svg.find("no prewarm &lt;cold&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<cold>"), std::string::npos);
  EXPECT_NE(svg.find("2.5 s"), std::string::npos);
  EXPECT_NE(svg.find("2 waited for a compile"), std::string::npos);
  EXPECT_NE(svg.find("0 waited for a compile"), std::string::npos);
  EXPECT_NE(svg.find("log scale"), std::string::npos);
}

TEST(LatencyReportTest, LongRunsStayCompactAndKeepSpikes) {
  RunReport run;
  run.name = "long";
  add(run.records, 200000, 1, 1, 1.0);
  run.records[123456].seconds = 0.030;
  run.records[123456].compiles_during = 1;
  run.records[123456].waited_for_compile = 1;
  run.records[123456].compile_wait_s = 0.029;
  const std::string svg = render_report_svg({run}, "long");
  EXPECT_LT(svg.size(), 200000u);
  EXPECT_EQ(count(svg, "<circle"), 2u);
  EXPECT_NE(svg.find("forward 123456"), std::string::npos);
}

TEST(LatencyReportTest, WritesFiles) {
  test::TempDir dir;
  const std::string path = (dir / "a/b/report.svg").string();
  write_text_file(path, "<svg/>");
  EXPECT_EQ(test::read_file(path), "<svg/>");
  EXPECT_THROW(write_text_file((dir / "a/b/report.svg/x").string(), "x"), Error);
}

}  // namespace
}  // namespace hcwarm::sim

namespace hcwarm::sim {
namespace {

TEST(LatencyReportTest, WarmupAxisLabelsKeepTheirFractions) {
  RunReport run;
  run.name = "prewarm";
  run.warmup_seconds = 1.53;  // ticks every 0.5: the 1.5 one used to read "2"
  run.records.push_back({0, 0.0, 8, 64, 0.01, 0});
  const std::string svg = render_report_svg({run}, "t");
  EXPECT_NE(svg.find(">1.5</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.5</text>"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm::sim

namespace hcwarm::sim {
namespace {

// The time axis starts at each run's start-up: a band from 0 to its start-up
// seconds (construction and warmup), and its forwards after it; a run with a
// long warmup starts serving later on the chart, where a reader sees the cost.
TEST(LatencyReportTest, TimeAxisStartsAtStartUpWithABandPerRun) {
  RunReport cold, warm;
  cold.name = "cold";
  add(cold.records, 3, 8, 1000, 1.0);
  warm.name = "warm";
  warm.warmup_seconds = 20.0;
  warm.extra["startup_seconds"] = 22.5;
  add(warm.records, 3, 8, 1000, 1.0);
  const std::string svg = render_report_svg({cold, warm}, "axis");
  EXPECT_NE(svg.find("warm: start-up 22.5 s (warmup 20 s)"), std::string::npos) << svg.substr(0, 2000);
  EXPECT_EQ(svg.find("cold: start-up"), std::string::npos);  // no band, no tooltip
  EXPECT_EQ(count(svg, "fill-opacity=\"0.45\""), 1u);  // the cold run's empty start-up draws no band
  // Ticks reach past 22.5 s: the warm run's forwards were shifted by its start-up.
  EXPECT_NE(svg.find(">20</text>"), std::string::npos);
  EXPECT_NE(svg.find("seconds from start-up"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm::sim
