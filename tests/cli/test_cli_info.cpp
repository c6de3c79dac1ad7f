// `hcwarm info` on a machine without a GPU: what it finds, in words and as JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"

namespace hcwarm {
namespace {

namespace fs = std::filesystem;

const char* const kVariables[] = {
    "HCWARM_CACHE_DIR",   "HCWARM_CACHE_MAX_MB",   "HCWARM_CACHE_TRUST",       "HCWARM_STRICT_WARMUP",
    "HCWARM_MHC_PREWARM", "HCWARM_MHC_ONE_PASS",   "HCWARM_MHC_EARLY_FN", "HCWARM_MHC_ONE_WAVE", "HCWARM_CUDA_PORTABLE", "HCWARM_JIT",  "HCWARM_TIERED",               "HCWARM_LOCK_TIMEOUT_S",
    "HCWARM_COMPILE_TIMEOUT_S", "HCWARM_JOBS",     "HCWARM_CXX",               "HCWARM_NUM_SMS",
    "HCWARM_LOG_LEVEL",   "HCWARM_CUDA_LIBRARY",   "HCWARM_NVRTC_LIBRARY",     "CUDA_HOME",
    "HCWARM_LOCAL_WORLD_SIZE", "HCWARM_TORCH_CPP_OPS", "HCWARM_GROUP_TIMEOUT_S"};

TEST(CliInfo, WithoutAGpuSaysSoAndShowsCompilersCacheAndConfiguration) {
  TempDir dir;
  const std::string cache = (dir / "cache").string();
  ASSERT_EQ(run_cli(cat({"warm", "--json"}, tiny_model_args(dir))).exit_code, 0);  // one host namespace
  const std::vector<std::string> env{test::kNoGpu, "HCWARM_JOBS=3"};

  const auto text = run_cli({"info", "--cache-dir", cache}, env);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GPU: none"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/nonexistent/libcuda.so.1"), std::string::npos) << text.out;  // why
  EXPECT_NE(text.out.find("NVRTC:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host compiler:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("generic CUDA kernels: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(cache), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("writable"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("v" HCWARM_VERSION "/host-"), std::string::npos) << text.out;
  for (const char* v : kVariables) EXPECT_NE(text.out.find(v), std::string::npos) << v << ":\n" << text.out;
  EXPECT_NE(text.out.find("HCWARM_JOBS=3 (set)"), std::string::npos) << text.out;

  const auto r = run_cli({"info", "--json", "--cache-dir", cache}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hcwarm_version"], HCWARM_VERSION);
  EXPECT_TRUE(j["gpu"].is_null()) << j.dump(2);
  EXPECT_NE(j["gpu_unavailable"].get<std::string>().find("/nonexistent/libcuda.so.1"), std::string::npos);
  ASSERT_TRUE(j["nvrtc"].is_object());
  ASSERT_TRUE(j["generic_cuda_kernels"].is_boolean()) << j.dump(2);
  // The text and the JSON say the same.
  EXPECT_NE(text.out.find(j["generic_cuda_kernels"].get<bool>() ? "generic CUDA kernels: built in"
                                                                  : "generic CUDA kernels: none (built without nvcc)"),
            std::string::npos)
      << text.out;
  if (j["nvrtc"]["available"].get<bool>()) {
    EXPECT_NE(j["nvrtc"]["identity"].get<std::string>().find("nvrtc"), std::string::npos);
    EXPECT_FALSE(j["nvrtc"]["library"].get<std::string>().empty());
    const std::string version = j["nvrtc"]["version"].get<std::string>();
    EXPECT_TRUE(version.starts_with("12.") || version.starts_with("13.")) << version;
    EXPECT_TRUE(j["nvrtc"]["skipped"].is_array());
    EXPECT_NE(text.out.find("NVRTC: " + version + " at " + j["nvrtc"]["library"].get<std::string>()),
              std::string::npos)
        << text.out;
  } else {
    EXPECT_FALSE(j["nvrtc"]["error"].get<std::string>().empty());
  }
  ASSERT_TRUE(j["host_compiler"]["available"].get<bool>()) << j.dump(2);
  EXPECT_NE(j["host_compiler"]["identity"].get<std::string>().find("host-"), std::string::npos);
  EXPECT_EQ(j["host_compiler"]["command"], "c++");
  const auto& c = j["cache"];
  EXPECT_EQ(c["dir"], cache);
  EXPECT_TRUE(c["exists"].get<bool>());
  EXPECT_TRUE(c["usable"].get<bool>());
  EXPECT_TRUE(c["writable"].get<bool>());
  ASSERT_EQ(c["namespaces"].size(), 1u) << c.dump(2);
  EXPECT_EQ(c["namespaces"][0]["version"], HCWARM_VERSION);
  EXPECT_EQ(c["namespaces"][0]["entries"], 9);  // the tiny model's 3 buckets x (residual, embedding, boundary)
  EXPECT_EQ(c["namespaces"][0]["compiler"], "host");  // this machine's host compiler built them
  for (const char* v : kVariables) EXPECT_TRUE(j["config"].contains(v)) << v;
  EXPECT_EQ(j["config"]["HCWARM_JOBS"]["value"], "3");
  EXPECT_TRUE(j["config"]["HCWARM_JOBS"]["set"].get<bool>());
  EXPECT_FALSE(j["config"]["HCWARM_STRICT_WARMUP"]["set"].get<bool>());
  EXPECT_EQ(j["config"]["HCWARM_STRICT_WARMUP"]["value"], "0");
}

// The NVRTC search looks at $CUDA_HOME/lib64 first: a CUDA_HOME without one is
// named as skipped before the NVRTC taken (or in the error when there is none).
TEST(CliInfo, SaysWhereNvrtcWasLookedForBeforeTheOneTaken) {
  TempDir dir;
  const std::string home = (dir / "no-toolkit").string();
  const auto r = run_cli({"info", "--json"}, {test::kNoGpu, "CUDA_HOME=" + home});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& n = j["nvrtc"];
  if (n["available"].get<bool>()) {
    ASSERT_GE(n["skipped"].size(), 1u) << n.dump(2);
    EXPECT_EQ(n["skipped"][0]["candidate"], home + "/lib64/") << n.dump(2);
    EXPECT_EQ(n["skipped"][0]["reason"], "not present") << n.dump(2);
    const auto text = run_cli({"info"}, {test::kNoGpu, "CUDA_HOME=" + home});
    EXPECT_NE(text.out.find("  skipped before it: " + home + "/lib64/: not present"), std::string::npos) << text.out;
  } else {
    EXPECT_NE(n["error"].get<std::string>().find(home + "/lib64/: not present"), std::string::npos) << n.dump(2);
  }
}

TEST(CliInfo, SaysWhyNvrtcAndTheCacheAreUnavailable) {
  TempDir dir;
  const std::vector<std::string> env{test::kNoGpu, "HCWARM_NVRTC_LIBRARY=/nonexistent/libnvrtc.so",
                                     "HCWARM_CXX=/nonexistent/c++"};
  const auto r = run_cli({"info", "--json", "--cache-dir", (dir / "new").string()}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["nvrtc"]["available"].get<bool>());
  EXPECT_NE(j["nvrtc"]["error"].get<std::string>().find("/nonexistent/libnvrtc.so"), std::string::npos) << j.dump(2);
  EXPECT_FALSE(j["host_compiler"]["available"].get<bool>());
  EXPECT_NE(j["host_compiler"]["error"].get<std::string>().find("/nonexistent/c++"), std::string::npos) << j.dump(2);
  // A cache directory not created yet: usable, created on first use.
  EXPECT_FALSE(j["cache"]["exists"].get<bool>());
  EXPECT_TRUE(j["cache"]["writable"].get<bool>());
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));  // info creates nothing

  // A directory holding something else is not a cache.
  test::write_file(dir / "home" / "notes.txt", "mine");
  const auto other = nlohmann::json::parse(
      run_cli({"info", "--json", "--cache-dir", (dir / "home").string()}, {test::kNoGpu}).out);
  EXPECT_FALSE(other["cache"]["usable"].get<bool>());
  EXPECT_FALSE(other["cache"]["reason"].get<std::string>().empty());

  const auto off = nlohmann::json::parse(run_cli({"info", "--json"}, {test::kNoGpu, "HCWARM_CACHE_DIR="}).out);
  EXPECT_TRUE(off["cache"]["dir"].is_null()) << off.dump(2);
  EXPECT_FALSE(off["cache"]["usable"].get<bool>());
}

// A GPU below the kernels' floor (a stand-in driver's sm_75): `info` names it
// refused; a command that would serve on it fails at start-up naming the GPU and
// its target, with nothing compiled. An sm_86 one takes the portable forms.
TEST(CliInfo, AGpuBelowTheFloorIsRefusedAtStartUpAndAmpereTakesThePortableForms) {
  TempDir dir;
  const std::string driver = std::string("HCWARM_CUDA_LIBRARY=") + HCWARM_STAND_IN_CUDA;
  const std::vector<std::string> turing{driver, "HCWARM_STAND_IN_CC=75"};
  const auto info = run_cli({"info", "--json"}, turing);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  ASSERT_TRUE(j["gpu"].is_object()) << j.dump(2);
  EXPECT_EQ(j["gpu"]["arch"], "sm_75");
  EXPECT_NE(j["gpu"]["support"].get<std::string>().find("refused"), std::string::npos) << j.dump(2);

  const fs::path cache = dir / "cache";
  const auto warm = run_cli({"warm", "--backend", "cuda", "--model", "dsv4-flash", "--cache-dir", cache.string()}, turing);
  EXPECT_NE(warm.exit_code, 0) << warm.out;
  EXPECT_NE(warm.err.find("GPU hcwarm stand-in GPU sm_75 is not supported"), std::string::npos) << warm.err;
  EXPECT_NE(warm.err.find("sm_80 or newer"), std::string::npos) << warm.err;
  std::error_code ec;
  size_t files = 0;
  for (auto it = fs::recursive_directory_iterator(cache, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    files += it->is_regular_file() && it->path().extension() == ".cubin";
  }
  EXPECT_EQ(files, 0u) << "a kernel was compiled for a refused GPU";

  const auto ampere = nlohmann::json::parse(run_cli({"info", "--json"}, {driver, "HCWARM_STAND_IN_CC=86"}).out);
  EXPECT_EQ(ampere["gpu"]["arch"], "sm_86");
  EXPECT_EQ(ampere["gpu"]["kernel_forms"], "portable") << ampere.dump(2);
  EXPECT_NE(ampere["gpu"]["support"].get<std::string>().find("portable"), std::string::npos) << ampere.dump(2);
  // A Hopper stand-in: native forms, portable only when forced.
  const std::vector<std::string> hopper{driver, "HCWARM_STAND_IN_CC=90"};
  EXPECT_EQ(nlohmann::json::parse(run_cli({"info", "--json"}, hopper).out)["gpu"]["kernel_forms"], "native");
  auto forced = hopper;
  forced.push_back("HCWARM_CUDA_PORTABLE=1");
  EXPECT_EQ(nlohmann::json::parse(run_cli({"info", "--json"}, forced).out)["gpu"]["kernel_forms"], "portable");
}

}  // namespace
}  // namespace hcwarm
