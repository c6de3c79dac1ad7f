// The CUDA side of the fused boundary (input Post) without a device: its
// translation units compile under NVRTC for sm_90a (skips without NVRTC), the
// combinations it cannot run are refused, the residual and embedding sources
// are the ones they were, and the launcher's alignment check names the Post
// pointers. Label `gpu` (it lives with the CUDA tests) but needs no GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "common/test_util.hpp"
#include "core/embedded_kernels.hpp"
#include "core/error.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::test {
namespace {

constexpr int kPost = hcwarm_mhc::kInputPost;

// Specializations that cover the partial kernel's shapes: 8 warps (num_splits
// <= 2, the finish streaming the residual), 4 warps with the streaming finish,
// 3 sub-parts, 1 sub-part.
TEST(HcPostPreCudaSource, CompilesUnderNvrtc) {
  std::unique_ptr<jit::NvrtcCompiler> nvrtc;
  try {
    nvrtc = std::make_unique<jit::NvrtcCompiler>("sm_90a");
  } catch (const Error& e) {
    GTEST_SKIP() << e.message();
  }
  TempDir work;
  struct Spec {
    int splits, hidden;
    bool norm;
  };
  for (const Spec s : {Spec{1, 7168, true}, Spec{16, 7168, false}, Spec{64, 4096, true}, Spec{3, 4096, false}}) {
    const jit::KernelSource src = cuda::mhc_pre_cuda_source(s.splits, 4, s.hidden, s.norm, false, true, kPost);
    const auto out = nvrtc->compile(src, kernels::embedded_files(), work.path());
    const auto set = jit::unpack_cubin_set(out.binary);
    const auto images = set.value_or(std::vector<std::span<const std::byte>>{out.binary});
    size_t found = 0;
    for (const auto image : images) {
      const std::string bytes(reinterpret_cast<const char*>(image.data()), image.size());
      for (const auto& e : src.entries) found += bytes.find(e.symbol) != std::string::npos;
    }
    EXPECT_EQ(src.entries.size(), 2u);
    EXPECT_EQ(found, 2u) << "splits=" << s.splits << " hidden=" << s.hidden;
  }
}

TEST(HcPostPreCudaSource, RefusesWhatItCannotRun) {
  auto kind = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  const auto one_pass = [] { cuda::mhc_pre_cuda_source(1, 4, 4096, true, true, true, kPost); };
  const auto bad = [] { cuda::mhc_pre_cuda_source(8, 4, 4096, true, false, true, 7); };
  EXPECT_EQ(kind(one_pass), ErrorKind::InvalidArgument) << "the one-pass kernel reads residual streams only";
  EXPECT_EQ(kind(bad), ErrorKind::InvalidArgument) << "an unknown input kind";
}

// The op's spec for input Post: its own source, no one-pass kernel at
// num_splits 1 (where the residual's spec has it); the residual and embedding
// sources are what the default arguments and `bool embed` gave before.
TEST(HcPostPreCudaSource, SpecsAndSources) {
  const mhc::MhcDims dims{4, 7168};
  const auto res = mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, dims, 1, true, {}, mhc::HcPreInput::Residual);
  const auto post = mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, dims, 1, true, {}, mhc::HcPreInput::Post);
  EXPECT_EQ(res.param("one_pass"), "1");
  EXPECT_EQ(post.param("one_pass"), "") << "input post takes the two kernels";
  EXPECT_NE(post.source, res.source);
  ASSERT_FALSE(post.entries.empty());  // the kernels' INPUT template argument: hcwarm_mhc::kInputPost
  EXPECT_NE(post.entries[0].expression.find("mhc_pre_partial_kernel<1, 4, 7168, 2, "), std::string::npos)
      << post.entries[0].expression;
  for (const auto& e : post.entries) EXPECT_EQ(e.expression.find("mhc_pre_one_pass_kernel"), std::string::npos) << e.expression;
  EXPECT_EQ(cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, true, hcwarm_mhc::kInputResidual),
            cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, true));
  EXPECT_EQ(cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, true, hcwarm_mhc::kInputEmbed),
            cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, true, /*embed=*/true));
  for (const auto& e : cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, true).entries) {
    EXPECT_EQ(e.expression.find(", 4, 7168, 2, "), std::string::npos) << e.expression;
  }
}

// The launcher's check over the params: with input POST the four Post pointers
// too, each named as in HcPreArgs; other inputs ignore them.
TEST(HcPostPreCudaSource, AlignmentCheckNamesThePostPointers) {
  alignas(16) static unsigned char buf[1024];
  hcwarm_mhc_pre_params p{};
  p.residual = reinterpret_cast<const unsigned short*>(buf);
  p.fn = reinterpret_cast<const float*>(buf + 64);
  p.y = reinterpret_cast<unsigned short*>(buf + 128);
  p.input = hcwarm_mhc::kInputPost;
  p.post_x = reinterpret_cast<const unsigned short*>(buf + 192);
  p.prev_post = reinterpret_cast<const float*>(buf + 256);
  p.prev_comb = reinterpret_cast<const float*>(buf + 320);
  p.residual_out = reinterpret_cast<unsigned short*>(buf + 384);
  EXPECT_EQ(cuda::misaligned_argument(p), nullptr);
  struct Case {
    const char* name;
    int which;
  };
  for (const Case c : {Case{"x", 0}, Case{"prev_post", 1}, Case{"prev_comb", 2}, Case{"new_residual", 3}}) {
    hcwarm_mhc_pre_params q = p;
    if (c.which == 0) q.post_x = reinterpret_cast<const unsigned short*>(buf + 194);
    if (c.which == 1) q.prev_post = reinterpret_cast<const float*>(buf + 260);
    if (c.which == 2) q.prev_comb = reinterpret_cast<const float*>(buf + 328);
    if (c.which == 3) q.residual_out = reinterpret_cast<unsigned short*>(buf + 386);
    const char* n = cuda::misaligned_argument(q);
    ASSERT_NE(n, nullptr) << c.name;
    EXPECT_STREQ(n, c.name);
    q.input = hcwarm_mhc::kInputResidual;
    EXPECT_EQ(cuda::misaligned_argument(q), nullptr) << c.name << " is not read without input POST";
  }
  hcwarm_mhc_pre_params q = p;
  q.residual = reinterpret_cast<const unsigned short*>(buf + 2);
  EXPECT_STREQ(cuda::misaligned_argument(q), "residual");
}

}  // namespace
}  // namespace hcwarm::test
