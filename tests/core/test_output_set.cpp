// OutputSet: a command's output files land together or not at all, also when a
// rename fails midway (a directory where a file goes): the ones already renamed
// are undone, what they replaced comes back, and nothing staged is left.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "core/output_set.hpp"

namespace hcwarm::test {
namespace {
namespace fs = std::filesystem;

TEST(OutputSet, PublishesEveryFileAndReplacesOldOnes) {
  TempDir d;
  write_file(d / "b", "old b");
  {
    OutputSet out(d.path());
    out.add("a", "1");
    out.add("b", "2");
    EXPECT_EQ(dir_names(d.path()).size(), 2u);  // b and the staging directory: nothing published yet
    out.publish();
  }
  EXPECT_EQ(read_file(d / "a"), "1");
  EXPECT_EQ(read_file(d / "b"), "2");
  EXPECT_EQ(dir_names(d.path()), (std::vector<std::string>{"a", "b"}));
}

TEST(OutputSet, ARenameFailingMidwayUndoesTheOthers) {
  TempDir d;
  write_file(d / "a", "old a");  // replaced first, then restored
  fs::create_directory(d / "b");  // the second rename fails on it
  write_file(d / "b" / "inside", "kept");
  {
    OutputSet out(d.path());
    out.add("a", "new a");
    out.add("b", "new b");
    out.add("c", "new c");
    try {
      out.publish();
      FAIL() << "published over a directory";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Io);
      EXPECT_NE(e.message().find((d / "b").string()), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("no output was changed"), std::string::npos) << e.message();
    }
  }
  EXPECT_EQ(read_file(d / "a"), "old a");
  EXPECT_EQ(read_file(d / "b" / "inside"), "kept");
  EXPECT_FALSE(fs::exists(d / "c"));
  EXPECT_EQ(dir_names(d.path()), (std::vector<std::string>{"a", "b"}));  // no staging directory left
}

TEST(OutputSet, AnUnpublishedSetLeavesNothing) {
  TempDir d;
  {
    OutputSet out(d.path());
    out.add("a", "1");
  }
  EXPECT_TRUE(dir_names(d.path()).empty());
  EXPECT_THROW(OutputSet(d / "missing"), Error);
}

}  // namespace
}  // namespace hcwarm::test
