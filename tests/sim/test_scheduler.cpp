#include "sim/scheduler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace hcwarm::sim {
namespace {

SchedulerConfig cfg(int64_t budget, int64_t max_running = 256, bool mix = true) {
  SchedulerConfig c;
  c.chunked_prefill_size = budget;
  c.max_running_requests = max_running;
  c.mix_decode_with_prefill = mix;
  return c;
}

std::vector<Batch> collect(Scheduler& s, double seconds = 1.0) {
  std::vector<Batch> out;
  s.run([&](const Batch& b) {
    out.push_back(b);
    return seconds;
  });
  return out;
}

TEST(SchedulerTest, ChunksPrefillThenDecodes) {
  Scheduler s(cfg(4), {{7, 0.0, 10, 3}});
  const auto batches = collect(s);
  ASSERT_EQ(batches.size(), 5u);  // 4 + 4 + 2 prefill, then 2 decode (the prefill made token 1)
  EXPECT_EQ(batches[0].num_tokens, 4);
  EXPECT_EQ(batches[1].num_tokens, 4);
  EXPECT_EQ(batches[1].entries[0].start_pos, 4);
  EXPECT_EQ(batches[2].num_tokens, 2);
  EXPECT_TRUE(batches[2].entries[0].is_prefill);
  EXPECT_EQ(batches[3].num_tokens, 1);
  EXPECT_FALSE(batches[3].entries[0].is_prefill);
  EXPECT_EQ(batches[3].entries[0].start_pos, 10);
  EXPECT_EQ(batches[4].entries[0].start_pos, 11);
  const ReplayResult r = s.result();
  EXPECT_EQ(r.forwards, 5);
  EXPECT_EQ(r.completed_requests, 1);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, 3.0);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, 5.0);
  EXPECT_EQ(r.requests[0].id, 7);
  EXPECT_EQ(r.requests[0].output_tokens, 3);
}

TEST(SchedulerTest, MixesDecodeWithPrefillChunks) {
  // A decodes while B prefills in chunks: each batch = A's 1 token + B's chunk.
  Scheduler s(cfg(8), {{0, 0.0, 2, 4}, {1, 0.5, 20, 1}});
  const auto b = collect(s);
  ASSERT_GE(b.size(), 3u);
  EXPECT_EQ(b[0].num_tokens, 2);  // A's prompt
  EXPECT_EQ(b[1].decode_tokens, 1);
  EXPECT_EQ(b[1].prefill_tokens, 7);
  EXPECT_EQ(b[1].num_tokens, 8);
  EXPECT_FALSE(b[1].entries[0].is_prefill);  // decode entries come first
  EXPECT_TRUE(b[1].entries[1].is_prefill);
  EXPECT_EQ(b[2].decode_tokens, 1);
  EXPECT_EQ(b[2].prefill_tokens, 7);
}

TEST(SchedulerTest, PrefillOnlyStepsWhenNotMixing) {
  Scheduler s(cfg(8, 256, false), {{0, 0.0, 2, 4}, {1, 0.5, 20, 1}});
  for (const auto& b : collect(s)) EXPECT_TRUE(b.decode_tokens == 0 || b.prefill_tokens == 0) << b.index;
  EXPECT_TRUE(s.done());
}

TEST(SchedulerTest, IdleClockJumpsToNextArrival) {
  Scheduler s(cfg(64), {{0, 100.0, 5, 1}, {1, 250.0, 5, 2}});
  const auto b = collect(s, 0.25);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b[0].time_s, 100.0);
  EXPECT_DOUBLE_EQ(b[1].time_s, 250.0);
  EXPECT_DOUBLE_EQ(b[2].time_s, 250.25);
  EXPECT_DOUBLE_EQ(s.now(), 250.5);
}

TEST(SchedulerTest, ArrivalsWaitForTheClock) {
  // B arrives at 1.5 s; forwards take 1 s, so B first appears in the batch starting at 2 s.
  Scheduler s(cfg(64), {{0, 0.0, 4, 10}, {1, 1.5, 4, 1}});
  const auto b = collect(s);
  for (const auto& batch : b) {
    for (const auto& e : batch.entries) {
      if (e.request_id == 1) {
        EXPECT_GE(batch.time_s, 1.5);
      }
    }
  }
  EXPECT_EQ(b[2].prefill_tokens, 4);
  EXPECT_DOUBLE_EQ(b[2].time_s, 2.0);
}

