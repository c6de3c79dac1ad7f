// Sizes from input and options past their documented bounds (core/limits.hpp):
// one message naming the field and the bound, exit code 2, no work started.
#include <gtest/gtest.h>

#include <functional>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"
#include "sim/trace.hpp"

namespace hcwarm::test {
namespace {

std::string config_with(const std::string& field, const std::string& value) {
  std::string base = R"({"architectures": ["DeepseekV4ForCausalLM"], "hidden_size": 256, "hc_mult": 4,
                         "num_hidden_layers": 2, "hc_sinkhorn_iters": 20})";
  const auto at = base.find("\"" + field + "\"");
  if (at == std::string::npos) return base.substr(0, base.size() - 1) + ", \"" + field + "\": " + value + "}";
  const auto colon = base.find(':', at);
  const auto end = base.find_first_of(",}", colon);
  return base.substr(0, colon + 1) + " " + value + base.substr(end);
}

void expect_refused(const std::function<void()>& f, const std::string& field, int64_t bound) {
  try {
    f();
    FAIL() << field << " past its bound was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(e.message().find(field), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(std::to_string(bound)), std::string::npos) << e.message();
  }
}

TEST(Limits, ModelConfigSizesAreBounded) {
  const std::pair<const char*, int64_t> cases[] = {{"hidden_size", limits::kMaxHiddenSize},
                                                    {"hc_mult", limits::kMaxHcMult},
                                                    {"num_hidden_layers", limits::kMaxLayers},
                                                    {"hc_sinkhorn_iters", limits::kMaxSinkhornIters}};
  for (const auto& [field, bound] : cases) {
    EXPECT_NO_THROW(model::parse_model_config(config_with(field, std::to_string(bound)), "c.json")) << field;
    expect_refused([&] { model::parse_model_config(config_with(field, std::to_string(bound + 1)), "c.json"); },
                   field, bound);
  }
}

TEST(Limits, ChunkedPrefillIsBounded) {
  model::ServerArgsInput in;
  in.chunked_prefill_size = limits::kMaxTokens + 1;
  expect_refused([&] { model::ServerArgs::process(in, std::nullopt); }, "--chunked-prefill-size", limits::kMaxTokens);
  const auto r = run_cli({"plan", "--model", "dsv4-flash", "--chunked-prefill-size", "100000000000"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(Limits, TraceTokenAndRequestCountsAreBounded) {
  const std::string big = std::to_string(limits::kMaxRequestTokens + 1);
  expect_refused([&] { sim::parse_jsonl("{\"arrival_s\": 0, \"prompt_tokens\": " + big + ", \"output_tokens\": 1}\n",
                                            "t.jsonl"); },
                 "prompt_tokens", limits::kMaxRequestTokens);
  expect_refused([&] { sim::parse_azure_csv("TIMESTAMP,ContextTokens,GeneratedTokens\n0," + big + ",1\n", "t.csv"); },
                 "ContextTokens", limits::kMaxRequestTokens);
  expect_refused([&] { sim::load_trace("synthetic:n=" + std::to_string(limits::kMaxRequests + 1)); },
                 "num_requests", limits::kMaxRequests);
}

TEST(Limits, RunnerOptionsAreBounded) {
  TempDir dir;
  const auto layers = run_cli({"replay", "--model", "dsv4-flash", "--backend", "reference", "--layers", "5000",
                               "--trace", "synthetic:n=1", "--cache-dir", (dir / "c").string()});
  EXPECT_EQ(layers.exit_code, 2);
  EXPECT_NE(layers.err.find("--layers"), std::string::npos) << layers.err;
  const auto width = run_cli({"replay", "--model", "dsv4-flash", "--backend", "reference", "--mlp-width", "1000000",
                              "--trace", "synthetic:n=1", "--cache-dir", (dir / "c").string()});
  EXPECT_EQ(width.exit_code, 2);
  EXPECT_NE(width.err.find("--mlp-width"), std::string::npos) << width.err;
}

TEST(Limits, SyntheticTraceSizesAreBounded) {
  // Past these a replay would simulate one request without end (max_output_tokens=2^63).
  const std::string over = std::to_string(limits::kMaxRequestTokens + 1);
  for (const char* field : {"max_output_tokens", "max_prompt_tokens", "prompt_median", "output_mean", "output_tail_min"}) {
    expect_refused([&] { sim::load_trace(std::string("synthetic:") + field + "=" + over); }, field,
                   limits::kMaxRequestTokens);
  }
  const auto r = run_cli({"replay", "--model", "dsv4-flash", "--backend", "reference", "--layers", "1", "--trace",
                          "synthetic:max_output_tokens=9223372036854775807"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("max_output_tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(limits::kMaxRequestTokens)), std::string::npos) << r.err;
  // A long spec is quoted, not printed back whole.
  try {
    sim::load_trace("synthetic:" + std::string(100000, 'k') + "=1");
    FAIL() << "an unknown key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("unknown key"), std::string::npos) << e.message().substr(0, 300);
    EXPECT_LT(e.message().size(), 1000u);
  }
}

TEST(Limits, BenchOpSizesAreBounded) {
  const std::string bound = std::to_string(limits::kMaxTokens);
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"--tokens", "2000000000"}, {"--tokens", "1,8," + std::to_string(limits::kMaxTokens + 1)},
           {"--buckets", std::to_string(limits::kMaxTokens + 1)}, {"--tokens", "0"}}) {
    const auto r = run_cli({"bench", "op", option, value, "--backend", "cpu"});
    EXPECT_EQ(r.exit_code, 2) << option << " " << value << ": " << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bound), std::string::npos) << r.err;
  }
  const auto h = run_cli({"bench", "op", "--hidden", std::to_string(limits::kMaxHiddenSize + 1), "--backend", "cpu"});
  EXPECT_EQ(h.exit_code, 2) << h.err;
  EXPECT_NE(h.err.find(std::to_string(limits::kMaxHiddenSize)), std::string::npos) << h.err;
}

}  // namespace
}  // namespace hcwarm::test
