// hc_pre of the first layer from the token embedding (T, D), which stands for
// hc identical streams: every backend against hc_pre on the materialised
// copies (bit for bit: the kernels read the same values in the same order) and
// against the double-precision reference; its keys; bad input.
#include <gtest/gtest.h>

#include <cstring>

#include "common/jit_fixtures.hpp"
#include "backends/cpu/mhc_pre_cpu.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/embedded_kernels.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit/jit_runtime.hpp"
#include "embed_check.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreInput;
using mhc::HcPreOp;
using mhc::Variant;

TEST(HcPreEmbed, ReferenceIsHcPreOnTheCopies) {
  const EmbedCase c = make_case(3, 64, 5);
  const auto a = mhc::hc_pre_embed_reference(c.embed, 4, c.copies.fn, c.copies.scale, c.copies.base,
                                             &c.copies.norm_weight, {});
  expect_same(a, reference_of(c.copies, true), "reference");
  EXPECT_THROW(mhc::broadcast_streams(c.copies.residual, 4), Error) << "a rank-3 tensor is not an embedding";
}

TEST(HcPreEmbed, CpuSpecializedAndGenericEqualTheCopies) {
  CpuDevice dev;
  jit::JitRuntime jit(memory_only_jit());
  for (const Variant v : {Variant::Specialized, Variant::Generic}) {
    // 132 SMs: T 5 -> 64 splits (parts cross the stream boundaries), T 130 -> 44.
    HcPreOp op(Backend::Cpu, {4, 256}, {}, 132, &jit, dev, v);
    for (const int64_t T : {int64_t{5}, int64_t{130}}) {
      const EmbedCase c = make_case(T, 256, 30 + T);
      for (const bool norm : {true, false}) {
        const std::string what = std::string(to_string(v)) + " T=" + std::to_string(T) + (norm ? " norm" : "");
        const auto got = run_embed(op, dev, c, norm);
        expect_same(got, run_op(op, dev, c.copies, norm), what);
        expect_close(check_against_reference(got, c.copies, norm), what);
        EXPECT_TRUE(op.loaded(T, norm, HcPreInput::Embed)) << what;
      }
    }
  }
}

TEST(HcPreEmbed, ReferenceBackendTakesTheEmbedding) {
  CpuDevice dev;
  HcPreOp op(Backend::Reference, {4, 64}, {}, 132, nullptr, dev);
  const EmbedCase c = make_case(4, 64, 8);
  expect_same(run_embed(op, dev, c, true), reference_of(c.copies, true), "reference backend");
}

TEST(HcPreEmbed, KeysCarryTheInputAndResidualKeysAreUnchanged) {
  for (const Backend b : {Backend::Cpu, Backend::Cuda}) {
    const auto res = mhc::hc_pre_kernel_spec(b, {4, 4096}, 1, true);
    const auto emb = mhc::hc_pre_kernel_spec(b, {4, 4096}, 1, true, {}, HcPreInput::Embed);
    EXPECT_EQ(res.param("input"), "") << "residual specs have no input param (their keys stay as they were)";
    EXPECT_EQ(emb.param("input"), "embed");
    EXPECT_EQ(emb.param("one_pass"), "") << "the embedding never takes the one-pass kernel";
    EXPECT_NE(emb.source, res.source);
    if (b == Backend::Cpu) {
      EXPECT_NE(emb.source.find("hcwarm_mhc::kInputEmbed"), std::string::npos);
    } else {  // the kernels' INPUT template argument: hcwarm_mhc::kInputEmbed
      ASSERT_FALSE(emb.entries.empty());
      EXPECT_NE(emb.entries[0].expression.find("mhc_pre_partial_kernel<1, 4, 4096, 1, "), std::string::npos)
          << emb.entries[0].expression;
      EXPECT_NE(emb.entries, res.entries);
    }
  }
  EXPECT_EQ(mhc::hc_pre_kernel_spec(Backend::Cuda, {4, 4096}, 1, true).param("one_pass"), "1");
  // One key per bucket, as for the residual path.
  const auto specs = mhc::hc_pre_planned_specs(Backend::Cpu, {4, 4096}, 132, 1024, true, {}, HcPreInput::Embed);
  EXPECT_EQ(specs.size(), mhc::hc_pre_planned_specs(Backend::Cpu, {4, 4096}, 132, 1024, true).size());
  for (const auto& s : specs) EXPECT_EQ(s.param("input"), "embed");
  EXPECT_THROW(cuda::mhc_pre_cuda_source(1, 4, 4096, true, /*one_pass=*/true, true,
                                         /*embed=*/true),
               Error);
}

TEST(HcPreEmbed, KernelsRefuseAMismatchedOrUnknownInput) {
  // A residual kernel handed an embedding (or an unknown input) writes nothing and says so.
  const EmbedCase c = make_case(2, 64, 9);
  std::vector<uint16_t> y(2 * 64, 0x1234);
  std::vector<float> post(8), comb(32), partials(2 * 64 * hcwarm_mhc::kPartialStride);
  hcwarm_mhc_pre_params p{};
  p.num_tokens = 2;
  p.residual = reinterpret_cast<const unsigned short*>(c.embed.data());
  p.fn = c.copies.fn.data();
  p.scale = c.copies.scale.data();
  p.base = c.copies.base.data();
  p.y = y.data();
  p.post = post.data();
  p.comb = comb.data();
  p.partials = partials.data();
  p.num_splits = 2;
  p.num_parts = 2;
  p.hc_mult = 4;
  p.hidden = 64;
  p.sinkhorn_iters = 20;
  ThreadPool pool(1);
  p.input = 7;
  EXPECT_EQ(cpu::launch_mhc_pre_host(cpu::mhc_pre_generic_host_kernels(4, false), p, pool), hcwarm_mhc::kBadArgument);
  for (const uint16_t v : y) ASSERT_EQ(v, 0x1234);
}

// The embedding's CUDA kernels compile under NVRTC (no GPU needed).
TEST(MhcPreCudaSource, EmbedCompilesUnderNvrtc) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TempDir work;
  {
    const jit::KernelSource src = cuda::mhc_pre_cuda_source(16, 4, 4096, true, false, true, hcwarm_mhc::kInputEmbed);
    const auto out = nvrtc->compile(src, kernels::embedded_files(), work.path());
    const auto set = jit::unpack_cubin_set(out.binary);
    const auto images = set.value_or(std::vector<std::span<const std::byte>>{out.binary});
    size_t found = 0;
    for (const auto image : images) {
      const std::string bytes(reinterpret_cast<const char*>(image.data()), image.size());
      for (const auto& e : src.entries) found += bytes.find(e.symbol) != std::string::npos;
    }
    // The partial, the finish and the fn fold, each in its own part.
    ASSERT_EQ(src.entries.size(), 3u);
    EXPECT_EQ(found, 3u);
    EXPECT_EQ(src.parts, 3);
    EXPECT_NE(src.entries[2].expression.find("::mhc_pre_fold_kernel<4, 4096>"), std::string::npos)
        << src.entries[2].expression;
    // The pair takes the embedding's input kind as a template argument.
    for (int i = 0; i < 2; ++i) {
      EXPECT_NE(src.entries[i].expression.find(", 1, "), std::string::npos) << src.entries[i].expression;
    }
  }
}

}  // namespace
}  // namespace hcwarm::test
