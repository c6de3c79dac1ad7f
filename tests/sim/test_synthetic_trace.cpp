#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "sim/trace.hpp"

namespace hcwarm::sim {
namespace {

bool same(const std::vector<Request>& a, const std::vector<Request>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].arrival_s != b[i].arrival_s || a[i].prompt_tokens != b[i].prompt_tokens ||
        a[i].output_tokens != b[i].output_tokens) {
      return false;
    }
  }
  return true;
}

TEST(SyntheticTraceTest, DeterministicPerSeed) {
  SyntheticTraceConfig c;
  c.num_requests = 300;
  const auto a = synthetic_trace(c);
  EXPECT_TRUE(same(a, synthetic_trace(c)));
  c.seed = 2;
  EXPECT_FALSE(same(a, synthetic_trace(c)));
}

TEST(SyntheticTraceTest, MixedWorkloadWithLongDecodeTail) {
  SyntheticTraceConfig c;  // defaults: 2000 requests
  const auto reqs = synthetic_trace(c);
  ASSERT_EQ(static_cast<int64_t>(reqs.size()), c.num_requests);
  std::vector<int64_t> prompts, outputs;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].id, static_cast<int64_t>(i));
    if (i > 0) EXPECT_GE(reqs[i].arrival_s, reqs[i - 1].arrival_s);
    EXPECT_GE(reqs[i].prompt_tokens, c.min_prompt_tokens);
    EXPECT_LE(reqs[i].prompt_tokens, c.max_prompt_tokens);
    EXPECT_GE(reqs[i].output_tokens, 1);
    EXPECT_LE(reqs[i].output_tokens, c.max_output_tokens);
    prompts.push_back(reqs[i].prompt_tokens);
    outputs.push_back(reqs[i].output_tokens);
  }
  std::sort(prompts.begin(), prompts.end());
  std::sort(outputs.begin(), outputs.end());
  // Prompts span short chats to long documents.
  EXPECT_LT(prompts[prompts.size() / 10], 200);
  EXPECT_GT(prompts[prompts.size() * 99 / 100], 8000);
  EXPECT_EQ(prompts.front(), c.min_prompt_tokens);
  // Outputs: a short body with a tail an order of magnitude longer.
  const int64_t median_out = outputs[outputs.size() / 2];
  EXPECT_LT(median_out, 200);
  EXPECT_GT(outputs[outputs.size() * 99 / 100], 10 * median_out);
  // Poisson arrivals at the configured rate (loosely).
  const double rate = static_cast<double>(reqs.size() - 1) / reqs.back().arrival_s;
  EXPECT_NEAR(rate, c.arrival_rate_per_s, 0.15 * c.arrival_rate_per_s);
}

TEST(SyntheticTraceTest, ConfigJsonRoundTripAndValidation) {
  SyntheticTraceConfig c = builtin_demo_trace_config();
  const SyntheticTraceConfig back = SyntheticTraceConfig::from_json(c.to_json(), "test");
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_TRUE(same(synthetic_trace(back), synthetic_trace(c)));

  EXPECT_THROW(SyntheticTraceConfig::from_json({{"num_requests", 1.5}}, "t"), Error);
  EXPECT_THROW(SyntheticTraceConfig::from_json({{"nope", 1}}, "t"), Error);
  EXPECT_THROW(SyntheticTraceConfig::from_json({{"seed", -1}}, "t"), Error);
  EXPECT_THROW(SyntheticTraceConfig::from_json(nlohmann::json::array(), "t"), Error);
  c.max_prompt_tokens = c.min_prompt_tokens - 1;
  EXPECT_THROW(synthetic_trace(c), Error);
  c = {};
  c.output_tail_fraction = 1.5;
  EXPECT_THROW(c.validate(), Error);
}

TEST(SyntheticTraceTest, DemoConfigIsSmall) {
  const auto reqs = synthetic_trace(builtin_demo_trace_config());
  int64_t tokens = 0;
  for (const auto& r : reqs) tokens += r.prompt_tokens + r.output_tokens;
  EXPECT_LE(reqs.size(), 100u);
  EXPECT_LT(tokens, 60000);  // keeps two CPU replays inside the demo's minute
}

}  // namespace
}  // namespace hcwarm::sim
