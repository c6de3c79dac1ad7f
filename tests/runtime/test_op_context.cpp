// runtime::OpContext on the CPU backend: prewarm's plan and report, every bucket
// loaded afterwards, the no-JIT rule, and bad workspaces refused.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "model/model_config.hpp"
#include "runtime/op_context.hpp"

namespace hcwarm::test {
namespace {

// hidden 1024, 16 SMs: 7 split buckets in [1, 600].
model::ModelConfig small_model() {
  return model::parse_model_config(
      R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4,
          "num_hidden_layers": 1, "sliding_window": 128})",
      "small");
}

runtime::OpContextOptions cpu_options(const TempDir& dir, bool allow_compile = true) {
  runtime::OpContextOptions o;
  o.backend = mhc::Backend::Cpu;
  o.num_sms = 16;
  o.jit.cache_dir = dir.path();
  o.jit.allow_compile = allow_compile;
  return o;
}

runtime::PrewarmRequest request(int64_t chunked_prefill) {
  runtime::PrewarmRequest r;
  r.model = small_model();
  r.server.chunked_prefill_size = chunked_prefill;
  return r;
}

TEST(OpContext, PrewarmLoadsEveryBucketOfTheRangeAndMarksReady) {
  TempDir dir;
  runtime::OpContext ctx(cpu_options(dir));
  const auto r = ctx.prewarm(request(600));
  EXPECT_EQ(r.max_num_tokens, 600);
  EXPECT_EQ(r.num_sms, 16);
  EXPECT_EQ(r.token_counts, (std::vector<int64_t>{600, 512, 320, 256, 192, 128, 64}));
  // 7 buckets, each for residual streams, the first layer's embedding and the sublayer boundary
  EXPECT_EQ(r.keys, 21);
  EXPECT_EQ(r.compiled, 21);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_TRUE(ctx.jit().ready());
  auto& op = ctx.hc_pre(small_model().mhc_dims(), small_model().mhc_constants());
  for (int64_t t = 1; t <= 600; ++t) {
    ASSERT_TRUE(op.loaded(t, /*fused_norm=*/true)) << "T=" << t;
    ASSERT_TRUE(op.loaded(t, /*fused_norm=*/true, mhc::HcPreInput::Embed)) << "embed T=" << t;
    ASSERT_TRUE(op.specialized_loaded(t, /*fused_norm=*/true, mhc::HcPreInput::Post)) << "post T=" << t;
  }
  EXPECT_FALSE(op.loaded(1, /*fused_norm=*/false)) << "calls without a norm weight were not planned";
  EXPECT_EQ(ctx.compiles_after_ready(), 0);
  // Each bucket ran on one token: the peak above the context's own is the build's and the loads', small.
  EXPECT_LT(r.peak_bytes, size_t{64} << 20);
}

// Every DeepSeek V4 layer runs hc_pre whatever its attention: a config without
// sliding_window gets the same keys, and its defaults are reported.
TEST(OpContext, PrewarmPlansTheMhcKeysWithoutSlidingWindowAndReportsDefaults) {
  TempDir dir;
  runtime::OpContext ctx(cpu_options(dir));
  auto req = request(600);
  req.model = model::parse_model_config(
      R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 1024, "hc_mult": 4, "num_hidden_layers": 1})",
      "no-swa");
  ASSERT_FALSE(req.model.is_hybrid_swa());
  const auto r = ctx.prewarm(req);
  EXPECT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_EQ(r.keys, 21);
  EXPECT_EQ(r.token_counts, (std::vector<int64_t>{600, 512, 320, 256, 192, 128, 64}));
  EXPECT_EQ(r.defaults, req.model.defaulted_fields);
  EXPECT_EQ(r.defaults.back(), "sliding_window=none");
  const auto swa = ctx.prewarm(request(600)).defaults;  // small_model() gives sliding_window
  EXPECT_EQ(swa, (std::vector<std::string>(r.defaults.begin(), r.defaults.end() - 1)));
}

TEST(OpContext, PrewarmOptOutIsReportedAsSkipped) {
  TempDir dir;
  auto o = cpu_options(dir);
  o.env = EnvConfig::from_map({{"HCWARM_MHC_PREWARM", "0"}});
  runtime::OpContext ctx(o);
  const auto r = ctx.prewarm(request(600));
  EXPECT_NE(r.skipped.find("HCWARM_MHC_PREWARM=0"), std::string::npos) << r.skipped;
  EXPECT_EQ(ctx.prewarm_skipped(), r.skipped);
  EXPECT_TRUE(r.token_counts.empty());
  EXPECT_EQ(r.keys, 0);
}

