// Input files must be regular files of bounded size (never waited on), and
// outputs appear whole or not at all, never written through a planted link.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace hcwarm::test {
namespace {
namespace fs = std::filesystem;

void expect_invalid(const fs::path& p, const std::string& needle, uint64_t max_bytes = uint64_t{1} << 32) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    read_input_file(p, "test input", max_bytes);
    FAIL() << p << " was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(e.message().find(p.string()), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "refusing " << p << " took long";
}

TEST(FileIo, ReadsRegularFilesAndLinksToThem) {
  TempDir d;
  write_file(d / "a.txt", "hello");
  fs::create_symlink(d / "a.txt", d / "link");
  EXPECT_EQ(read_input_file(d / "a.txt", "x"), "hello");
  EXPECT_EQ(read_input_file(d / "link", "x"), "hello");
}

TEST(FileIo, RefusesFifosDevicesDirectoriesAndMissingFilesByName) {
  TempDir d;
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  expect_invalid(d / "fifo", "a FIFO");  // must not wait for a writer
  expect_invalid("/dev/zero", "a character device");  // must not read without end
  fs::create_symlink("/dev/zero", d / "zero");
  expect_invalid(d / "zero", "a character device");
  expect_invalid(d.path(), "a directory");
  expect_invalid(d / "missing", "No such file");
}

TEST(FileIo, RefusesFilesOverTheLimit) {
  TempDir d;
  write_file(d / "big", std::string(100, 'x'));
  EXPECT_EQ(read_input_file(d / "big", "x", 100).size(), 100u);
  expect_invalid(d / "big", "over the limit of 99 bytes", 99);
}

TEST(FileIo, OutputReplacesASymlinkInsteadOfWritingThroughIt) {
  TempDir d;
  write_file(d / "victim", "precious");
  fs::create_symlink(d / "victim", d / "out.json");
  write_output_file(d / "out.json", "{}");
  EXPECT_EQ(read_file(d / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(d / "out.json"));
  EXPECT_EQ(read_file(d / "out.json"), "{}");
  EXPECT_EQ(fs::status(d / "out.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

TEST(FileIo, FailedOutputLeavesNothingBehind) {
  TempDir d;
  fs::create_directory(d / "out.json");  // rename over a directory fails
  EXPECT_THROW(write_output_file(d / "out.json", "{}"), Error);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d.path())) ++files;
  EXPECT_EQ(files, 1);  // only the directory: no temporary left
  EXPECT_THROW(write_output_file(d / "no-such-dir" / "x", "{}"), Error);
}

}  // namespace
}  // namespace hcwarm::test
