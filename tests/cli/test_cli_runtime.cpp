// hcwarm warm / replay / demo as a user runs them (CPU backend, real compiles).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/test_util.hpp"

namespace hcwarm {
namespace {

using test::run_cli;
using test::TempDir;

const std::string kTraces = std::string(HCWARM_SOURCE_DIR) + "/tests/data/traces/";

// The tiny hybrid model of the runtime tests: three buckets with 8 SMs and 320 tokens.
std::vector<std::string> tiny_model_args(const TempDir& dir) {
  test::write_file(dir / "config.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256,
      "hc_mult": 4, "num_hidden_layers": 2, "sliding_window": 128})");
  return {"--model", (dir / "config.json").string(), "--num-sms", "8", "--chunked-prefill-size", "320",
          "--backend", "cpu", "--mlp-width", "8", "--cache-dir", (dir / "cache").string()};
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CliWarm, ReportsKeysAndLoadsFromDiskOnRestart) {
  TempDir dir;
  const auto first = run_cli(cat({"warm", "--json"}, tiny_model_args(dir)));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto a = nlohmann::json::parse(first.out);
  for (const char* k : {"keys", "compiled", "loaded_from_disk", "seconds", "token_counts"}) {
    EXPECT_TRUE(a.contains(k)) << k;
  }
  EXPECT_EQ(a["keys"], 3);
  EXPECT_EQ(a["compiled"], 3);
  EXPECT_EQ(a["token_counts"], nlohmann::json({320, 256, 128}));
  const auto second = nlohmann::json::parse(run_cli(cat({"warm", "--json"}, tiny_model_args(dir))).out);
  EXPECT_EQ(second["compiled"], 0);
  EXPECT_EQ(second["loaded_from_disk"], 3);
}

TEST(CliReplay, AzureCsvAndJsonlTracesReplay) {
  TempDir dir;
  for (const char* trace : {"azure_sample.csv", "sample.jsonl"}) {
    const auto r = run_cli(cat({"replay", "--json", "--layers", "1", "--trace", kTraces + trace, "--report",
                                (dir / "report.svg").string()},
                               tiny_model_args(dir)));
    ASSERT_EQ(r.exit_code, 0) << trace << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* k : {"forwards", "compiles_after_ready", "stalls", "warmup_seconds", "p50_ms", "p99_ms", "max_ms"}) {
      EXPECT_TRUE(j.contains(k)) << trace << " lacks " << k;
    }
    EXPECT_GT(j["forwards"].get<int>(), 40);
    EXPECT_EQ(j["compiles_after_ready"], 0) << trace;
    EXPECT_NE(test::read_file(dir / "report.svg").find("<svg"), std::string::npos);
  }
}

TEST(CliReplay, NoPrewarmCountsServingCompiles) {
  TempDir dir;
  const auto r = run_cli(cat({"replay", "--json", "--layers", "1", "--no-prewarm", "--trace", kTraces + "sample.jsonl"},
                             tiny_model_args(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["compiles_after_ready"], 3);  // the three buckets, each at its first forward
  EXPECT_EQ(j["warmup_seconds"], 0.0);
}

TEST(CliReplay, MalformedTracesNameTheirLines) {
  TempDir dir;
  const auto csv = run_cli(cat({"replay", "--trace", kTraces + "azure_malformed.csv"}, tiny_model_args(dir)));
  EXPECT_EQ(csv.exit_code, 2);
  EXPECT_NE(csv.err.find("azure_malformed.csv"), std::string::npos) << csv.err;
  EXPECT_NE(csv.err.find("line 4"), std::string::npos) << csv.err;
  EXPECT_NE(csv.err.find("line 6"), std::string::npos) << csv.err;
  const auto jsonl = run_cli(cat({"replay", "--trace", kTraces + "malformed.jsonl"}, tiny_model_args(dir)));
  EXPECT_EQ(jsonl.exit_code, 2);
  EXPECT_NE(jsonl.err.find("line 2"), std::string::npos) << jsonl.err;
  EXPECT_NE(jsonl.err.find("line 4"), std::string::npos) << jsonl.err;
  EXPECT_EQ(run_cli(cat({"replay", "--trace", (dir / "missing.csv").string()}, tiny_model_args(dir))).exit_code, 2);
}

TEST(CliDemo, RunsThreeStartUpsSideBySide) {
  TempDir dir;
  auto args = cat({"demo", "--json", "--layers", "1", "--trace", "synthetic:n=12", "--report",
                   (dir / "demo.svg").string()},
                  tiny_model_args(dir));
  const auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_GT(j["runs"][0]["compiles_after_ready"].get<int>(), 0);  // no prewarm: compiles while serving
  EXPECT_EQ(j["runs"][1]["compiles_after_ready"], 0);
  EXPECT_EQ(j["runs"][2]["compiles_after_ready"], 0);
  EXPECT_EQ(j["runs"][2]["warmup"]["compiled"], 0);  // the restart loads from the disk cache
  EXPECT_GT(j["runs"][2]["warmup"]["loaded_from_disk"].get<int>(), 0);
  EXPECT_NE(test::read_file(dir / "demo.svg").find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm
