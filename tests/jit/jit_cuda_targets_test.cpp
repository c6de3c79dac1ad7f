// The CUDA target matrix (jit/cuda_targets.hpp): what it reads, what it says,
// and that a refused target fails before any kernel is compiled, naming itself.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/cuda_targets.hpp"

namespace hcwarm::jit {
namespace {

TEST(CudaTargets, ReadsArchitectureNames) {
  EXPECT_EQ(parse_cuda_arch("sm_90a"), (std::pair{9, 0}));
  EXPECT_EQ(parse_cuda_arch("sm_90"), (std::pair{9, 0}));
  EXPECT_EQ(parse_cuda_arch("sm_100a"), (std::pair{10, 0}));
  EXPECT_EQ(parse_cuda_arch("sm_103a"), (std::pair{10, 3}));
  EXPECT_EQ(parse_cuda_arch("sm_120"), (std::pair{12, 0}));
  EXPECT_EQ(parse_cuda_arch("sm_89"), (std::pair{8, 9}));
  for (const char* bad : {"", "sm_", "sm_9", "compute_90", "sm_9x", "sm_1000", "x86-64-v3"}) {
    EXPECT_FALSE(parse_cuda_arch(bad).has_value()) << bad;
  }
}

TEST(CudaTargets, MatrixSaysWhatRanWhatOnlyCompilesAndWhatIsRefused) {
  EXPECT_EQ(gpu_support(9), GpuSupport::Ran);  // the H200
  EXPECT_EQ(gpu_support(10), GpuSupport::CompilesOnly);
  EXPECT_EQ(gpu_support(12), GpuSupport::CompilesOnly);
  EXPECT_EQ(gpu_support(8), GpuSupport::CompilesOnly);  // the portable forms
  EXPECT_EQ(gpu_support(7), GpuSupport::Refused);
  int ran = 0;
  for (const auto& row : gpu_matrix()) {
    EXPECT_NE(row.support, GpuSupport::Refused) << row.arches << ": the matrix lists targets it builds for";
    ran += row.support == GpuSupport::Ran;
  }
  EXPECT_EQ(ran, 1) << "one architecture has run the GPU suite; a second needs its figures first";
  EXPECT_NE(describe_gpu_support(9, 0).find("ran"), std::string::npos);
  EXPECT_NE(describe_gpu_support(12, 0).find("not run"), std::string::npos);
  EXPECT_NE(describe_gpu_support(8, 9).find("portable"), std::string::npos);
  EXPECT_NE(describe_gpu_support(7, 5).find("refused"), std::string::npos);
}

TEST(CudaTargets, PortableFormsBelowSm90Only) {
  for (const char* arch : {"sm_80", "sm_86", "sm_89"}) EXPECT_TRUE(cuda_portable_target(arch)) << arch;
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a", "sm_120", "sm_121a"}) {
    EXPECT_FALSE(cuda_portable_target(arch)) << arch;
  }
  EXPECT_FALSE(cuda_portable_target("not-an-arch"));
  EXPECT_TRUE(cuda_portable_target(8));
  EXPECT_FALSE(cuda_portable_target(9));
}

// The SMs of 228 KB (Hopper, datacenter Blackwell): the one-pass kernel's block, two one-wave partials.
TEST(CudaTargets, LargeSharedMemoryOnHopperAndDatacenterBlackwellOnly) {
  for (const char* arch : {"sm_90a", "sm_100a", "sm_103a"}) EXPECT_TRUE(cuda_large_smem_target(arch)) << arch;
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_120", "sm_121a", "not-an-arch"}) {
    EXPECT_FALSE(cuda_large_smem_target(arch)) << arch;
  }
  EXPECT_TRUE(cuda_large_smem_target(9));
  EXPECT_FALSE(cuda_large_smem_target(12));
}

TEST(CudaTargets, RefusedTargetNamesItselfAndWhatIsNeeded) {
  for (const char* arch : {"sm_75", "sm_70", "sm_61"}) {
    try {
      require_supported_cuda_arch(arch, "GPU Tesla T4");
      ADD_FAILURE() << arch << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
      EXPECT_NE(e.message().find(std::string("GPU Tesla T4 ") + arch), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("sm_80 or newer"), std::string::npos) << e.message();
    }
  }
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120", "sm_121a"}) {
    EXPECT_NO_THROW(require_supported_cuda_arch(arch, "target")) << arch;
  }
  EXPECT_THROW(require_supported_cuda_arch("gfx942", "target"), Error);
}

// No kernel is compiled for a refused target: the compiler refuses to be made,
// before it looks for NVRTC (so the message is the same on a machine without one).
TEST(CudaTargets, NvrtcCompilerRefusesATargetBelowSm80) {
  try {
    NvrtcCompiler nvrtc("sm_75", "/nonexistent/libnvrtc.so");
    FAIL() << "an sm_75 compiler was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable) << e.message();
    EXPECT_NE(e.message().find("NVRTC target sm_75"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace hcwarm::jit