TEST(SchedulerTest, MaxRunningRequestsLimitsAdmission) {
  Scheduler s(cfg(100, 1), {{0, 0.0, 3, 2}, {1, 0.0, 3, 2}, {2, 0.0, 3, 2}});
  const auto b = collect(s);
  ASSERT_EQ(b.size(), 6u);
  for (const auto& batch : b) EXPECT_EQ(batch.entries.size(), 1u);
  EXPECT_EQ(b[2].entries[0].request_id, 1);
}

TEST(SchedulerTest, ZeroOrOneOutputTokenFinishesAtPrefill) {
  Scheduler s(cfg(16), {{0, 0.0, 5, 0}, {1, 0.0, 5, 1}});
  EXPECT_EQ(collect(s).size(), 1u);
  EXPECT_EQ(s.result().completed_requests, 2);
}

TEST(SchedulerTest, ConservesTokensAndIsDeterministic) {
  SyntheticTraceConfig c;
  c.num_requests = 300;
  c.arrival_rate_per_s = 50;
  const auto reqs = synthetic_trace(c);
  int64_t prompt = 0, decode = 0;
  for (const auto& r : reqs) {
    prompt += r.prompt_tokens;
    decode += std::max<int64_t>(0, r.output_tokens - 1);
  }
  // Latency grows with the batch, so the schedule depends on the callback.
  auto cost = [](const Batch& b) { return 0.004 + 2e-6 * static_cast<double>(b.num_tokens); };
  Scheduler s1(cfg(2048, 64), reqs);
  std::vector<int64_t> sizes;
  const ReplayResult r1 = s1.run([&](const Batch& b) {
    EXPECT_GT(b.num_tokens, 0);
    EXPECT_LE(b.num_tokens, 2048);
    EXPECT_EQ(b.num_tokens, b.decode_tokens + b.prefill_tokens);
    sizes.push_back(b.num_tokens);
    return cost(b);
  });
  EXPECT_EQ(r1.completed_requests, c.num_requests);
  EXPECT_EQ(r1.prefill_tokens, prompt);
  EXPECT_EQ(r1.decode_tokens, decode);
  for (const auto& t : r1.requests) {
    EXPECT_GE(t.first_token_s, t.arrival_s);
    EXPECT_GE(t.finish_s, t.first_token_s);
  }
  Scheduler s2(cfg(2048, 64), reqs);
  std::vector<int64_t> sizes2;
  const ReplayResult r2 = s2.run([&](const Batch& b) {
    sizes2.push_back(b.num_tokens);
    return cost(b);
  });
  EXPECT_EQ(sizes, sizes2);
  EXPECT_EQ(r1.end_time_s, r2.end_time_s);
  // A mixed workload: both big prefill batches and small decode batches.
  EXPECT_EQ(*std::max_element(sizes.begin(), sizes.end()), 2048);
  EXPECT_LT(*std::min_element(sizes.begin(), sizes.end()), 8);
}

TEST(SchedulerTest, MaxForwardsStopsEarly) {
  SchedulerConfig c = cfg(4);
  c.max_forwards = 2;
  Scheduler s(c, {{0, 0.0, 100, 5}});
  EXPECT_EQ(collect(s).size(), 2u);
  EXPECT_FALSE(s.done());
  EXPECT_LT(s.result().requests[0].finish_s, 0);
}

TEST(SchedulerTest, RejectsBadInput) {
  EXPECT_THROW(Scheduler(cfg(0), {}), Error);
  EXPECT_THROW(Scheduler(cfg(8, 0), {}), Error);
  EXPECT_THROW(Scheduler(cfg(8), {{0, 0.0, 0, 1}}), Error);
  EXPECT_THROW(Scheduler(cfg(8), {{0, -1.0, 3, 1}}), Error);
  EXPECT_THROW(Scheduler(cfg(8), {{0, 0.0, 3, -1}}), Error);
  EXPECT_THROW(Scheduler(cfg(8), {{0, 0.0, 3, 1}, {0, 1.0, 3, 1}}), Error);

  Scheduler s(cfg(8), {{0, 0.0, 3, 1}});
  EXPECT_THROW(s.run([](const Batch&) { return std::numeric_limits<double>::quiet_NaN(); }), Error);

  Scheduler t(cfg(8), {{0, 0.0, 3, 4}});
  auto b = t.next_batch();
  ASSERT_TRUE(b);
  try {
    t.next_batch();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
}

TEST(SchedulerTest, EmptyTraceIsDone) {
  Scheduler s(cfg(8), {});
  EXPECT_TRUE(s.done());
  EXPECT_FALSE(s.next_batch());
}

}  // namespace
}  // namespace hcwarm::sim
