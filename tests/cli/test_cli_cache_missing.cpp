// `hcwarm cache ls | verify | prune | clear` on a directory that is not there:
// they say so and exit 2 instead of reporting an empty cache.
#include <gtest/gtest.h>

#include "common/test_util.hpp"

namespace hcwarm {
namespace {

using test::run_cli;
using test::TempDir;

TEST(CliCacheMissingDir, EveryMaintenanceCommandSaysItDoesNotExist) {
  TempDir dir;
  const std::string missing = (dir / "no-such-cache").string();
  for (const char* sub : {"ls", "verify", "prune", "clear"}) {
    for (const bool json : {false, true}) {
      std::vector<std::string> args{"cache", sub, "--cache-dir", missing};
      if (json) args.push_back("--json");
      const auto r = run_cli(args);
      EXPECT_EQ(r.exit_code, 2) << sub << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("cache directory " + missing + " does not exist"), std::string::npos)
          << sub << ": " << r.err;
      EXPECT_EQ(r.out.find("0 entries"), std::string::npos) << sub << ": " << r.out;
    }
  }
  // Nothing was created on the way.
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST(CliCacheMissingDir, TheDefaultDirectoryToo) {
  TempDir dir;
  const auto r = run_cli({"cache", "ls"}, {"HCWARM_CACHE_DIR=" + (dir / "later").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find((dir / "later").string() + " does not exist"), std::string::npos) << r.err;
}

TEST(CliCacheMissingDir, AFileIsNotACacheDirectory) {
  TempDir dir;
  test::write_file(dir / "file", "x");
  const auto r = run_cli({"cache", "ls", "--cache-dir", (dir / "file").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("is not a directory"), std::string::npos) << r.err;
}

TEST(CliCacheMissingDir, AnEmptyExistingDirectoryListsNothing) {
  TempDir dir;
  const auto r = run_cli({"cache", "ls", "--cache-dir", dir.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 entries"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hcwarm
