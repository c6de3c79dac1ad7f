// CUDA hc_pre of the first layer from the embedding: the specialized and
// generic kernels fold fn over the hc streams, so they match the float64
// reference on the materialised copies within the tolerances of hc_pre (not
// bit for bit), with and without the fused norm, in the split buckets of small
// and large T (the large one takes the two kernels, never the one-pass kernel):
// T = 1 and 77 fold fn in the partial kernel, T = 2048 and 9000 run the fold
// kernel first (hcwarm_mhc::cuda_embed_folds). Label `gpu`.
#include <gtest/gtest.h>

#include "../backends/embed_check.hpp"
#include "cuda_fixture.hpp"
#include "graph_capture.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::test {
namespace {

class HcPreEmbedCuda : public CudaTest {};

TEST_F(HcPreEmbedCuda, MatchesTheReferenceOnTheCopies) {
  cuda::CudaDevice& dev = *device_;
  for (const int hidden : {4096, 7168}) {
    for (const mhc::Variant v : {mhc::Variant::Specialized, mhc::Variant::Generic}) {
      mhc::HcPreOp op(mhc::Backend::Cuda, {4, hidden}, {}, dev.num_sms(), jit_, dev, v);
      static_assert(!hcwarm_mhc::cuda_embed_folds(77) && hcwarm_mhc::cuda_embed_folds(2048),
                    "both routes of the fold among the cases");
      for (const int64_t T : {int64_t{1}, int64_t{77}, int64_t{2048}, int64_t{9000}}) {
        const EmbedCase c = make_case(T, hidden, 60 + T + hidden);
        for (const bool norm : {true, false}) {
          const std::string what = std::string(mhc::to_string(v)) + " D=" + std::to_string(hidden) +
                                   " T=" + std::to_string(T) + (norm ? " norm" : "");
          expect_close(check_against_reference(run_embed(op, dev, c, norm), c.copies, norm), what);
        }
      }
    }
  }
}

// The generic fatbin's streaming finish (hcwarm_mhc::kCudaAnyStreamingClass), which serves
// every bucket of at most 4 splits, is the specialized classes' finish with the width read
// at run time: the same bits as the specialization in the 4-split (T = 2048) and 1-split
// (T = 9000) buckets, with and without the norm.
TEST_F(HcPreEmbedCuda, GenericStreamingFinishGivesTheSpecializedBits) {
  cuda::CudaDevice& dev = *device_;
  for (const int hidden : {4096, 7168}) {
    mhc::HcPreOp spec(mhc::Backend::Cuda, {4, hidden}, {}, dev.num_sms(), jit_, dev, mhc::Variant::Specialized);
    mhc::HcPreOp gen(mhc::Backend::Cuda, {4, hidden}, {}, dev.num_sms(), nullptr, dev, mhc::Variant::Generic);
    for (const int64_t T : {int64_t{2048}, int64_t{9000}}) {
      ASSERT_LE(gen.num_splits(T), 4) << "T=" << T << " is not a streaming bucket here";
      const EmbedCase c = make_case(T, hidden, 700 + T + hidden);
      for (const bool norm : {true, false}) {
        EXPECT_EQ(differing_values(run_embed(gen, dev, c, norm), run_embed(spec, dev, c, norm)), 0)
            << "D=" << hidden << " T=" << T << (norm ? " norm" : "");
      }
    }
  }
}

// Under CUDA-graph capture the fold kernel and the partial kernel, its
// programmatic dependent, replay as they ran eagerly: the same bits, on the
// caller's stream and workspace, with the fold (T = 2048) and without (T = 77).
TEST_F(HcPreEmbedCuda, GraphReplayEqualsEagerWithTheFoldedFn) {
  cuda::CudaDevice& dev = *device_;
  const TestStream owned_stream(dev);
  const cuda::CUstream stream = owned_stream.get();
  ASSERT_NE(stream, nullptr);
  mhc::HcPreOp op(mhc::Backend::Cuda, {4, 4096}, {}, dev.num_sms(), jit_, dev);
  for (const int64_t T : {int64_t{77}, int64_t{2048}}) {
    const EmbedCase c = make_case(T, 4096, 500 + T);
    op.load(op.num_splits(T), true, mhc::HcPreInput::Embed);  // nothing may compile inside capture
    DeviceBuffer ws(dev, op.workspace_bytes(T));
    const mhc::LaunchContext launch{stream, ws.get(), ws.bytes()};
    StagedHcPre s = stage_hc_pre(dev, c.copies, T, true);
    const DeviceBuffer e = hcwarm::test::upload(dev, c.embed.data(), c.embed.numel() * sizeof(bf16));
    s.args.residual = e.as<bf16>();
    s.args.input = mhc::HcPreInput::Embed;
    op.run(s.args, launch);
    ASSERT_EQ(dev.driver().cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
    const mhc::HcPreResult eager = s.read_back(dev);
    for (DeviceBuffer* out : {&s.y, &s.post, &s.comb}) dev.fill_zero(out->get(), out->bytes());
    dev.synchronize();
    ASSERT_TRUE(capture_and_replay(dev, stream, [&] { op.run(s.args, launch); }, 2)) << "T=" << T;
    expect_same(s.read_back(dev), eager, "T=" + std::to_string(T));
  }
}

}  // namespace
}  // namespace hcwarm::test
