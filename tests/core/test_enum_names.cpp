// The enum name tables: every name parses back to its value, and a bad name is
// an InvalidArgument that quotes it (escaped, bounded) and lists the allowed names.
#include "core/enum_names.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm {
namespace {

enum class Color { Red, Green };
constexpr EnumName<Color> kColors[] = {{Color::Red, "red"}, {Color::Green, "green"}};

std::string parse_error(std::string_view text) {
  try {
    parse_enum(kColors, text, "color");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    return e.message();
  }
  ADD_FAILURE() << "accepted " << text;
  return {};
}

TEST(EnumNames, NamesAndParsesBothWays) {
  EXPECT_STREQ(enum_name(kColors, Color::Green), "green");
  EXPECT_STREQ(enum_name(kColors, static_cast<Color>(7)), "?");
  EXPECT_EQ(parse_enum(kColors, "red", "color"), Color::Red);
  EXPECT_EQ(enum_names(kColors), "red, green");
  for (auto b : {mhc::Backend::Reference, mhc::Backend::Cpu, mhc::Backend::Cuda}) {
    EXPECT_EQ(mhc::parse_backend(mhc::to_string(b)), b);
  }
  for (auto v : {mhc::Variant::Specialized, mhc::Variant::Generic}) {
    EXPECT_EQ(mhc::parse_variant(mhc::to_string(v)), v);
  }
  EXPECT_STREQ(jit::to_string(jit::ArtifactSource::Disk), "disk");
  EXPECT_STREQ(jit::to_string(jit::Phase::Serving), "serving");
  EXPECT_STREQ(jit::to_string(jit::TargetKind::Cuda), "cuda");
}

TEST(EnumNames, BadNameIsQuotedWithTheAllowedNames) {
  EXPECT_EQ(parse_error("blue"), "color \"blue\" is not one of red, green");
  EXPECT_EQ(parse_error("Red"), "color \"Red\" is not one of red, green");  // exact match only
  EXPECT_EQ(parse_error("a\nb\""), "color \"a\\nb\\\"\" is not one of red, green");
  const std::string long_text = parse_error(std::string(100000, 'x'));
  EXPECT_LT(long_text.size(), 300u);
  EXPECT_NE(long_text.find("...\" is not one of red, green"), std::string::npos) << long_text;
  try {
    mhc::parse_backend("gpu");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "backend \"gpu\" is not one of reference, cpu, cuda");
  }
}

}  // namespace
}  // namespace hcwarm
