// After the model runner's warmup, forwards through the whole mHC family (the
// first layer from the embedding, the boundaries, the head; the main model and
// the NextN draft; fused and unfused) compile nothing for any T in [1, M], and
// a family left out of warmup is caught by the first forward that needs it.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "model/deepseek_v4.hpp"
#include "runtime/model_runner.hpp"

namespace hcwarm::model {
namespace {

// hc 4 x D 256 on 8 SMs with M = 160: buckets 1..128 (4 splits) and 129..160
// (2 splits), both prefill and decode shapes, two kernels per input kind.
constexpr int64_t kMaxTokens = 160;

runtime::RunnerConfig runner_config(const test::TempDir& cache, const std::string& arch, bool fused) {
  runtime::RunnerConfig c;
  c.model = parse_model_config(R"({"architectures": [")" + arch + R"("], "hidden_size": 256, "hc_mult": 4,
                                   "num_hidden_layers": 2, "num_nextn_predict_layers": 1, "sliding_window": 128})",
                               "tiny.json");
  c.server_input.chunked_prefill_size = kMaxTokens;
  c.server_input.num_sms = 8;
  c.backend = mhc::Backend::Cpu;
  c.jit.cache_dir = cache.path();
  c.build.fused_boundaries = fused;
  c.mlp_width = 8;
  c.cpu_threads = 2;
  return c;
}

struct Case {
  const char* arch;
  bool fused;
};

class ModelWarmup : public ::testing::TestWithParam<Case> {};

TEST_P(ModelWarmup, EveryTokenCountAfterWarmupCompilesNothing) {
  test::TempDir cache;
  runtime::ModelRunner runner(runner_config(cache, GetParam().arch, GetParam().fused));
  const runtime::WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.token_counts, (std::vector<int64_t>{160, 128}));
  ASSERT_EQ(runner.max_num_tokens(), kMaxTokens);
  for (int64_t t = 1; t <= kMaxTokens; ++t) runner.forward(t);
  const jit::CompileStats s = runner.compile_stats();
  EXPECT_EQ(s.compiled, 0);
  EXPECT_EQ(s.compiles_after_ready, 0);
  EXPECT_EQ(s.loaded_from_disk, 0) << "every kernel a forward runs was loaded by warmup";
  EXPECT_EQ(s.served_by_generic, 0);
  EXPECT_EQ(s.waited_for_compile, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelWarmup,
                         ::testing::Values(Case{"DeepseekV4ForCausalLM", true}, Case{"DeepseekV4ForCausalLM", false},
                                           Case{"DeepseekV4ForCausalLMNextN", true},
                                           Case{"DeepseekV4ForCausalLMNextN", false}),
                         [](const auto& info) {
                           return std::string(info.param.arch) + (info.param.fused ? "_fused" : "_unfused");
                         });

// The first layer's kernels left out of the plan: the fused forward's first
// pre needs them, and under strict warmup the forward fails naming the kernel.
TEST(ModelWarmupMiss, FirstLayerFamilyLeftOutIsCaughtByTheForward) {
  test::TempDir cache;
  runtime::RunnerConfig c = runner_config(cache, "DeepseekV4ForCausalLM", /*fused=*/true);
  c.drop_families = {"mhc_pre_embed"};
  c.jit.strict_warmup = true;
  runtime::ModelRunner runner(c);
  runner.kernel_warmup();
  try {
    runner.forward(kMaxTokens);
    FAIL() << "a forward needing an unwarmed kernel ran";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("HCWARM_STRICT_WARMUP=1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("input=embed"), std::string::npos) << e.message();
  }
}

// Not strict: the miss is served (tiered) and counted, never silent.
TEST(ModelWarmupMiss, FirstLayerFamilyLeftOutIsCounted) {
  test::TempDir cache;
  runtime::RunnerConfig c = runner_config(cache, "DeepseekV4ForCausalLMNextN", /*fused=*/true);
  c.drop_families = {"mhc_pre_embed"};
  c.jit.tiered = false;
  runtime::ModelRunner runner(c);
  runner.kernel_warmup();
  for (int64_t t = 1; t <= kMaxTokens; ++t) runner.forward(t);
  // Warmup's own one-token forward met the 4-split bucket's embedding kernel
  // before the runtime was ready; serving compiles the 2-split one.
  EXPECT_EQ(runner.compiles_after_ready(), 1);
}

// A negative token count is refused by name before anything is allocated or run.
TEST(ModelWarmupPrewarm, NegativeTokenCountIsRefusedAndAllocatesNothing) {
  test::TempDir cache;
  runtime::ModelRunner runner(runner_config(cache, "DeepseekV4ForCausalLM", /*fused=*/true));
  auto& model = dynamic_cast<DeepseekV4ForCausalLM&>(runner.model());
  const size_t before = runner.device().memory_stats().current_bytes;
  const std::vector<int64_t> counts = {128, -3};
  try {
    model.layer(0).prewarm_mhc_token_counts(counts, runner.device());
    FAIL() << "a negative token count was prewarmed";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("-3"), std::string::npos) << e.message();
  }
  EXPECT_EQ(runner.device().memory_stats().current_bytes, before);
}

}  // namespace
}  // namespace hcwarm::model