TEST(OpContext, PrewarmWithNeitherNormKindIsRefused) {
  TempDir dir;
  runtime::OpContext ctx(cpu_options(dir));
  auto req = request(600);
  req.fused_norm = false;
  try {
    ctx.prewarm(req);
    FAIL() << "a prewarm of nothing marked the runtime ready";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
  }
  EXPECT_FALSE(ctx.jit().ready());
}

// One hc_pre call without a norm weight (which the plan leaves out) after prewarm.
void run_unplanned_call(runtime::OpContext& ctx) {
  const auto m = small_model();
  auto& op = ctx.hc_pre(m.mhc_dims(), m.mhc_constants());
  const int64_t T = 3;
  const mhc::MhcDims d = m.mhc_dims();
  std::vector<bf16> residual(T * d.k()), y(T * d.hidden);
  std::vector<float> fn(d.mix() * d.k()), scale(3), base(d.mix()), post(T * d.hc_mult), comb(T * 16);
  const mhc::HcPreArgs a{T, residual.data(), fn.data(), scale.data(), base.data(), nullptr, y.data(), post.data(),
                         comb.data()};
  op.run(a);
}

TEST(OpContext, CompilesAfterReadyAreCountedWhereTheyRan) {
  TempDir dir;
  {
    runtime::OpContext ctx(cpu_options(dir));  // tiered: the background worker compiles the miss
    ctx.prewarm(request(64));
    run_unplanned_call(ctx);
    ctx.jit().drain_background();
    EXPECT_EQ(ctx.background_compiles_after_ready(), 1);
    EXPECT_EQ(ctx.compiles_after_ready(), 0);
  }
  TempDir fresh;
  auto o = cpu_options(fresh);
  o.jit.tiered = false;  // the call compiles its miss itself
  runtime::OpContext ctx(o);
  ctx.prewarm(request(64));
  run_unplanned_call(ctx);
  EXPECT_EQ(ctx.compiles_after_ready(), 1);
  EXPECT_EQ(ctx.background_compiles_after_ready(), 0);
}

TEST(OpContext, DataParallelAttentionDividesTheRangeOnce) {
  TempDir dir;
  runtime::OpContext ctx(cpu_options(dir));
  auto req = request(1024);
  req.server.dp_size = 4;
  req.server.enable_dp_attention = true;
  EXPECT_EQ(ctx.prewarm(req).max_num_tokens, 256);
}

TEST(OpContext, NoJitModeRefusesWhatTheCacheLacksThenServesFromIt) {
  TempDir dir;
  {
    runtime::OpContext ctx(cpu_options(dir, /*allow_compile=*/false));
    try {
      ctx.prewarm(request(128));
      FAIL() << "prewarm compiled with allow_compile off";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.what();
      EXPECT_NE(e.message().find("HCWARM_JIT=off"), std::string::npos) << e.message();
    }
  }
  { runtime::OpContext(cpu_options(dir)).prewarm(request(128)); }
  runtime::OpContext ctx(cpu_options(dir, /*allow_compile=*/false));
  const auto r = ctx.prewarm(request(128));
  EXPECT_EQ(r.compiled, 0);
  EXPECT_EQ(r.loaded_from_disk, r.keys);
}

TEST(OpContext, WorkspaceSizeAndAlignmentAreChecked) {
  TempDir dir;
  runtime::OpContext ctx(cpu_options(dir));
  ctx.prewarm(request(64));
  const auto m = small_model();
  auto& op = ctx.hc_pre(m.mhc_dims(), m.mhc_constants());
  const int64_t T = 3;
  const mhc::MhcDims d = m.mhc_dims();
  std::vector<bf16> residual(T * d.k()), w(d.hidden), y(T * d.hidden);
  std::vector<float> fn(d.mix() * d.k()), scale(3), base(d.mix()), post(T * d.hc_mult), comb(T * 16);
  mhc::HcPreArgs a{T, residual.data(), fn.data(), scale.data(), base.data(), w.data(), y.data(), post.data(),
                   comb.data()};
  const size_t need = op.workspace_bytes(T);
  ASSERT_GT(need, 0u);
  std::vector<float> ws(need / sizeof(float) + 8);
  op.run(a, {std::nullopt, ws.data(), need});  // exactly enough
  try {
    op.run(a, {std::nullopt, ws.data(), need - 4});
    FAIL() << "a short workspace was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("workspace"), std::string::npos);
  }
  EXPECT_THROW(op.run(a, {std::nullopt, reinterpret_cast<char*>(ws.data()) + 4, need}), Error);
}

}  // namespace
}  // namespace hcwarm::test
