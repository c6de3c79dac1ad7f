// Kernel entries (jit/kernel_entry.hpp): the name expression and the Itanium
// mangling written from the same template arguments, checked against NVRTC's
// lowered names by NvrtcCompiler (a mismatch is an internal error naming both);
// the host compiler takes no entries.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/kernel_entry.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit {
namespace {

TEST(KernelEntry, WritesTheExpressionAndTheMangledSymbol) {
  const KernelEntry e = kernel_entry(1, {"hcwarm_kernels", "cuda"}, "mhc_pre_partial_kernel", {5, 4, 7168, 0, 256, 2},
                                     "21hcwarm_mhc_pre_params");
  EXPECT_EQ(e.part, 1);
  EXPECT_EQ(e.expression, "hcwarm_kernels::cuda::mhc_pre_partial_kernel<5, 4, 7168, 0, 256, 2>");
  EXPECT_EQ(e.symbol,
            "_ZN14hcwarm_kernels4cuda22mhc_pre_partial_kernelILi5ELi4ELi7168ELi0ELi256ELi2EEEv21hcwarm_mhc_pre_params");
  // NVRTC 13's lowered names (nvrtcGetLoweredName) of the same forms.
  EXPECT_EQ(kernel_entry(0, {"hcwarm_kernels", "cuda"}, "kern", {5, 4, true}, "21hcwarm_mhc_pre_params").symbol,
            "_ZN14hcwarm_kernels4cuda4kernILi5ELi4ELb1EEEv21hcwarm_mhc_pre_params");
  EXPECT_EQ(kernel_entry(0, {"hcwarm_kernels", "cuda"}, "post", {4}, "xiPKtS3_PKfS5_Pt").symbol,
            "_ZN14hcwarm_kernels4cuda4postILi4EEEvxiPKtS3_PKfS5_Pt");
  const KernelEntry neg = kernel_entry(0, {"ns"}, "k", {-1, false}, "v");
  EXPECT_EQ(neg.expression, "ns::k<-1, false>");
  EXPECT_EQ(neg.symbol, "_ZN2ns1kILin1ELb0EEEvv");
  // The global namespace: an unscoped template name.
  EXPECT_EQ(kernel_entry(0, {}, "kern", {7}, "Pi").symbol, "_Z4kernILi7EEvPi");
  EXPECT_EQ(kernel_entry(0, {}, "kern", {7}, "Pi").expression, "kern<7>");
  EXPECT_THROW(kernel_entry(0, {"ns"}, "k", {1}, ""), Error);
}

constexpr const char* kTemplates =
    "namespace outer { namespace inner {\n"
    "template <int N, bool B> __global__ void kern(int* p, const int* q, const int* r) { *p = B ? N + *q : *r; }\n"
    "} }\n"
    "template <int N> __global__ void flat(float* p) { *p = N; }\n";

// Every form NVRTC lowers as the entry says (the compile checks each one):
// nested and global scope, negative ints, bools, a substitution.
TEST(KernelEntry, NvrtcLowersEveryFormAsTheEntrySays) {
  if (!test::nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  const NvrtcCompiler nvrtc("sm_90a");
  hcwarm::test::TempDir work("hcwarm-entry");
  KernelSource src{kTemplates, 1, {}};
  for (int n : {0, 3, -1, -42, 7168}) {
    for (bool b : {false, true}) src.entries.push_back(kernel_entry(0, {"outer", "inner"}, "kern", {n, b}, "PiPKiS4_"));
  }
  src.entries.push_back(kernel_entry(0, {}, "flat", {-5}, "Pf"));
  const auto out = nvrtc.compile(src, {}, work.path());
  const std::string bytes(reinterpret_cast<const char*>(out.binary.data()), out.binary.size());
  for (const auto& e : src.entries) EXPECT_NE(bytes.find(e.symbol + '\0'), std::string::npos) << e.symbol;
}

TEST(KernelEntry, AWrongSymbolIsAnInternalErrorNamingBoth) {
  if (!test::nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  const NvrtcCompiler nvrtc("sm_90a");
  hcwarm::test::TempDir work("hcwarm-entry");
  KernelEntry wrong = kernel_entry(0, {}, "flat", {3}, "Pf");
  const std::string lowered = wrong.symbol;
  wrong.symbol = "_Z4flatILi4EEvPf";
  try {
    nvrtc.compile({kTemplates, 1, {wrong}}, {}, work.path());
    FAIL() << "a wrong symbol compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(e.message().find(wrong.symbol), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(lowered), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("flat<3>"), std::string::npos) << e.message();
  }
  // An entry outside the source's parts is refused before NVRTC runs.
  try {
    nvrtc.compile({kTemplates, 1, {kernel_entry(1, {}, "flat", {3}, "Pf")}}, {}, work.path());
    FAIL() << "an entry of part 1 in a one-part source compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
  }
}

// Each part's program instantiates only its own entries.
TEST(KernelEntry, EachPartInstantiatesItsOwnEntries) {
  if (!test::nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  auto budget = std::make_shared<ThreadBudget>(4);
  const NvrtcCompiler nvrtc("sm_90a", {}, {}, {}, {}, budget);
  hcwarm::test::TempDir work("hcwarm-entry");
  const std::string text = std::string("#if !defined(HCWARM_PART) || HCWARM_PART == 0\n") + kTemplates + "#endif\n";
  // Part 1 has no text: were part 0's entry added to its program, NVRTC could not find it.
  const KernelSource src{text, 2, {kernel_entry(0, {}, "flat", {1}, "Pf")}};
  EXPECT_NO_THROW(nvrtc.compile(src, {}, work.path()));
}

TEST(KernelEntry, TheHostCompilerRefusesEntries) {
  std::unique_ptr<HostCompiler> cxx;
  try {
    cxx = std::make_unique<HostCompiler>("c++");
  } catch (const Error& e) {
    GTEST_SKIP() << e.message();
  }
  hcwarm::test::TempDir work("hcwarm-entry");
  try {
    cxx->compile({"extern \"C\" int f() { return 1; }\n", 1, {kernel_entry(0, {}, "flat", {1}, "Pf")}}, {},
                 work.path());
    FAIL() << "the host compiler took an entry";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("flat<1>"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace hcwarm::jit
