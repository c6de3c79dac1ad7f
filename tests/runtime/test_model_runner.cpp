// The serving runtime end to end on the CPU backend, with real JIT compiles:
// warmup coverage, compiles during serving, the hook's conditions, the DP
// normalisation and the warmup memory peak.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "common/test_util.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/split_policy.hpp"
#include "model/nextn.hpp"
#include "runtime/model_runner.hpp"
#include "sim/replay.hpp"

namespace hcwarm::runtime {
namespace {
// The runner is exercised through the serving simulator (sim/) as the CLI uses it.
using namespace hcwarm::sim;

// hc 4 x D 256: K = 1024, split cap 4; with 8 SMs and 320 tokens the buckets are
// 1..128 (4 splits), 129..256 (2) and 257..320 (1): three kernels, compiled fast.
std::string tiny_config(const std::string& arch, bool hybrid) {
  return std::string(R"({"architectures": [")") + arch +
         R"("], "hidden_size": 256, "hc_mult": 4, "num_hidden_layers": 2, "num_nextn_predict_layers": 1)" +
         (hybrid ? R"(, "sliding_window": 128})" : "}");
}

// The forward's hc_pre keys per split bucket: the first layer's (from the
// embedding) and every other sublayer's (the fused boundary's input).
constexpr int kPreKeysPerBucket = 2;

RunnerConfig tiny_runner(const test::TempDir& cache, const std::string& arch = "DeepseekV4ForCausalLM",
                         bool hybrid = true) {
  RunnerConfig c;
  c.model = model::parse_model_config(tiny_config(arch, hybrid), "tiny.json");
  c.server_input.chunked_prefill_size = 320;
  c.server_input.num_sms = 8;
  c.backend = mhc::Backend::Cpu;
  c.jit.cache_dir = cache.path();
  c.mlp_width = 8;
  c.cpu_threads = 2;
  return c;
}

TEST(ModelRunner, AfterWarmupNoTokenCountCompiles) {
  test::TempDir cache;
  ModelRunner runner(tiny_runner(cache));
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.token_counts, (std::vector<int64_t>{320, 256, 128}));
  EXPECT_EQ(w.keys, 9);  // 3 buckets, each for the residual, the first layer's embedding and the boundary
  EXPECT_EQ(w.compiled, 9);
  EXPECT_TRUE(runner.jit().ready());
  EXPECT_TRUE(runner.jit().events().empty());  // warmup's events were reset
  for (int64_t t = 1; t <= runner.max_num_tokens(); ++t) runner.forward(t);
  EXPECT_EQ(runner.compiles_after_ready(), 0);
  EXPECT_EQ(runner.jit().stats().compiled, 0);
}

// compile_while_device_starts: the plan compiles into the disk cache before the
// device exists; warmup then finds every key there and still counts them as
// this process's compiles. A restart on that cache compiles nothing.
TEST(ModelRunner, CompilingWhileTheDeviceStartsCountsAsCompiledAndRestartsFromDisk) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.compile_while_device_starts = true;
  {
    ModelRunner runner(c);
    // The compiles run without a call to kernel_warmup.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (runner.jit().stats().compiled < 9 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(runner.jit().stats().compiled, 9);
    const WarmupReport w = runner.kernel_warmup();
    EXPECT_EQ(w.keys, 9);
    EXPECT_EQ(w.compiled, 9);
    EXPECT_EQ(w.loaded_from_disk, 0);
    for (int64_t t = 1; t <= runner.max_num_tokens(); ++t) runner.forward(t);
    EXPECT_EQ(runner.compiles_after_ready(), 0);
  }
  ModelRunner again(c);
  const WarmupReport w = again.kernel_warmup();
  EXPECT_EQ(w.compiled, 0);
  EXPECT_EQ(w.loaded_from_disk, 9);
}

