// Cubin sets: the artifact of a CUDA source compiled as parallel parts
// (jit/cubin_set.hpp), and NVRTC's compile of such a source (no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit {
namespace {

std::vector<std::byte> bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());  // an empty vector's data() may be null
  return b;
}
std::string text(std::span<const std::byte> b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

TEST(CubinSet, RoundTripKeepsEveryImageAligned) {
  const std::vector<std::vector<std::byte>> images{bytes("\x7f" "ELF one"), bytes(""), bytes("three, odd length")};
  const auto packed = pack_cubin_set(images);
  const auto got = unpack_cubin_set(packed);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 3u);
  for (size_t i = 0; i < images.size(); ++i) {
    EXPECT_EQ(text((*got)[i]), text(images[i])) << i;
    EXPECT_EQ(((*got)[i].data() - packed.data()) % 8, 0) << "image " << i << " is not 8-byte aligned";
  }
}

TEST(CubinSet, APlainCubinIsNotASet) {
  EXPECT_FALSE(unpack_cubin_set(bytes("\x7f" "ELF\x02\x01\x01 a plain cubin")).has_value());
  EXPECT_FALSE(unpack_cubin_set(bytes("")).has_value());
}

TEST(CubinSet, TruncatedOrPaddedSetsAreRejected) {
  const auto packed = pack_cubin_set({bytes("first image"), bytes("second image")});
  for (size_t cut : {size_t{10}, size_t{20}, packed.size() - 1}) {
    const std::vector<std::byte> shorter(packed.begin(), packed.begin() + static_cast<long>(cut));
    EXPECT_THROW(unpack_cubin_set(shorter), Error) << "cut at " << cut;
  }
  auto longer = packed;
  longer.push_back(std::byte{0});
  EXPECT_THROW(unpack_cubin_set(longer), Error);
}

// The parts count comes from the spec, never from the text: outside 1..8 it is
// refused before NVRTC runs, and the host compiler takes one part only.
TEST(CubinSet, PartsCountOutOfRangeIsRefusedNamingIt) {
  if (!test::nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  const NvrtcCompiler nvrtc("sm_90a");
  hcwarm::test::TempDir work("hcwarm-cubin-set");
  for (int bad : {0, -1, kMaxSourceParts + 1}) {
    try {
      nvrtc.compile({"extern \"C\" __global__ void k() {}\n", bad, {}}, {}, work.path());
      ADD_FAILURE() << "accepted " << bad << " parts";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << bad;
      EXPECT_NE(e.message().find("not " + std::to_string(bad)), std::string::npos) << e.message();
    }
  }
  // A marker-like comment is plain text: one part, one cubin.
  const auto out = nvrtc.compile({"// hcwarm: parts=2\nextern \"C\" __global__ void k() {}\n", 1, {}}, {}, work.path());
  EXPECT_FALSE(unpack_cubin_set(out.binary).has_value());
}

// A two-part source compiles (alone, with a core per part) to a set of two
// cubins, each with only its own kernel; an error in one part fails the
// compile with that part's log.
TEST(CubinSet, NvrtcCompilesEachPartApart) {
  if (!test::nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: parts compile as one program";
  const NvrtcCompiler nvrtc("sm_90a");
  hcwarm::test::TempDir work("hcwarm-cubin-set");
  const std::string src =
      "#if !defined(HCWARM_PART) || HCWARM_PART == 0\n"
      "extern \"C\" __global__ void kernel_zero(int* p) { *p = 0; }\n#endif\n"
      "#if !defined(HCWARM_PART) || HCWARM_PART == 1\n"
      "extern \"C\" __global__ void kernel_one(int* p) { *p = 1; }\n#endif\n";
  const auto out = nvrtc.compile({src, 2, {}}, {}, work.path());
  const auto images = unpack_cubin_set(out.binary);
  ASSERT_TRUE(images.has_value());
  ASSERT_EQ(images->size(), 2u);
  const std::string zero = text((*images)[0]), one = text((*images)[1]);
  EXPECT_EQ(zero.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(one.substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(zero.find("kernel_zero"), std::string::npos);
  EXPECT_EQ(zero.find("kernel_one"), std::string::npos);
  EXPECT_NE(one.find("kernel_one"), std::string::npos);
  EXPECT_EQ(one.find("kernel_zero"), std::string::npos);

  hcwarm::test::TempDir work2("hcwarm-cubin-set");
  const std::string broken = src.substr(0, src.rfind("*p = 1;")) + "nope(); }\n#endif\n";
  try {
    nvrtc.compile({broken, 2, {}}, {}, work2.path());
    FAIL() << "a broken part compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Compile);
    EXPECT_NE(e.log().find("nope"), std::string::npos) << e.log();
  }
}

}  // namespace
}  // namespace hcwarm::jit
