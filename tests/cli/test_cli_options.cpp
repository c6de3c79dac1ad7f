// Each command accepts exactly the options it uses: one it would ignore is
// CLI11's unknown-option error (exit 2), never silently dropped.
#include <gtest/gtest.h>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {

struct Case {
  std::vector<std::string> command;  // with whatever it requires
  std::vector<std::vector<std::string>> ignored;
};

TEST(CliOptions, OptionsACommandIgnoresAreRejected) {
  TempDir dir;
  const std::string d = dir.path().string();
  const std::vector<Case> cases{
      {{"plan"},
       {{"--cache-dir", d}, {"--layers", "1"}, {"--mlp-width", "8"}, {"--seed", "1"}, {"--weights", "w"}}},
      {{"op", "hc-pre", "--in", d, "--out", d},
       {{"--dp-size", "2"}, {"--chunked-prefill-size", "64"}, {"--enable-dp-attention"}, {"--mlp-width", "8"}}},
      {{"warm"}, {{"--seed", "1"}, {"--weights", "w"}, {"--trace", "synthetic"}}},
      {{"cache", "build", "--cache-dir", d}, {{"--layers", "1"}, {"--seed", "1"}, {"--weights", "w"}}},
      {{"demo"}, {{"--cache-dir", d}}},
      {{"bench", "serve", "--out", d}, {{"--cache-dir", d}, {"--seed", "1"}, {"--weights", "w"}}},
      {{"bench", "op"}, {{"--model", "dsv4-pro"}, {"--cache-dir", d}}},
      {{"cache", "ls", "--cache-dir", d}, {{"--model", "dsv4-pro"}, {"--backend", "cpu"}}},
      {{"cache", "verify", "--cache-dir", d}, {{"--max-size", "1G"}}},
      {{"cache", "clear", "--cache-dir", d}, {{"--max-size", "1G"}, {"--quarantine"}}},
  };
  for (const auto& c : cases) {
    for (const auto& extra : c.ignored) {
      const auto args = test::cat(c.command, extra);
      const auto r = run_cli(args);
      std::string line;
      for (const auto& a : args) line += a + " ";
      EXPECT_EQ(r.exit_code, 2) << line << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("not expected"), std::string::npos) << line << ": " << r.err;
      EXPECT_NE(r.err.find(extra.front()), std::string::npos) << line << ": " << r.err;
    }
  }
}

// What each command does use is still there (a bad value, not an unknown option, proves it).
TEST(CliOptions, OptionsACommandUsesAreAccepted) {
  TempDir dir;
  const std::string d = dir.path().string();
  const std::vector<std::vector<std::string>> used{
      {"plan", "--backend", "cpu", "--num-sms", "8", "--dp-size", "2", "--enable-dp-attention",
       "--chunked-prefill-size", "64", "--json"},
  };
  for (const auto& args : used) EXPECT_EQ(run_cli(args).exit_code, 0) << args.front();
  const std::vector<std::vector<std::string>> refused_by_value{
      {"op", "hc-pre", "--in", d, "--out", d, "--backend", "tpu"},
      {"op", "hc-pre", "--in", d, "--out", d, "--cache-dir", d, "--num-sms", "0", "--model", "nope"},
      {"warm", "--layers", "-1", "--mlp-width", "8", "--cache-dir", d, "--dp-size", "0"},
      {"replay", "--trace", "synthetic:n=1", "--seed", "1", "--weights", d + "/none.safetensors", "--layers", "1",
       "--cache-dir", d, "--backend", "reference"},
      {"demo", "--seed", "1", "--weights", d + "/none.safetensors", "--out", d},
      {"cache", "build", "--cache-dir", d, "--mlp-width", "0"},
      {"bench", "serve", "--layers", "1", "--mlp-width", "0", "--out", d},
  };
  for (const auto& args : refused_by_value) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args.front() << ": " << r.err;
    EXPECT_EQ(r.err.find("not expected"), std::string::npos) << args.front() << ": " << r.err;
  }
}

}  // namespace
}  // namespace hcwarm