// Without a disk cache there is nowhere to compile ahead to: warmup compiles as usual.
TEST(ModelRunner, CompilingWhileTheDeviceStartsNeedsADiskCache) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.jit.cache_dir.reset();
  c.compile_while_device_starts = true;
  ModelRunner runner(c);
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.compiled, 9);
  EXPECT_EQ(w.loaded_from_disk, 0);
}

TEST(ModelRunner, WithoutPrewarmOrTieringFirstForwardOfEachBucketCompilesDuringServing) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.jit.tiered = false;
  ModelRunner runner(c);
  EXPECT_FALSE(runner.tiered());
  const WarmupReport w = runner.kernel_warmup(/*prewarm=*/false);
  EXPECT_FALSE(w.ran);
  EXPECT_EQ(w.keys, 0);
  // Through the scheduler, as serving would: a JSONL trace whose batches meet every bucket.
  test::write_file(cache / "trace.jsonl",
                   "{\"arrival_s\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3}\n"
                   "{\"arrival_s\": 1, \"prompt_tokens\": 200, \"output_tokens\": 2}\n"
                   "{\"arrival_s\": 2, \"prompt_tokens\": 300, \"output_tokens\": 2}\n"
                   "{\"arrival_s\": 3, \"prompt_tokens\": 100, \"output_tokens\": 2}\n");
  const RunReport report = replay(runner, read_trace(cache / "trace.jsonl"), {}, "no prewarm", w);
  std::set<int> first_seen;
  int64_t total = 0;
  for (const ForwardRecord& r : report.records) {
    const bool first = first_seen.insert(r.num_splits).second;
    EXPECT_EQ(r.compiles_during, first ? kPreKeysPerBucket : 0)
        << "forward " << r.index << " (" << r.num_tokens << " tokens)";
    // The forward that compiled waited for its compiles, and only that one.
    EXPECT_EQ(r.waited_for_compile, first ? kPreKeysPerBucket : 0) << "forward " << r.index;
    if (first) EXPECT_GT(r.compile_wait_s, 0.0) << "forward " << r.index;
    EXPECT_EQ(r.served_by_generic, 0);
    total += r.compiles_during;
  }
  // How many buckets the batches meet depends on how long each compile stalls
  // the simulated clock (a slow machine batches more): count what was met.
  const auto met = static_cast<int64_t>(first_seen.size());
  EXPECT_GE(met, 1);
  EXPECT_LE(met, 3);
  EXPECT_EQ(total, kPreKeysPerBucket * met);
  EXPECT_EQ(runner.compiles_after_ready(), kPreKeysPerBucket * met);
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["compiles_after_ready"], kPreKeysPerBucket * met);
  EXPECT_EQ(j["forwards_with_compiles"], met);
  for (const auto& e : runner.jit().events()) {
    if (e.source == jit::ArtifactSource::Compiled) EXPECT_EQ(e.phase, jit::Phase::Serving) << e.description;
  }
}

TEST(ModelRunner, StrictModeMakesAServingCompileAnError) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.jit.strict_warmup = true;
  ASSERT_TRUE(c.jit.tiered);  // tiering does not apply in strict mode
  ModelRunner runner(c);
  EXPECT_FALSE(runner.tiered());
  runner.kernel_warmup(/*prewarm=*/false);
  try {
    runner.forward(5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("HCWARM_STRICT_WARMUP=1"), std::string::npos) << e.message();
  }
  EXPECT_EQ(runner.compile_stats().served_by_generic, 0);
}

TEST(ModelRunner, NoJitModeKeepsItsNotWarmedErrorWithTieringOn) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.jit.allow_compile = false;
  ASSERT_TRUE(c.jit.tiered);
  ModelRunner runner(c);
  EXPECT_FALSE(runner.tiered());
  runner.kernel_warmup(/*prewarm=*/false);
  try {
    runner.forward(5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.message();
    EXPECT_NE(e.message().find("HCWARM_JIT=off"), std::string::npos) << e.message();
  }
}

