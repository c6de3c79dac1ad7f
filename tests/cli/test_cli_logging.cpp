// The start-up warmup's log at the default level: one info line per warmup that
// names the token counts, the keys and the seconds.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST(CliLogging, OneInfoLinePerWarmupWithCountsKeysAndSeconds) {
  TempDir dir;
  const auto r = run_cli(cat({"warm", "--json"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=info"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto warmup = lines_with(r.err, "kernel warmup");
  ASSERT_EQ(warmup.size(), 1u) << r.err;
  EXPECT_NE(warmup[0].find("[info]"), std::string::npos) << warmup[0];
  EXPECT_NE(warmup[0].find("token counts 320, 256, 128"), std::string::npos) << warmup[0];
  EXPECT_NE(warmup[0].find("9 keys"), std::string::npos) << warmup[0];
  // The tiny config leaves out fields with defaults: named on the same line.
  EXPECT_NE(warmup[0].find("; defaults used for fields the config left out: hc_sinkhorn_iters=20"), std::string::npos)
      << warmup[0];
  EXPECT_TRUE(std::regex_search(warmup[0], std::regex(R"(\d+\.\d{3}s)"))) << warmup[0];
}

// Without a terminal (a server's log) the progress display logs each key at debug
// only: a warm start is one info line, its summary.
TEST(CliLogging, WithoutATerminalEachKeyIsLoggedAtDebugOnly) {
  TempDir dir;
  const auto cold = run_cli(cat({"warm"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=info"});
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_TRUE(lines_with(cold.err, "jit build [").empty()) << cold.err;
  const auto warm = run_cli(cat({"warm"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=info"});
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(lines_with(warm.err, "[info]").size(), 1u) << warm.err;
  const auto debug = run_cli(cat({"warm"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=debug"});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  const auto per_key = lines_with(debug.err, "jit build [");
  EXPECT_GE(per_key.size(), 9u) << debug.err;  // each of the 9 keys, at debug
  for (const auto& l : per_key) EXPECT_NE(l.find("[debug]"), std::string::npos) << l;
}

// The per-token-count lines of the model's prewarm hook belong at debug level.
TEST(CliLogging, PerTokenCountPrewarmLinesAreDebugOnly) {
  TempDir dir;
  const auto info = run_cli(cat({"warm", "--json"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=info"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(lines_with(info.err, "completed in").empty()) << info.err;
  EXPECT_EQ(lines_with(info.err, "[info]").size(), 1u) << info.err;
  const auto debug = run_cli(cat({"warm", "--json"}, tiny_model_args(dir)), {"HCWARM_LOG_LEVEL=debug"});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  EXPECT_EQ(lines_with(debug.err, "completed in").size(), 6u) << debug.err;  // 3 counts x 2 paths
}

}  // namespace
}  // namespace hcwarm
