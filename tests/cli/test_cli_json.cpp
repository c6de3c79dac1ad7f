// Every JSON the CLI prints or writes carries an integer "schema_version", and
// its wall-clock timestamps are ISO-8601 UTC.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {

nlohmann::json expect_versioned(const std::string& what, const std::string& text, int expected = 1) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not JSON (" << e.what() << "):\n" << text;
    return j;
  }
  EXPECT_TRUE(j.contains("schema_version") && j["schema_version"].is_number_integer()) << what << ": " << text;
  if (j.contains("schema_version")) EXPECT_EQ(j["schema_version"], expected) << what;
  return j;
}

nlohmann::json expect_versioned_run(const std::string& what, const std::vector<std::string>& args, int expected = 1) {
  const auto r = run_cli(args, {test::kNoGpu});
  EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
  return expect_versioned(what, r.out, expected);
}

TEST(CliJson, EveryJsonOutputCarriesSchemaVersion) {
  TempDir dir;
  const auto model = tiny_model_args(dir);
  expect_versioned_run("plan", {"plan", "--json"});
  expect_versioned_run("cache build", cat({"cache", "build", "--json"}, model));
  const auto warm = expect_versioned_run("warm", cat({"warm", "--json"}, model));
  // The prewarm's peak memory above the runtime's own (host RSS here), bounded for a tiny model.
  ASSERT_TRUE(warm.contains("prewarm_peak_bytes")) << warm.dump();
  EXPECT_LT(warm["prewarm_peak_bytes"].get<uint64_t>(), uint64_t{256} << 20);

  const std::string cache = (dir / "cache").string();
  const auto ls = expect_versioned_run("cache ls", {"cache", "ls", "--json", "--cache-dir", cache});
  ASSERT_FALSE(ls["entries"].empty()) << ls.dump();
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  for (const auto& e : ls["entries"]) {
    EXPECT_TRUE(std::regex_match(e["last_used"].get<std::string>(), iso)) << e["last_used"];
  }
  expect_versioned_run("cache verify", {"cache", "verify", "--json", "--cache-dir", cache});
  expect_versioned_run("cache prune", {"cache", "prune", "--json", "--cache-dir", cache});

  // replay: stdout and its .json report; the report is also what bench serve --render-only reads.
  const auto serve = dir / "serve";
  const auto report = serve / "config1.json";
  // Replay outputs are at schema 2: "stalls" became "slow_forwards" beside "waited_for_compile".
  expect_versioned_run("replay",
                       cat({"replay", "--json", "--layers", "1", "--trace", "synthetic:n=4", "--report",
                            report.string()},
                           model),
                       /*expected=*/2);
  expect_versioned("replay --report", test::read_file(report), 2);
  for (const char* n : {"config2.json", "config3.json", "config4.json", "config5.json"}) {
    std::filesystem::copy_file(report, serve / n);
  }
  const auto rendered = run_cli({"bench", "serve", "--render-only", "--out", serve.string()}, {test::kNoGpu});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  expect_versioned("bench serve serve.json", test::read_file(serve / "serve.json"), 2);

  expect_versioned_run("bench op", {"bench", "op", "--backend", "cpu", "--hidden", "256", "--tokens", "1",
                                    "--min-seconds", "0.001", "--variant", "specialized", "--json"},
                       /*expected=*/2);
  expect_versioned_run("info", {"info", "--json", "--cache-dir", cache});
  expect_versioned_run("cache clear", {"cache", "clear", "--json", "--cache-dir", cache});
}

// --in-place times the boundary with its new residual over the previous one
// (as the model writes it); the report says which, and off by default.
TEST(CliJson, BenchOpPostPreReportsInPlace) {
  for (const bool in_place : {false, true}) {
    std::vector<std::string> args{"bench", "op", "--backend", "cpu", "--op", "post-pre", "--hidden", "256",
                                  "--tokens", "1,3", "--min-seconds", "0.001", "--json"};
    if (in_place) args.push_back("--in-place");
    const auto j = expect_versioned_run("bench op --op post-pre", args, /*expected=*/2);
    EXPECT_EQ(j.value("in_place", !in_place), in_place);
    ASSERT_TRUE(j.contains("op_rows"));
    ASSERT_EQ(j["op_rows"].size(), 2u);
    for (const auto& row : j["op_rows"]) EXPECT_EQ(row.value("op", ""), "post-pre");
  }
}

TEST(CliJson, DemoJsonCarriesSchemaVersion) {
  TempDir dir;
  const auto r = run_cli(cat({"demo", "--json", "--layers", "1", "--trace", "synthetic:n=4", "--out",
                              (dir / "out").string()},
                             tiny_model_args(dir, /*with_cache_dir=*/false)),
                         {test::kNoGpu});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_versioned("demo", r.out, 2);
  expect_versioned("demo.json", test::read_file(dir / "out" / "demo.json"), 2);
}

}  // namespace
}  // namespace hcwarm
