#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/bf16.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"

namespace hcwarm {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16::from_float(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is half-way between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(bf16::from_float(1.0f + 1.0f / 256).bits, 0x3f80);
  EXPECT_EQ(bf16::from_float(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_EQ(bf16::from_float(-2.5f).to_float(), -2.5f);
  EXPECT_TRUE(std::isnan(bf16::from_float(std::numeric_limits<float>::quiet_NaN()).to_float()));
  EXPECT_TRUE(std::isinf(bf16::from_float(std::numeric_limits<float>::infinity()).to_float()));
}

TEST(Bf16, UlpDistance) {
  EXPECT_EQ(bf16_ulp_distance(bf16::from_bits(0x3f80), bf16::from_bits(0x3f81)), 1);
  EXPECT_EQ(bf16_ulp_distance(bf16::from_bits(0x0000), bf16::from_bits(0x8000)), 0);
  EXPECT_EQ(bf16_ulp_distance(bf16::from_bits(0x0001), bf16::from_bits(0x8001)), 2);
}

TEST(EnvConfig, ParsesEveryVariable) {
  const auto c = EnvConfig::from_map({{"HCWARM_CACHE_DIR", "/tmp/x"},
                                      {"HCWARM_STRICT_WARMUP", "1"},
                                      {"HCWARM_MHC_PREWARM", "0"},
                                      {"HCWARM_MHC_ONE_PASS", "0"},
                                      {"HCWARM_MHC_EARLY_FN", "1"},
                                      {"HCWARM_MHC_ONE_WAVE", "0"},
                                      {"HCWARM_CUDA_PORTABLE", "1"},
                                      {"HCWARM_TORCH_CPP_OPS", "0"},
                                      {"HCWARM_JOBS", "3"},
                                      {"HCWARM_CACHE_MAX_MB", "10"},
                                      {"HCWARM_NUM_SMS", "148"},
                                      {"HCWARM_LOG_LEVEL", "warn"},
                                      {"HCWARM_CXX", "g++"}});
  EXPECT_EQ(c.cache_dir, std::filesystem::path("/tmp/x"));
  EXPECT_TRUE(c.strict_warmup);
  EXPECT_FALSE(c.mhc_prewarm);
  EXPECT_FALSE(c.mhc_one_pass);
  EXPECT_TRUE(c.mhc_early_fn);
  EXPECT_FALSE(c.mhc_one_wave);
  EXPECT_TRUE(c.cuda_portable);
  EXPECT_FALSE(c.torch_cpp_ops);
  EXPECT_EQ(c.jobs, 3);
  EXPECT_EQ(c.cache_max_bytes, 10u << 20);
  EXPECT_EQ(c.num_sms, 148);
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_EQ(c.host_cxx, "g++");
}

TEST(EnvConfig, DefaultsAndCacheDirFallbacks) {
  EXPECT_EQ(EnvConfig::from_map({{"HOME", "/home/u"}}).cache_dir, std::filesystem::path("/home/u/.cache/hcwarm"));
  EXPECT_EQ(EnvConfig::from_map({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/c"}}).cache_dir,
            std::filesystem::path("/c/hcwarm"));
  EXPECT_FALSE(EnvConfig::from_map({{"HOME", "/h"}, {"HCWARM_CACHE_DIR", ""}}).cache_dir.has_value());
  const auto d = EnvConfig::from_map({});
  EXPECT_FALSE(d.strict_warmup);
  EXPECT_TRUE(d.mhc_prewarm);
  EXPECT_TRUE(d.mhc_one_pass);
  EXPECT_FALSE(d.mhc_early_fn);
  EXPECT_TRUE(d.mhc_one_wave);
  EXPECT_FALSE(d.cuda_portable);
  EXPECT_TRUE(d.torch_cpp_ops);
}

TEST(EnvConfig, BadValuesNameTheVariable) {
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"HCWARM_STRICT_WARMUP", "maybe"},
                                                                      {"HCWARM_MHC_ONE_PASS", "2"},
                                                                      {"HCWARM_MHC_EARLY_FN", "early"},
                                                                      {"HCWARM_MHC_ONE_WAVE", "wide"},
                                                                      {"HCWARM_CUDA_PORTABLE", "portable"},
                                                                      {"HCWARM_TORCH_CPP_OPS", "yes please"},
                                                                      {"HCWARM_JOBS", "-1"},
                                                                      {"HCWARM_JOBS", "2x"},
                                                                      {"HCWARM_NUM_SMS", "0"},
                                                                      {"HCWARM_LOG_LEVEL", "loud"}}) {
    try {
      EnvConfig::from_map({{k, v}});
      FAIL() << k << "=" << v << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(k), std::string::npos) << e.message();
    }
  }
}

TEST(EnvConfig, ErrorMessagesQuoteAtMost200CharactersOfAValue) {
  for (const char* k : {"HCWARM_LOG_LEVEL", "HCWARM_JOBS", "HCWARM_STRICT_WARMUP", "HCWARM_CACHE_TRUST", "HCWARM_JIT"}) {
    try {
      EnvConfig::from_map({{k, std::string(100000, 'v')}});
      FAIL() << k << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(k), std::string::npos) << e.message().substr(0, 300);
      EXPECT_LT(e.message().size(), 400u) << e.message().substr(0, 300);
    }
  }
}

TEST(EnvConfig, ValuesThatAreNotUtf8AreQuotedWithEscapes) {
  // Stray or cut UTF-8 sequences are escaped, and a long value is never cut inside one.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xc0", "\"\\xc0\""},
      {"on\xe2\x82", "\"on\\xe2\\x82\""},
      {"\xc3\xa9t\xc3\xa9", "\"\xc3\xa9t\xc3\xa9\""},
      {std::string(196, 'a') + "\xc3\xa9\xc3\xa9", "\"" + std::string(196, 'a') + "...\""}};
  for (const auto& [value, quoted] : cases) {
    try {
      EnvConfig::from_map({{"HCWARM_MHC_PREWARM", value}});
      FAIL() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find("HCWARM_MHC_PREWARM=" + quoted + " is not"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace hcwarm
