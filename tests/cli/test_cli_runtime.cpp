// hcwarm warm / replay / demo as a user runs them (CPU backend, real compiles).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {

using test::kTraces;

// The model forward's hc_pre keys per split bucket: the first layer's (from the
// embedding) and every other sublayer's (the boundary's input).
constexpr int64_t kPreKeysPerBucket = 2;

TEST(CliWarm, ReportsKeysAndLoadsFromDiskOnRestart) {
  TempDir dir;
  const auto first = run_cli(cat({"warm", "--json"}, tiny_model_args(dir)));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto a = nlohmann::json::parse(first.out);
  for (const char* k : {"keys", "compiled", "loaded_from_disk", "seconds", "token_counts"}) {
    EXPECT_TRUE(a.contains(k)) << k;
  }
  EXPECT_EQ(a["keys"], 9);  // three buckets, each for residual streams, the first layer's embedding and the boundary
  EXPECT_EQ(a["compiled"], 9);
  EXPECT_EQ(a["token_counts"], nlohmann::json({320, 256, 128}));
  // The tiny config leaves these out: each default is named, never silent.
  EXPECT_EQ(a["defaults"], nlohmann::json({"hc_sinkhorn_iters=20", "hc_eps=1e-06", "rms_norm_eps=1e-06",
                                           "num_nextn_predict_layers=0"}));
  const auto second = nlohmann::json::parse(run_cli(cat({"warm", "--json"}, tiny_model_args(dir))).out);
  EXPECT_EQ(second["compiled"], 0);
  EXPECT_EQ(second["loaded_from_disk"], 9);
}

TEST(CliReplay, AzureCsvAndJsonlTracesReplay) {
  TempDir dir;
  for (const char* trace : {"azure_sample.csv", "sample.jsonl"}) {
    const auto r = run_cli(cat({"replay", "--json", "--layers", "1", "--trace", kTraces + trace, "--report",
                                (dir / "report.svg").string()},
                               tiny_model_args(dir)));
    ASSERT_EQ(r.exit_code, 0) << trace << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* k : {"forwards", "compiles_after_ready", "background_compiles_after_ready", "waited_for_compile",
                          "compile_wait_s", "served_by_generic", "slow_forwards", "warmup_seconds", "p50_ms", "p99_ms",
                          "max_ms"}) {
      EXPECT_TRUE(j.contains(k)) << trace << " lacks " << k;
    }
    EXPECT_GT(j["forwards"].get<int>(), 40);
    // Start-up covers the runner's construction too: at least the warmup's share.
    EXPECT_GE(j["startup_seconds"].get<double>(), j["warmup_seconds"].get<double>()) << trace;
    // Every request of the trace finished: each has a time to first token.
    EXPECT_EQ(j["ttft_ms"]["requests"], j["requests"]) << trace;
    EXPECT_EQ(j["completed_requests"], j["requests"]) << trace;
    for (const char* m : {"ttft_ms", "tpot_ms"}) {
      EXPECT_LE(j[m]["p50"].get<double>(), j[m]["p99"].get<double>()) << trace << " " << m;
      EXPECT_LE(j[m]["p99"].get<double>(), j[m]["max"].get<double>()) << trace << " " << m;
    }
    EXPECT_GT(j["tpot_ms"]["requests"].get<int64_t>(), 0) << trace;
    EXPECT_EQ(j["compiles_after_ready"], 0) << trace;
    EXPECT_EQ(j["background_compiles_after_ready"], 0) << trace;
    EXPECT_FALSE(j.contains("background_after_ready")) << trace;  // the old name is gone
    EXPECT_EQ(j["waited_for_compile"], 0) << trace;
    EXPECT_NE(test::read_file(dir / "report.svg").find("<svg"), std::string::npos);
  }
}

