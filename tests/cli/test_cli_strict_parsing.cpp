// Values are read one way only: integers in options and HCWARM_* variables are
// plain decimals (an empty value, a sign, a prefix or a space is an error naming
// the option), a .npy header holds no NUL or control byte, a safetensors header
// length matches the file, and a long value is quoted as a bounded excerpt.
#include <gtest/gtest.h>

#include <cstring>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/npy.hpp"
#include "model/safetensors.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;

const char* const kNotDecimal[] = {"", "0x10", "+5", " 5", "5 ", "1e3", "5abc", "-"};

TEST(CliStrictParsing, IntegerOptionsTakePlainDecimalsOnly) {
  for (const char* v : kNotDecimal) {
    const auto r = run_cli({"plan", "--num-sms", v});
    EXPECT_EQ(r.exit_code, 2) << "'" << v << "': " << r.err;
    EXPECT_NE(r.err.find("--num-sms"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a decimal integer"), std::string::npos) << r.err;
  }
  // A list option checks each item.
  const auto list = run_cli({"bench", "op", "--tokens", "1,0x10", "--backend", "cpu"});
  EXPECT_EQ(list.exit_code, 2) << list.err;
  EXPECT_NE(list.err.find("--tokens"), std::string::npos) << list.err;
  // An unsigned option takes no sign: strtoull would read "-1" as 2^64 - 1.
  const auto seed = run_cli({"replay", "--seed", "-1", "--trace", "synthetic:n=1", "--backend", "reference"});
  EXPECT_EQ(seed.exit_code, 2) << seed.err;
  EXPECT_NE(seed.err.find("--seed: \"-1\" is not a non-negative decimal integer"), std::string::npos) << seed.err;
  // Leading zeros are decimal, not octal.
  const auto zeros = run_cli({"plan", "--num-sms", "010"});
  EXPECT_EQ(zeros.exit_code, 0) << zeros.err;
  EXPECT_NE(zeros.out.find("10 SMs"), std::string::npos) << zeros.out;
}

TEST(CliStrictParsing, IntegerVariablesTakePlainDecimalsOnly) {
  for (const char* name : {"HCWARM_NUM_SMS", "HCWARM_JOBS", "HCWARM_LOCK_TIMEOUT_S", "HCWARM_CACHE_MAX_MB",
                           "HCWARM_GROUP_TIMEOUT_S"}) {
    for (const char* v : kNotDecimal) {
      try {
        EnvConfig::from_map({{name, v}});
        ADD_FAILURE() << name << "='" << v << "' was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
      }
    }
  }
  const auto r = run_cli({"plan"}, {"HCWARM_NUM_SMS=0x10"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("HCWARM_NUM_SMS"), std::string::npos) << r.err;
}

TEST(CliStrictParsing, A100KilobyteValueIsQuotedAsABoundedExcerpt) {
  const std::string huge(100000, '7');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--num-sms", huge + "x"}, {"plan", "--num-sms", huge},
        {"plan", "--model", huge}, {"bench", "op", "--tokens", huge}, {"plan", huge},
        {"replay", "--trace", "synthetic:" + huge + "=1"}, {"op", "hc-pre", "--in", huge, "--out", "x"}}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), limits::kMaxMessageHead + limits::kMaxMessageTail + 200) << args[1];
    EXPECT_EQ(r.err.find(huge.substr(0, 20000)), std::string::npos) << args[1] << ": quoted whole";
  }
}

// strtoll/strtoull saturate past 64 bits: such a value is refused, not clamped to the type's bound.
TEST(CliStrictParsing, AValuePastSixtyFourBitsIsOutOfRangeNotClamped) {
  for (const char* v : {"99999999999999999999", "-99999999999999999999", "18446744073709551616"}) {
    const auto r = run_cli({"plan", "--chunked-prefill-size", v});
    EXPECT_EQ(r.exit_code, 2) << v << ": " << r.err;
    EXPECT_NE(r.err.find("out of range"), std::string::npos) << v << ": " << r.err;
    EXPECT_EQ(r.err.find("9223372036854775807"), std::string::npos) << v << ": clamped: " << r.err;
  }
}

// CLI11 splits bracketed lists recursively, copying the value at each level:
// deeply nested brackets are refused before it parses.
TEST(CliStrictParsing, NestedBracketsInAListAreRefusedBeforeParsing) {
  const std::string nested = std::string(60000, '[') + "1" + std::string(60000, ']');
  const auto r = run_cli({"bench", "op", "--tokens", nested});
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("nests more than 4 '['"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 1000u);
  EXPECT_LT(r.max_rss_kb, 256 * 1024) << "parsed before refusing";
}

TEST(CliStrictParsing, ANulByteInANpyHeaderIsAnError) {
  TempDir dir;
  const auto model = small_model(dir);
  write_hc_pre_inputs(dir / "in", 2, /*with_norm=*/false);
  std::string bytes = test::read_file(dir / "in" / "fn.npy");
  const size_t pad = bytes.find('}') + 2;  // a padding space of the header
  ASSERT_EQ(bytes[pad], ' ');
  bytes[pad] = '\0';
  test::write_file(dir / "in" / "fn.npy", bytes);
  const auto r = run_cli({"op", "hc-pre", "--model", model, "--in", (dir / "in").string(), "--out",
                          (dir / "out").string(), "--backend", "reference"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("fn.npy: .npy header holds control byte 0x00"), std::string::npos) << r.err;
}

TEST(CliStrictParsing, ASafetensorsHeaderLengthOneByteShortIsAnError) {
  TempDir dir;
  const auto model = small_model(dir);
  std::string bytes;
  uint64_t n = 0;
  for (std::string name = "u"; name.size() < 8; name += "u") {  // a name that leaves padding
    model::SafetensorsWriter w;
    w.add(name, HostTensor<float>({4}));
    bytes = w.serialize();
    std::memcpy(&n, bytes.data(), 8);
    if (bytes[8 + n - 1] == ' ') break;
  }
  ASSERT_EQ(bytes[8 + n - 1], ' ');  // padding: one byte short still parses as JSON
  --n;
  std::memcpy(bytes.data(), &n, 8);
  test::write_file(dir / "w.safetensors", bytes);
  const auto r = run_cli({"replay", "--model", model, "--trace", "synthetic:n=1", "--layers", "1", "--backend",
                          "reference", "--weights", (dir / "w.safetensors").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not match the file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hcwarm
