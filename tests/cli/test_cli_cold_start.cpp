// `hcwarm bench cold-start`: four processes warming one empty cache together
// compile each planned key once between them and all end with every key
// loaded. Functional only: no time is asserted (the benchmark reports them).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;
using test::cat;
using test::run_cli;
using test::TempDir;

TEST(CliColdStart, FourProcessesCompileEachKeyOnceAndAllLoadEveryKey) {
  TempDir dir("hcwarm-cold-start");
  const fs::path caches = dir / "bench";
  const fs::path report = dir / "report.json";
  const auto r = run_cli(cat({"bench", "cold-start", "--processes", "4", "--cache-dir", caches.string(), "--json",
                              "--out", report.string()},
                             test::tiny_model_args(dir, false)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, nlohmann::json::parse(test::read_file(report)));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["ok"], true);

  const auto& g = j["group"];
  EXPECT_EQ(g["processes"], 4);
  // One process alone compiles every planned key: the count the four must share.
  const auto& one = j["one_process"];
  const int keys = one["planned_keys"].get<int>();
  EXPECT_GE(keys, 3);  // at least one kernel per split bucket of the tiny model
  EXPECT_EQ(one["processes"], 1);
  EXPECT_EQ(one["compiled_total"], keys);
  EXPECT_EQ(one["per_process"].size(), 1u);
  EXPECT_EQ(g["planned_keys"], keys);
  EXPECT_EQ(g["compiled_total"], keys);
  EXPECT_EQ(g["all_loaded"], true);
  ASSERT_EQ(g["per_process"].size(), 4u);
  std::set<int64_t> pids;
  for (const auto& p : g["per_process"]) {
    EXPECT_EQ(p["keys"], keys);
    EXPECT_EQ(p["failed"], 0);
    EXPECT_EQ(p["compiled"].get<int>() + p["loaded_from_disk"].get<int>() + p["memory_hits"].get<int>(), keys) << p;
    EXPECT_GE(p["ready_s"].get<double>(), 0.0);
    pids.insert(p["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 4u);  // four processes, not one reported four times
  // One cache between the four, holding each key once.
  EXPECT_EQ(fs::path(g["cache_dir"].get<std::string>()), caches / "processes-4");
  const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", (caches / "processes-4").string()}).out);
  EXPECT_EQ(ls["entries"].size(), static_cast<size_t>(keys));
  EXPECT_GT(j["wall_ratio"].get<double>(), 0.0);
}

// Repeats run on their own directories and report the ratio of the medians.
TEST(CliColdStart, RepeatRunsPairsOnFreshDirectoriesAndReportsMedians) {
  TempDir dir("hcwarm-cold-start");
  const fs::path caches = dir / "bench";
  const auto r = run_cli(cat({"bench", "cold-start", "--processes", "2", "--repeat", "2", "--cache-dir",
                              caches.string(), "--json"},
                             test::tiny_model_args(dir, false)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["repeat"], 2);
  ASSERT_EQ(j["runs"].size(), 2u);
  std::vector<double> together, alone;
  for (int k = 0; k < 2; ++k) {
    const auto& run = j["runs"][k];
    const fs::path base = caches / ("run-" + std::to_string(k + 1));
    // Each run starts cold: its own directories, every key compiled once there.
    EXPECT_EQ(fs::path(run["group"]["cache_dir"].get<std::string>()), base / "processes-2");
    EXPECT_EQ(fs::path(run["one_process"]["cache_dir"].get<std::string>()), base / "one-process");
    EXPECT_EQ(run["group"]["compiled_total"], run["group"]["planned_keys"]);
    EXPECT_EQ(run["one_process"]["compiled_total"], run["one_process"]["planned_keys"]);
    together.push_back(run["group"]["wall_s"].get<double>());
    alone.push_back(run["one_process"]["wall_s"].get<double>());
  }
  // The median of two is their mean.
  EXPECT_DOUBLE_EQ(j["median_group_wall_s"].get<double>(), 0.5 * (together[0] + together[1]));
  EXPECT_DOUBLE_EQ(j["median_one_process_wall_s"].get<double>(), 0.5 * (alone[0] + alone[1]));
  EXPECT_DOUBLE_EQ(j["wall_ratio"].get<double>(),
                   j["median_group_wall_s"].get<double>() / j["median_one_process_wall_s"].get<double>());
  EXPECT_EQ(j["group"], j["runs"][0]["group"]);
  EXPECT_GE(j["max_ready_skew_s"].get<double>(), j["runs"][1]["group"]["ready_skew_s"].get<double>());

  const auto bad = run_cli(cat({"bench", "cold-start", "--repeat", "0", "--cache-dir", (dir / "new").string()},
                               test::tiny_model_args(dir, false)));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--repeat"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "new"));
}

// Two simulated hosts of two ranks, a cache directory each: every key compiled
// once in the job, each host ends with every key, and a restart compiles nothing.
TEST(CliColdStart, TwoHostsExchangeKernelsCompileEachKeyOnceAndARestartCompilesNothing) {
  TempDir dir("hcwarm-cold-start");
  const fs::path caches = dir / "bench";
  const auto r = run_cli(cat({"bench", "cold-start", "--hosts", "2", "--processes", "2", "--cache-dir",
                              caches.string(), "--json"},
                             test::tiny_model_args(dir, false)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["hosts"], 2);
  EXPECT_EQ(j["host_cpus"].size(), 2u);
  const auto& g = j["group"];
  const int keys = j["one_process"]["planned_keys"].get<int>();
  EXPECT_GE(keys, 3);
  EXPECT_EQ(g["hosts"], 2);
  EXPECT_EQ(g["planned_keys"], keys);
  EXPECT_EQ(g["compiled_total"], keys);  // once in the job, not once per host
  EXPECT_EQ(g["all_loaded"], true);
  ASSERT_EQ(g["per_process"].size(), 4u);
  int received[2] = {0, 0}, compiled[2] = {0, 0};
  for (int i = 0; i < 4; ++i) {
    const auto& p = g["per_process"][i];
    EXPECT_EQ(p["rank"], i);
    EXPECT_EQ(p["host"], i / 2);
    EXPECT_EQ(p["refused"].size(), 0u) << p;
    EXPECT_EQ(p["warmup_compiled"], 0) << p;  // every key was on its host's disk by warmup
    EXPECT_EQ(p["loaded_from_disk"], keys) << p;
    received[i / 2] += p["received"].get<int>();
    compiled[i / 2] += p["compiled"].get<int>();
  }
  // What one host compiled, the other received once.
  EXPECT_EQ(received[0], compiled[1]);
  EXPECT_EQ(received[1], compiled[0]);
  for (const char* host : {"host-0", "host-1"}) {
    const fs::path c = caches / "hosts-2x2" / host;
    const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", c.string()}).out);
    EXPECT_EQ(ls["entries"].size(), static_cast<size_t>(keys)) << host;
  }
  EXPECT_EQ(j["restart"]["compiled_total"], 0);
  EXPECT_EQ(j["restart"]["all_loaded"], true);
  for (const auto& p : j["restart"]["per_process"]) EXPECT_EQ(p["received"], 0) << p;

  const auto bad = run_cli(cat({"bench", "cold-start", "--hosts", "65", "--cache-dir", (dir / "new").string()},
                               test::tiny_model_args(dir, false)));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--hosts"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "new"));
}

TEST(CliColdStart, StartsOnlyFromAnEmptyDirectory) {
  TempDir dir("hcwarm-cold-start");
  test::write_file(dir / "bench" / "old", "x");
  const auto r = run_cli(cat({"bench", "cold-start", "--cache-dir", (dir / "bench").string()},
                             test::tiny_model_args(dir, false)));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("must be an empty or absent directory"), std::string::npos) << r.err;
  const auto none = run_cli(cat({"bench", "cold-start", "--processes", "0", "--cache-dir", (dir / "new").string()},
                                test::tiny_model_args(dir, false)));
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_FALSE(fs::exists(dir / "new"));
}

}  // namespace
}  // namespace hcwarm
