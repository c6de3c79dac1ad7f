// `hcwarm op ... --out DIR` publishes all its outputs or none: when a rename
// fails midway (a directory named post.npy in DIR), y.npy, renamed before it,
// is taken back and the file it replaced restored; nothing staged is left.
#include <gtest/gtest.h>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;

TEST(CliOpPublish, ARenameFailingMidwayPublishesNothing) {
  TempDir dir;
  const auto model = small_model(dir);
  write_hc_pre_inputs(dir / "in", 3, /*with_norm=*/false);
  const fs::path out = dir / "out";
  fs::create_directories(out / "post.npy");
  test::write_file(out / "y.npy", "previous y");
  const std::vector<std::string> args{"op", "hc-pre", "--model", model, "--in", (dir / "in").string(), "--out",
                                      out.string(), "--backend", "reference"};
  const auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((out / "post.npy").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no output was changed"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(out / "y.npy"), "previous y");
  EXPECT_EQ(test::dir_names(out), (std::vector<std::string>{"post.npy", "y.npy"}));  // no comb.npy, nothing staged

  fs::remove(out / "post.npy");
  const auto ok = run_cli(args);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(test::dir_names(out), (std::vector<std::string>{"comb.npy", "post.npy", "y.npy"}));
  EXPECT_EQ(read_npy_f32(out / "y.npy").shape(), Shape({3, 64}));
}

}  // namespace
}  // namespace hcwarm