// Prewarm off, tiering on: every T in [1, M] and a mixed trace run without a
// single call waiting for a compile; the worker compiles each bucket once, and
// after it drains every bucket runs its specialized kernels.
TEST(ModelRunner, TieredWithoutPrewarmNoForwardWaitsForACompile) {
  test::TempDir cache;
  ModelRunner runner(tiny_runner(cache));
  ASSERT_TRUE(runner.tiered());
  runner.kernel_warmup(/*prewarm=*/false);
  for (int64_t t = 1; t <= runner.max_num_tokens(); ++t) runner.forward(t);
  test::write_file(cache / "trace.jsonl",
                   "{\"arrival_s\": 0, \"prompt_tokens\": 10, \"output_tokens\": 3}\n"
                   "{\"arrival_s\": 0.001, \"prompt_tokens\": 200, \"output_tokens\": 4}\n"
                   "{\"arrival_s\": 0.002, \"prompt_tokens\": 300, \"output_tokens\": 2}\n"
                   "{\"arrival_s\": 0.5, \"prompt_tokens\": 100, \"output_tokens\": 5}\n");
  const RunReport report = replay(runner, read_trace(cache / "trace.jsonl"), {}, "tiered", {});
  const LatencySummary s = summarize(report.records);
  EXPECT_EQ(s.forwards_waited_for_compile, 0);
  EXPECT_EQ(s.compile_wait_s, 0.0);
  EXPECT_EQ(s.compiles_during_forwards, 0);
  const jit::CompileStats st = runner.compile_stats();  // replay drained the worker
  EXPECT_EQ(st.waited_for_compile, 0);
  EXPECT_GT(st.served_by_generic, 0);
  constexpr int kKeys = 3 * kPreKeysPerBucket;  // each of the three buckets' keys once
  EXPECT_EQ(st.background_compiled, kKeys);
  EXPECT_EQ(st.compiled, kKeys);
  EXPECT_EQ(st.background_failed, 0);
  EXPECT_EQ(report.extra["background_compiled"], kKeys);
  // Every compile ran in the worker: none in a call's own path.
  EXPECT_EQ(runner.background_compiles_after_ready(), kKeys);
  EXPECT_EQ(report.extra["background_compiles_after_ready"], kKeys);
  EXPECT_EQ(runner.compiles_after_ready(), 0);
  // The next call of each bucket swaps in its specialization; from then on no generic call.
  for (const int64_t t : {320, 256, 128}) runner.forward(t);
  for (int64_t t = 1; t <= runner.max_num_tokens(); ++t) {
    for (const mhc::HcPreInput input : {mhc::HcPreInput::Embed, mhc::HcPreInput::Post}) {
      ASSERT_TRUE(runner.hc_pre().specialized_loaded(t, /*fused_norm=*/true, input))
          << "T=" << t << " input=" << mhc::to_string(input);
    }
  }
  const int64_t generic_before = runner.compile_stats().served_by_generic;
  for (int64_t t = 1; t <= runner.max_num_tokens(); t += 7) runner.forward(t);
  EXPECT_EQ(runner.compile_stats().served_by_generic, generic_before);
  EXPECT_EQ(runner.compile_stats().compiled, kKeys);
}

// The demo's workload shape (synthetic trace, chunked prefill) after prewarm: the
// runtime's counters say no call waited (the timing heuristic is the demo's check).
TEST(ModelRunner, PrewarmedReplayOfTheDemoWorkloadNeverWaits) {
  test::TempDir cache;
  ModelRunner runner(tiny_runner(cache));
  const WarmupReport w = runner.kernel_warmup();
  const RunReport report = replay(runner, load_trace("synthetic:n=40"), {}, "prewarm", w);
  const LatencySummary s = summarize(report.records);
  EXPECT_GT(s.forwards, 40);
  EXPECT_EQ(s.forwards_waited_for_compile, 0);
  EXPECT_EQ(s.served_by_generic, 0);
  EXPECT_EQ(s.compiles_during_forwards, 0);
  EXPECT_EQ(runner.compile_stats().background_compiled, 0);
}

