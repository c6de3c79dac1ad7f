// `hcwarm cache check` against a cache built by another NVRTC release: every
// key misses (a key holds its NVRTC's full version), and check names the NVRTC
// the entries were built with and the one running here. Builds with NVRTC 12.9
// from the .venv's nvidia-cuda-nvrtc-cu12 wheel, checks with the toolkit's 13.x;
// no GPU is needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;

TEST(CliCacheCheckNvrtc, ABundleOfAnotherNvrtcReleaseIsNamedWithTheRunningOne) {
  const std::string nvrtc12 = test::wheel_nvrtc12(), nvrtc13 = "/usr/local/cuda/lib64/libnvrtc.so.13";
  if (nvrtc12.empty()) GTEST_SKIP() << "NVRTC 12.x wheel not installed in " HCWARM_SOURCE_DIR "/.venv";
  if (!fs::exists(nvrtc13)) GTEST_SKIP() << "no CUDA 13 toolkit NVRTC at " << nvrtc13;
  TempDir dir;
  auto args = test::tiny_model_args(dir);
  for (auto& a : args) {
    if (a == "cpu") a = "cuda";
  }
  const auto built = run_cli(test::cat({"cache", "build"}, args), {test::kNoGpu, "HCWARM_NVRTC_LIBRARY=" + nvrtc12});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;

  // The same NVRTC: everything present.
  const auto same = run_cli(test::cat({"cache", "check"}, args), {test::kNoGpu, "HCWARM_NVRTC_LIBRARY=" + nvrtc12});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(same.out.find("was built with"), std::string::npos) << same.out;

  // Another: all missing, and the note names both versions.
  const std::vector<std::string> env13{test::kNoGpu, "HCWARM_NVRTC_LIBRARY=" + nvrtc13};
  const auto text = run_cli(test::cat({"cache", "check"}, args), env13);
  EXPECT_EQ(text.exit_code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("/nvrtc-12.9-"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("was built with nvrtc 12.9 ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not with this machine's nvrtc 13."), std::string::npos) << text.out;

  const auto r = run_cli(test::cat({"cache", "check", "--json"}, args), env13);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["present"], 0);
  EXPECT_EQ(j["compiler"].get<std::string>().rfind("nvrtc 13.", 0), 0u) << j.dump(2);
  ASSERT_EQ(j["other_compilers"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["other_compilers"][0]["compiler"].get<std::string>().rfind("nvrtc 12.9 (", 0), 0u) << j.dump(2);
  EXPECT_EQ(j["other_compilers"][0]["entries"], j["keys"]);
}

}  // namespace
}  // namespace hcwarm
