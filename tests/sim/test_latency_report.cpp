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

// n forwards of `ms` in bucket `splits`, appended with consecutive indices.
void add(std::vector<ForwardRecord>& r, int n, int splits, int64_t tokens, double ms, int64_t compiles = 0) {
  for (int i = 0; i < n; ++i) {
    const int64_t idx = static_cast<int64_t>(r.size());
    r.push_back({idx, 0.01 * static_cast<double>(idx), tokens, splits, ms / 1e3, compiles});
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

TEST(LatencyReportTest, FindsStallsPerBucket) {
  std::vector<ForwardRecord> r;
  add(r, 1, 44, 150, 2500.0, 1);  // 0: first forward of bucket 44 compiles
  add(r, 5, 44, 150, 1.0);        // 1-5
  add(r, 1, 1, 8000, 40.0);       // 6: slow but normal for 8000 tokens (alone in its bucket)
  add(r, 3, 2, 4000, 20.0);       // 7-9
  add(r, 1, 64, 1, 500.0, 1);     // 10: bucket 64 has two forwards: a compile and a normal one
  add(r, 1, 64, 1, 0.5);          // 11
  add(r, 1, 66, 1, 0.6);          // 12: alone; compared with bucket 64 (nearest)
  const LatencySummary s = summarize(r);
  ASSERT_EQ(s.stalls.size(), 2u);
  EXPECT_EQ(s.stalls[0].index, 0);
  EXPECT_EQ(s.stalls[0].num_splits, 44);
  EXPECT_EQ(s.stalls[0].num_tokens, 150);
  EXPECT_DOUBLE_EQ(s.stalls[0].ms, 2500.0);
  EXPECT_DOUBLE_EQ(s.stalls[0].reference_ms, 1.0);
  EXPECT_EQ(s.stalls[0].compiles_during, 1);
  EXPECT_EQ(s.stalls[1].index, 10);
  EXPECT_DOUBLE_EQ(s.stalls[1].reference_ms, 0.5);
  EXPECT_EQ(s.compiles_during_forwards, 2);
  EXPECT_EQ(s.forwards_with_compiles, 2);
  EXPECT_EQ(s.forwards, 13);
  EXPECT_DOUBLE_EQ(s.max_ms, 2500.0);
  const std::string d = s.stalls[0].describe();
  EXPECT_NE(d.find("forward 0: 150 tokens, 44 splits, 2500.0 ms"), std::string::npos) << d;
  EXPECT_NE(d.find("1 compile"), std::string::npos) << d;
}

TEST(LatencyReportTest, ReferenceScalesUpWithTokensButNeverDown) {
  std::vector<ForwardRecord> r;
  add(r, 9, 64, 2, 1.0);     // 0-8: the bucket's typical forward: 2 tokens, 1 ms
  add(r, 1, 64, 100, 40.0);  // 9: 50x the tokens, 40x the time: work, not a stall
  add(r, 1, 64, 1, 11.0);    // 10: fewer tokens than typical, 11x: a stall (no scaling down)
  add(r, 1, 64, 100, 600.0); // 11: 50x the tokens but 600x the time: a stall
  const LatencySummary s = summarize(r);
  ASSERT_EQ(s.stalls.size(), 2u);
  EXPECT_EQ(s.stalls[0].index, 10);
  EXPECT_DOUBLE_EQ(s.stalls[0].reference_ms, 1.0);
  EXPECT_EQ(s.stalls[1].index, 11);
  EXPECT_DOUBLE_EQ(s.stalls[1].reference_ms, 50.0);
}

TEST(LatencyReportTest, LoneForwardUsesNearestBucketWithFewerSplitsOnTie) {
  std::vector<ForwardRecord> r;
  add(r, 3, 4, 2000, 10.0);
  add(r, 3, 8, 1000, 0.1);
  add(r, 1, 6, 1500, 50.0);  // equally near 4 and 8: compared with 4 (10 ms), so not a stall
  EXPECT_TRUE(summarize(r).stalls.empty());
  add(r, 1, 9, 900, 50.0);  // nearest is 8 (0.1 ms): a stall
  const auto s = summarize(r);
  ASSERT_EQ(s.stalls.size(), 1u);
  EXPECT_EQ(s.stalls[0].reference_splits, 8);
  EXPECT_NE(s.stalls[0].describe().find("nearest bucket (8 splits)"), std::string::npos);
}

TEST(LatencyReportTest, NoStallsWithoutAReference) {
  std::vector<ForwardRecord> r;
  add(r, 1, 3, 10, 1000.0, 1);
  EXPECT_TRUE(summarize(r).stalls.empty());
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
  for (const char* key : {"name", "forwards", "compiles_after_ready", "stalls", "num_stalls", "warmup_seconds",
                          "p50_ms", "p99_ms", "p999_ms", "max_ms", "keys_compiled", "records"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["forwards"], 10);
  EXPECT_EQ(j["compiles_after_ready"], 1);
  EXPECT_EQ(j["num_stalls"], 1);
  EXPECT_EQ(j["stalls"][0]["index"], 0);
  EXPECT_EQ(j["keys_compiled"], 22);
  EXPECT_EQ(j["records"]["num_tokens"].size(), 10u);
  EXPECT_DOUBLE_EQ(j["p50_ms"].get<double>(), 1.0);
  EXPECT_FALSE(report_json(run).contains("records"));
}

TEST(LatencyReportTest, SvgMarksStallsAndDrawsWarmupBars) {
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
  EXPECT_EQ(count(svg, "<circle"), 2u + 1u);  // two stalls + the legend's symbol
  EXPECT_NE(svg.find("no prewarm &lt;cold&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<cold>"), std::string::npos);
  EXPECT_NE(svg.find("2.5 s"), std::string::npos);
  EXPECT_NE(svg.find("2 stalls"), std::string::npos);
  EXPECT_NE(svg.find("0 stalls"), std::string::npos);
  EXPECT_NE(svg.find("log scale"), std::string::npos);
}

TEST(LatencyReportTest, LongRunsStayCompactAndKeepSpikes) {
  RunReport run;
  run.name = "long";
  add(run.records, 200000, 1, 1, 1.0);
  run.records[123456].seconds = 0.030;
  run.records[123456].compiles_during = 1;
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
