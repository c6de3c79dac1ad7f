// Every kernel family's entries (jit/kernel_entry.hpp) against NVRTC's lowered
// names: each source compiles with NvrtcCompiler, which checks every entry's
// symbol (ErrorKind::Internal on a mismatch), for each shape class; the generic
// fatbin's entries likewise, instantiated by name from the same headers.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backends/cuda/hc_head_cuda.hpp"
#include "backends/cuda/hc_post_cuda.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "common/jit_fixtures.hpp"
#include "common/test_util.hpp"
#include "core/embedded_kernels.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "model/standin/swiglu_cuda.hpp"

namespace hcwarm::test {
namespace {

// Compiles `src`: a mismatch between an entry and NVRTC's lowered name throws.
void expect_entries_lower(const jit::NvrtcCompiler& nvrtc, const jit::KernelSource& src, const std::string& what) {
  ASSERT_FALSE(src.entries.empty()) << what;
  TempDir work;
  try {
    (void)nvrtc.compile(src, kernels::embedded_files(), work.path());
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": " << e.message() << "\n" << e.log().substr(0, 2000);
  }
}

TEST(KernelEntriesNvrtc, MhcPreEverySplitClassAndInput) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  int input = 0;
  for (int splits : {1, 2, 3, 5, 22}) {  // one per split class
    for (bool norm : {false, true}) {
      const int in = input++ % 3;
      expect_entries_lower(*nvrtc, cuda::mhc_pre_cuda_source(splits, 4, 4096, norm, false, !norm, in),
                           "mhc_pre splits " + std::to_string(splits) + " input " + std::to_string(in));
    }
  }
  expect_entries_lower(*nvrtc, cuda::mhc_pre_cuda_source(1, 4, 7168, true, true, true), "mhc_pre one-pass");
}

TEST(KernelEntriesNvrtc, GenericFatbinEntries) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  jit::KernelSource pre{"#include \"cuda/mhc_pre.cuh\"\n#include \"cuda/mhc_pre_one_pass.cuh\"\n", 1, {}};
  for (int input = 0; input < 3; ++input) {
    pre.entries.push_back(cuda::generic_partial_entry(input));
    pre.entries.push_back(cuda::generic_finish_entry(input, input != 1, input == 2));
  }
  pre.entries.push_back(cuda::generic_finish_entry(hcwarm_mhc::kInputEmbed, true, true, true));  // the streaming form
  pre.entries.push_back(cuda::generic_one_pass_entry(true, false));
  pre.entries.push_back(cuda::generic_deep_partial_entry());
  pre.entries.push_back(cuda::generic_one_wave_finish_entry(true, true));
  expect_entries_lower(*nvrtc, pre, "mhc_pre generic");
  expect_entries_lower(*nvrtc, {"#include \"cuda/mhc_post.cuh\"\n", 1, {cuda::generic_post_entry()}}, "mhc_post generic");
}

TEST(KernelEntriesNvrtc, HeadPostAndStandInGemm) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  expect_entries_lower(*nvrtc, cuda::mhc_head_cuda_source(4, 4096, false), "mhc_head 4096 (with the one-pass head)");
  expect_entries_lower(*nvrtc, cuda::mhc_head_cuda_source(8, 2048, false), "mhc_head hc 8");
  expect_entries_lower(*nvrtc, cuda::mhc_head_cuda_source(4, 7168, true), "mhc_head 7168, portable");
  expect_entries_lower(*nvrtc, cuda::mhc_post_cuda_source(4, 7168), "mhc_post");
  expect_entries_lower(*nvrtc, cuda::CudaSwigluBackend::kernel_spec(256, 512, "sm_90a").kernel_source(), "swiglu_mlp");
}

}  // namespace
}  // namespace hcwarm::test