TEST(ModelRunner, NextNModelWarmsThroughItsDecoderLayer) {
  test::TempDir cache;
  ModelRunner runner(tiny_runner(cache, "DeepseekV4ForCausalLMNextN"));
  auto* nextn = dynamic_cast<model::DeepseekV4ForCausalLMNextN*>(&runner.model());
  ASSERT_NE(nextn, nullptr);
  EXPECT_EQ(nextn->num_layers(), 1);
  EXPECT_EQ(nextn->layer(0).decoder().layer_id(), 2);  // numbered after the main layers, as upstream
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.token_counts, (std::vector<int64_t>{320, 256, 128}));
  EXPECT_EQ(nextn->warmed_token_counts(), w.token_counts);
  // The delegation itself: the draft layer reports what the inner decoder warmed.
  EXPECT_EQ(nextn->layer(0).prewarm_mhc_token_count_buckets(100, runner.device()), (std::vector<int64_t>{100}));
}

void expect_hook_skipped(RunnerConfig c) {
  ModelRunner runner(c);
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_TRUE(w.token_counts.empty());
  EXPECT_EQ(w.keys, 0);  // and the framework warmup planned no mHC keys either
}

TEST(ModelRunner, HookSkipsWhenFastPathIsOff) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.backend = mhc::Backend::Reference;
  expect_hook_skipped(c);
}

TEST(ModelRunner, HookSkipsWithoutHybridSlidingWindow) {
  test::TempDir cache;
  expect_hook_skipped(tiny_runner(cache, "DeepseekV4ForCausalLM", /*hybrid=*/false));
}

TEST(ModelRunner, HookSkipsWithPrewarmDisabledByEnvironment) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.env = EnvConfig::from_map({{"HCWARM_MHC_PREWARM", "0"}});
  expect_hook_skipped(c);
}

TEST(ModelRunner, DpAttentionPlanCoversPerRankTokens) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.server_input.chunked_prefill_size = 16384;
  c.server_input.dp_size = 2;
  c.server_input.enable_dp_attention = true;
  ModelRunner runner(c);
  EXPECT_EQ(runner.server_args().max_num_tokens(), 8192);
  const WarmupReport w = runner.kernel_warmup();
  EXPECT_EQ(w.token_counts, mhc::representatives(8192, 1024, 8));
  EXPECT_EQ(w.token_counts.front(), 8192);
}

// Each bucket is warmed on one token with its own kernels: the peak does not
// follow the chunk. At 65536 tokens the buckets (and keys) are those of 320, and
// buffers at the largest count would take 65536 x 1024 x 2 = 128 MiB of residual alone.
TEST(ModelRunner, WarmupMemoryPeakDoesNotGrowWithTheChunk) {
  test::TempDir cache;
  RunnerConfig c = tiny_runner(cache);
  c.server_input.chunked_prefill_size = 65536;
  c.build.num_layers = 1;
  ModelRunner runner(c);
  const WarmupReport w = runner.kernel_warmup();
  ASSERT_EQ(w.token_counts, (std::vector<int64_t>{65536, 256, 128}));
  EXPECT_EQ(w.keys, 9);
  // The device's buffers: one token's, and the op's split workspace for the largest call (4 MiB).
  EXPECT_LT(w.peak_device_bytes, size_t{16} << 20);
  // The process's resident set above the runner's own, sampled and from its high-water mark.
  EXPECT_LT(w.peak_bytes, size_t{48} << 20);
  // What the warmup proves is kept: every planned kernel loaded, each bucket's real calls compile nothing.
  const CoverageReport cov = runner.check_coverage();
  EXPECT_TRUE(cov.ok()) << cov.missing.size();
  for (const int64_t t : {int64_t{1}, int64_t{128}, int64_t{129}, int64_t{256}, int64_t{257}, int64_t{65536}}) {
    runner.forward(t);
  }
  EXPECT_EQ(runner.compiles_after_ready(), 0);
}

}  // namespace
}  // namespace hcwarm::runtime