TEST(CliReplay, NoPrewarmNotTieredCountsServingCompilesAndTheirWaits) {
  TempDir dir;
  const auto r = run_cli(cat({"replay", "--json", "--layers", "1", "--no-prewarm", "--trace", kTraces + "sample.jsonl"},
                             tiny_model_args(dir)),
                         {"HCWARM_TIERED=0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // Each bucket the batches meet (at most the 3 planned; fewer when slow compiles
  // let requests batch together) compiles its hc_pre keys (the first layer's from the
  // embedding and the other sublayers') at its first forward, which waits for them.
  const int64_t cold = j["compiles_after_ready"].get<int64_t>();
  const int64_t met = j["forwards_with_compiles"].get<int64_t>();
  EXPECT_GE(met, 1);
  EXPECT_LE(met, 3);
  EXPECT_EQ(cold, kPreKeysPerBucket * met);
  EXPECT_EQ(j["background_compiles_after_ready"], 0);  // untiered: every compile was in a call's path
  EXPECT_EQ(j["waited_for_compile"].get<int64_t>(), met);
  EXPECT_GT(j["compile_wait_s"].get<double>(), 0.0);
  EXPECT_EQ(j["served_by_generic"], 0);
  EXPECT_EQ(j["tiered"], false);
  EXPECT_EQ(j["warmup_seconds"], 0.0);
}

TEST(CliReplay, NoPrewarmTieredNeverWaits) {
  TempDir dir;
  const auto r = run_cli(cat({"replay", "--json", "--layers", "1", "--no-prewarm", "--trace", kTraces + "sample.jsonl"},
                             tiny_model_args(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tiered"], true);
  EXPECT_EQ(j["waited_for_compile"], 0);
  EXPECT_EQ(j["compile_wait_s"], 0.0);
  EXPECT_EQ(j["compiles_after_ready"], 0);       // none in a call's path
  EXPECT_GT(j["served_by_generic"].get<int64_t>(), 0);  // the first calls of a bucket ran generically
  EXPECT_GE(j["background_compiled"].get<int64_t>(), 1);
  // Every one of them after ready, counted under its own name.
  EXPECT_EQ(j["background_compiles_after_ready"], j["background_compiled"]);
  EXPECT_EQ(j["background_failed"], 0);
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

TEST(CliDemo, RunsFourStartUpsSideBySideAndWritesUnderOut) {
  TempDir dir;
  const auto out = dir / "demo-out";
  // The demo keeps its own caches: no --cache-dir.
  auto args = cat({"demo", "--json", "--layers", "1", "--trace", "synthetic:n=12", "--out", out.string()},
                  tiny_model_args(dir, /*with_cache_dir=*/false));
  const auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 4u);
  // No prewarm, not tiered: compiles while serving, and the forwards wait for them.
  EXPECT_GT(j["runs"][0]["compiles_after_ready"].get<int>(), 0);
  EXPECT_EQ(j["runs"][0]["waited_for_compile"], j["runs"][0]["forwards_with_compiles"]);
  // No prewarm, tiered: generic kernels serve, nothing waits.
  EXPECT_EQ(j["runs"][1]["waited_for_compile"], 0);
  EXPECT_GT(j["runs"][1]["served_by_generic"].get<int>(), 0);
  EXPECT_EQ(j["runs"][1]["compiles_after_ready"], 0);
  EXPECT_GT(j["runs"][1]["background_compiles_after_ready"].get<int>(), 0);
  for (int i = 2; i < 4; ++i) {
    EXPECT_EQ(j["runs"][i]["compiles_after_ready"], 0);
    EXPECT_EQ(j["runs"][i]["waited_for_compile"], 0);
    EXPECT_EQ(j["runs"][i]["served_by_generic"], 0);
  }
  EXPECT_EQ(j["runs"][3]["warmup"]["compiled"], 0);  // the restart loads from the disk cache
  EXPECT_GT(j["runs"][3]["warmup"]["loaded_from_disk"].get<int>(), 0);
  // The chart and the data of every forward land under --out, and both outputs say where.
  EXPECT_NE(test::read_file(out / "demo.svg").find("<svg"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(test::read_file(out / "demo.json")).contains("runs"));
  EXPECT_EQ(j["chart"], (out / "demo.svg").string());
  EXPECT_NE(r.err.find((out / "demo.svg").string()), std::string::npos) << r.err;
}

TEST(CliDemo, HelpNamesTheOutputDirectory) {
  const auto r = run_cli({"demo", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--out TEXT=hcwarm-demo"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo.svg"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--report"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hcwarm

namespace hcwarm {
namespace {

TEST(CliCacheBuild, AheadOfTimeCacheServesWarmupWithZeroCompiles) {
  TempDir dir;
  auto args = tiny_model_args(dir);  // --backend cpu, cache at dir/cache
  const auto build = run_cli(cat({"cache", "build", "--json"}, args));
  ASSERT_EQ(build.exit_code, 0) << build.err;
  const auto b = nlohmann::json::parse(build.out);
  EXPECT_EQ(b["keys"], 9);
  EXPECT_EQ(b["compiled"], 9);
  EXPECT_EQ(b["failed"], 0);
  // A later start-up on that cache compiles nothing.
  const auto warm = nlohmann::json::parse(run_cli(cat({"warm", "--json"}, args)).out);
  EXPECT_EQ(warm["compiled"], 0);
  EXPECT_EQ(warm["loaded_from_disk"], 9);
  // Building again finds everything cached.
  const auto again = nlohmann::json::parse(run_cli(cat({"cache", "build", "--json"}, args)).out);
  EXPECT_EQ(again["compiled"], 0);
  EXPECT_EQ(again["already_cached"], 9);
}

TEST(CliCacheBuild, CudaKernelsBuildWithoutAGpu) {
  TempDir dir;
  auto args = tiny_model_args(dir);
  *std::find(args.begin(), args.end(), std::string("cpu")) = "cuda";
  args.insert(args.end(), {"--arch", "sm_90a"});
  const auto r = run_cli(cat({"cache", "build", "--json"}, args), {"HCWARM_CUDA_LIBRARY=/nonexistent/libcuda.so.1"});
  if (r.exit_code != 0 && r.err.find("NVRTC") != std::string::npos) GTEST_SKIP() << "no NVRTC here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // three mhc_pre buckets, three embedding ones, the boundary's one bucket of T <= 128 (the
  // tiny model's first two tiles share a split count), mhc_head, mhc_post, swiglu_mlp
  EXPECT_EQ(j["keys"], 10);
  EXPECT_EQ(j["compiled"], 10);
  const auto verify = run_cli({"cache", "verify", "--cache-dir", (dir / "cache").string()});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

TEST(CliCacheBuild, FailsNamingTheDirectoryWhenNothingCouldBeStored) {
  TempDir dir;
  test::write_file(dir / "file", "not a directory");
  auto args = tiny_model_args(dir);
  const auto cache_pos = std::find(args.begin(), args.end(), std::string("--cache-dir")) + 1;
  *cache_pos = (dir / "file" / "cache").string();  // cannot be created
  auto r = run_cli(cat({"cache", "build"}, args));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("nothing could be stored in cache directory " + *cache_pos), std::string::npos) << r.err;

  // A read-only bundle: one complete for this configuration builds fine, one missing kernels fails.
  const std::filesystem::path ro = dir / "ro";
  *cache_pos = ro.string();
  ASSERT_EQ(run_cli(cat({"cache", "build"}, args)).exit_code, 0);
  std::vector<std::string> env;
  if (::geteuid() == 0) {  // root ignores permission bits: make it another user's, trusted as shared
    ASSERT_EQ(::chown(ro.c_str(), 65534, 65534), 0);
    env.push_back("HCWARM_CACHE_TRUST=shared");
  } else {
    for (const auto& e : std::filesystem::recursive_directory_iterator(ro))
      if (e.is_directory()) ::chmod(e.path().c_str(), 0555);
    ::chmod(ro.c_str(), 0555);
  }
  r = run_cli(cat({"cache", "build"}, args), env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  test::write_file(dir / "wider.json", R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 512,
      "hc_mult": 4, "num_hidden_layers": 2, "sliding_window": 128})");
  *(std::find(args.begin(), args.end(), std::string("--model")) + 1) = (dir / "wider.json").string();  // new kernels
  r = run_cli(cat({"cache", "build"}, args), env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("nothing could be stored in cache directory " + ro.string()), std::string::npos) << r.err;
}

TEST(CliCacheBuild, RejectsBadInput) {
  TempDir dir;
  EXPECT_EQ(run_cli(cat({"cache", "build"}, {"--model", "nope", "--cache-dir", (dir / "c").string()})).exit_code, 2);
  EXPECT_EQ(run_cli({"cache", "build", "--backend", "reference", "--cache-dir", (dir / "c").string()}).exit_code, 2);
  EXPECT_EQ(run_cli({"cache", "build", "--backend", "tpu", "--cache-dir", (dir / "c").string()}).exit_code, 2);
}

}  // namespace
}  // namespace hcwarm

namespace hcwarm {
namespace {

// --buckets N: one row per split bucket of [1, N] (its largest T), as warmup sees them.
TEST(CliBenchOp, BucketsTimesEveryBucketOnce) {
  const auto r = run_cli({"bench", "op", "--backend", "cpu", "--hidden", "256", "--num-sms", "8", "--buckets", "320",
                          "--variant", "specialized", "--min-seconds", "0.001", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<int64_t> tokens, splits;
  for (const auto& row : j["rows"]) {
    tokens.push_back(row["tokens"]);
    splits.push_back(row["num_splits"]);
    ASSERT_TRUE(row.contains("specialized")) << row.dump();
    // Compiled on this call: the compiler's share is positive and within the whole request.
    const auto& spec = row["specialized"];
    if (spec["first_call_s"].get<double>() >= 0) {
      EXPECT_GT(spec["compile_s"].get<double>(), 0.0) << row.dump();
      EXPECT_GE(spec["first_call_s"].get<double>(), spec["compile_s"].get<double>()) << row.dump();
    } else {
      EXPECT_EQ(spec["compile_s"].get<double>(), -1.0) << row.dump();
    }
  }
  EXPECT_EQ(tokens, (std::vector<int64_t>{320, 256, 128}));  // the tiny model's warmup token counts
  EXPECT_EQ(std::set<int64_t>(splits.begin(), splits.end()).size(), splits.size()) << "one row per split count";
}

// Schema 2 on the CPU: eager figures for both variants, the graph ones null
// (no CUDA graphs there), and "n/a" in the text table's graph columns.
TEST(CliBenchOp, CpuReportsEagerAndNoGraph) {
  const std::vector<std::string> args{"bench",    "op",   "--backend",     "cpu",  "--hidden", "256",
                                      "--tokens", "1,64", "--min-seconds", "0.001"};
  const auto r = run_cli(cat(args, {"--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_GT(j["copy_bandwidth_gbs"].get<double>(), 0.0);
  EXPECT_TRUE(j.contains("l2_bytes") && j["l2_bytes"].is_null());
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_GE(row["rotation_sets"].get<int64_t>(), 1) << row.dump();
    for (const char* variant : {"specialized", "generic"}) {
      ASSERT_TRUE(row.contains(variant)) << row.dump();
      const auto& v = row[variant];
      EXPECT_GT(v["eager_us"].get<double>(), 0.0) << row.dump();
      EXPECT_EQ(v["us"], v["eager_us"]) << "schema 1's name of the eager time";
      for (const char* key : {"graph_us", "graph_gbps", "graph_copy_fraction", "graph_calls_per_replay"}) {
        EXPECT_TRUE(v.contains(key) && v[key].is_null()) << key << ": " << row.dump();
      }
      EXPECT_FALSE(v.contains("graph_error")) << row.dump();
    }
  }
  const auto text = run_cli(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("graph us"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("n/a"), std::string::npos) << text.out;
}

TEST(CliBenchOp, BucketsRejectsZeroAndTokensTogether) {
  EXPECT_EQ(run_cli({"bench", "op", "--backend", "cpu", "--buckets", "0"}).exit_code, 2);
  EXPECT_EQ(run_cli({"bench", "op", "--backend", "cpu", "--buckets", "64", "--tokens", "3"}).exit_code, 2);
}

TEST(CliBenchServe, FiveFreshProcessesOneJsonOneChart) {
  TempDir dir;
  auto args = tiny_model_args(dir, /*with_cache_dir=*/false);  // bench serve keeps its caches under --out
  const auto r = run_cli(cat({"bench", "serve", "--layers", "1", "--trace", "synthetic:n=12", "--out",
                              (dir / "serve").string()},
                             args));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(test::read_file(dir / "serve" / "serve.json"));
  const auto& c = j["configurations"];
  ASSERT_EQ(c.size(), 5u);
  // Without prewarm each bucket the batches meet compiles at its first forward; how
  // many they meet (of the 3 planned) depends on how long the compiles stall the
  // simulated clock, so the count is checked against the forwards that compiled.
  const int64_t cold = c[0]["compiles_after_ready"].get<int64_t>();
  const int64_t met = c[0]["forwards_with_compiles"].get<int64_t>();
  EXPECT_GE(met, 1);
  EXPECT_LE(met, 3);
  EXPECT_EQ(cold, kPreKeysPerBucket * met);
  EXPECT_EQ(c[0]["waited_for_compile"].get<int64_t>(), met);
  for (int i = 1; i < 5; ++i) {
    EXPECT_EQ(c[i]["compiles_after_ready"], 0) << c[i]["name"];
    EXPECT_EQ(c[i]["waited_for_compile"], 0) << c[i]["name"];
  }
  // 5: no prewarm but tiered: the generic kernels served while the buckets compiled in the background.
  EXPECT_GT(c[4]["served_by_generic"].get<int64_t>(), 0);
  EXPECT_GE(c[4]["background_compiled"].get<int64_t>(), 1);
  EXPECT_EQ(c[1]["warmup"]["compiled"], 9);        // prewarm on an empty cache (residual, embedding, boundary)
  EXPECT_EQ(c[2]["warmup"]["loaded_from_disk"], 9);  // the restart
  EXPECT_EQ(c[3]["warmup"]["compiled"], 0);        // the cache built ahead of time, copied
  EXPECT_EQ(c[3]["warmup"]["loaded_from_disk"], 9);
  EXPECT_NE(test::read_file(dir / "serve" / "serve.svg").find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm
