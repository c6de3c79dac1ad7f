// `hcwarm bench cold-start`: four processes warming one empty cache together
// compile each planned key once between them and all end with every key
// loaded. Functional only: no time is asserted (the benchmark reports them).
#include <gtest/gtest.h>

#include <filesystem>
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
  EXPECT_EQ(g["planned_keys"], 6);  // the tiny model's three split buckets, residual and embedding input
  EXPECT_EQ(g["compiled_total"], 6);
  EXPECT_EQ(g["all_loaded"], true);
  ASSERT_EQ(g["per_process"].size(), 4u);
  std::set<int64_t> pids;
  for (const auto& p : g["per_process"]) {
    EXPECT_EQ(p["keys"], 6);
    EXPECT_EQ(p["failed"], 0);
    EXPECT_EQ(p["compiled"].get<int>() + p["loaded_from_disk"].get<int>() + p["memory_hits"].get<int>(), 6) << p;
    EXPECT_GE(p["ready_s"].get<double>(), 0.0);
    pids.insert(p["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 4u);  // four processes, not one reported four times
  // One cache between the four, holding each key once.
  EXPECT_EQ(fs::path(g["cache_dir"].get<std::string>()), caches / "processes-4");
  const auto ls = nlohmann::json::parse(run_cli({"cache", "ls", "--json", "--cache-dir", (caches / "processes-4").string()}).out);
  EXPECT_EQ(ls["entries"].size(), 6u);

  const auto& one = j["one_process"];
  EXPECT_EQ(one["processes"], 1);
  EXPECT_EQ(one["compiled_total"], 6);
  EXPECT_EQ(one["per_process"].size(), 1u);
  EXPECT_GT(j["wall_ratio"].get<double>(), 0.0);
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
