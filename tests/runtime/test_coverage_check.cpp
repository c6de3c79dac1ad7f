// The coverage check after warmup (runtime/coverage_check.hpp) on the CPU
// backend with real JIT compiles: it passes after a full warmup, and names the
// kernels of a family left out of the plan, without compiling them.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "runtime/model_runner.hpp"

namespace hcwarm::runtime {
namespace {

// hc 4 x D 256 with 8 SMs and 320 tokens: three split buckets (4, 2 and 1 splits).
RunnerConfig tiny(const test::TempDir& cache) {
  RunnerConfig c;
  c.model = model::parse_model_config(
      R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256, "hc_mult": 4, "num_hidden_layers": 2,
          "num_nextn_predict_layers": 1, "sliding_window": 128})",
      "tiny.json");
  c.server_input.chunked_prefill_size = 320;
  c.server_input.num_sms = 8;
  c.backend = mhc::Backend::Cpu;
  c.jit.cache_dir = cache.path();
  c.mlp_width = 8;
  c.cpu_threads = 2;
  c.build.num_layers = 1;
  return c;
}

TEST(CoverageCheck, PassesAfterWarmup) {
  test::TempDir cache;
  ModelRunner runner(tiny(cache));
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.keys, 9) << "3 buckets x (residual, embedding, boundary)";
  const CoverageReport r = runner.check_coverage();
  EXPECT_TRUE(r.ok()) << (r.missing.empty() ? "" : r.missing.front());
  EXPECT_EQ(r.token_counts, (std::vector<int64_t>{257, 129, 1}));  // the smallest T of each bucket
  EXPECT_EQ(r.calls, 3 * 5) << "per bucket: hc_pre x 3 inputs, hc_post, hc_head";
  EXPECT_EQ(runner.compiles_after_ready(), 0);
  EXPECT_EQ(runner.jit().stats().loaded_from_disk, 0);
  // Compiling is switched back on after the check.
  EXPECT_NO_THROW(runner.jit().get(runner.hc_pre().kernel_spec(3, false)));
}

TEST(CoverageCheck, FailsNamingTheKernelsOfAFamilyLeftOutOfThePlan) {
  test::TempDir cache;
  RunnerConfig c = tiny(cache);
  c.drop_families = {"mhc_pre_embed"};
  ModelRunner runner(c);
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.keys, 6);
  const CoverageReport r = runner.check_coverage();
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.missing.size(), 3u) << "one per bucket of the embedding's hc_pre";
  for (const int s : {1, 2, 4}) {
    const std::string needle = "mhc_pre (input=embed, fused norm) num_splits=" + std::to_string(s);
    EXPECT_TRUE(std::any_of(r.missing.begin(), r.missing.end(),
                            [&](const std::string& m) { return m.find(needle) != std::string::npos; }))
        << needle;
  }
  EXPECT_EQ(runner.jit().stats().compiled, 0) << "the check compiles nothing";
}

TEST(CoverageCheck, FailsNamingTheBoundaryKernelsWhenTheirFamilyIsLeftOut) {
  test::TempDir cache;
  RunnerConfig c = tiny(cache);
  c.drop_families = {"mhc_post_pre"};
  ModelRunner runner(c);
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.keys, 6) << "3 buckets x (residual, embedding)";
  const CoverageReport r = runner.check_coverage();
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.missing.size(), 3u) << "one per bucket of the fused sublayer boundary";
  for (const int s : {1, 2, 4}) {
    const std::string needle = "mhc_post_pre (input=post, fused norm) num_splits=" + std::to_string(s);
    EXPECT_TRUE(std::any_of(r.missing.begin(), r.missing.end(),
                            [&](const std::string& m) { return m.find(needle) != std::string::npos; }))
        << needle;
  }
  EXPECT_EQ(runner.jit().stats().compiled, 0) << "the check compiles nothing";
}

TEST(CoverageCheck, CliWarmCheckPassesAfterWarmup) {
  test::TempDir cache;
  const auto ok = test::run_cli({"warm", "--model", "dsv4-flash", "--backend", "cpu", "--num-sms", "132",
                                 "--chunked-prefill-size", "64", "--cache-dir", cache.path().string(), "--check",
                                 "--mlp-width", "8"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("every kernel was warmed"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace hcwarm::runtime
