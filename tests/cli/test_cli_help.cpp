// --help as a new user reads it: every command's help is its own (the examples
// footer only at the top), defaults are shown, and flags carry no {false} noise.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "common/test_util.hpp"

namespace hcwarm {
namespace {

using test::run_cli;

const std::vector<std::vector<std::string>> kCommands{
    {"plan"},         {"op"},          {"op", "hc-pre"},  {"warm"},          {"replay"},
    {"demo"},         {"cache"},       {"cache", "ls"},   {"cache", "verify"}, {"cache", "prune"},
    {"cache", "clear"}, {"cache", "build"}, {"bench"},   {"bench", "op"},    {"bench", "serve"},
    {"info"},         {"cache", "export"}, {"cache", "import"}, {"cache", "check"}, {"bench", "cold-start"}};

std::string help_of(std::vector<std::string> command) {
  command.push_back("--help");
  const auto r = run_cli(command);
  EXPECT_EQ(r.exit_code, 0) << command.front() << ": " << r.err;
  return r.out;
}

TEST(CliHelp, ExamplesFooterOnlyAtTheTop) {
  const auto top = run_cli({"--help"});
  ASSERT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("Examples:"), std::string::npos) << top.out;
  for (const auto& c : kCommands) {
    const std::string h = help_of(c);
    EXPECT_EQ(h.find("Examples:"), std::string::npos) << c.back() << ":\n" << h;
    EXPECT_EQ(h.find("Exit codes:"), std::string::npos) << c.back() << ":\n" << h;
  }
}

TEST(CliHelp, FlagsShowNoBracedDefaults) {
  for (const auto& c : kCommands) {
    const std::string h = help_of(c);
    EXPECT_EQ(h.find("{false}"), std::string::npos) << c.back() << ":\n" << h;
    EXPECT_EQ(h.find("{true}"), std::string::npos) << c.back() << ":\n" << h;
  }
  EXPECT_NE(help_of({"bench", "op"}).find("--no-norm "), std::string::npos);
}

TEST(CliHelp, OneMlpWidthDefaultShownEverywhere) {
  std::set<std::string> defaults;
  const std::regex re(R"(--mlp-width INT[^=\n]*=(\d+))");
  for (const auto& c : std::vector<std::vector<std::string>>{
           {"warm"}, {"replay"}, {"demo"}, {"cache", "build"}, {"bench", "serve"}}) {
    const std::string h = help_of(c);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(h, m, re)) << c.back() << " does not show the --mlp-width default:\n" << h;
    defaults.insert(m[1]);
  }
  EXPECT_EQ(defaults.size(), 1u) << "--mlp-width defaults differ between commands";
}

TEST(CliHelp, BenchOpShowsItsDefaults) {
  const std::string h = help_of({"bench", "op"});
  for (const char* d : {"--hidden INT:INT in [1 - 65536]=[4096,7168]", "--variant TEXT=both",
                        "--min-seconds FLOAT=0.2", "--graph-replays INT=20"}) {
    EXPECT_NE(h.find(d), std::string::npos) << d << ":\n" << h;
  }
  EXPECT_NE(h.find("--tokens INT:INT in [1 - 1048576]=[1,8,64"), std::string::npos) << h;  // the bound, then the default
  EXPECT_NE(h.find("default: cuda when a GPU is present, else cpu"), std::string::npos) << h;
}

// Every command says what it does and every option has a description.
TEST(CliHelp, EveryCommandAndOptionIsDescribed) {
  for (const auto& c : kCommands) {
    const std::string h = help_of(c);
    EXPECT_GT(h.find("Usage:"), 10u) << c.back() << " has no description:\n" << h;
    std::vector<std::string> lines;
    std::istringstream in(h.substr(h.find("Options:")));
    for (std::string line; std::getline(in, line) && (lines.empty() || !line.empty());) lines.push_back(line);
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (line.rfind("  -", 0) != 0) continue;  // a wrapped description
      const auto gap = line.find("  ", 2);
      const bool inline_text = gap != std::string::npos && line.find_first_not_of(' ', gap) != std::string::npos;
      const bool next_line = i + 1 < lines.size() && lines[i + 1].rfind("          ", 0) == 0;
      EXPECT_TRUE(inline_text || next_line) << c.back() << ": an option without a description: " << line;
    }
  }
}

}  // namespace
}  // namespace hcwarm
