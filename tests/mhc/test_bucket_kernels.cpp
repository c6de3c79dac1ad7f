// A split bucket's kernels are the same at every token count of it: what lets
// warmup launch each bucket once on one token (the model hook and
// OpContext::prewarm) instead of at the bucket's largest count.
#include <gtest/gtest.h>

#include "mhc/hc_pre_op.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {
namespace {

TEST(BucketKernels, EveryTokenCountOfABucketSelectsTheSameKernel) {
  int checked = 0;
  for (const Backend backend : {Backend::Cpu, Backend::Cuda}) {
    for (const int hidden : {256, 1024, 4096, 7168}) {
      for (const int sms : {2, 8, 16, 78, 132}) {
        for (const bool one_pass : {true, false}) {
          for (const HcPreInput input : {HcPreInput::Residual, HcPreInput::Embed, HcPreInput::Post}) {
            const MhcDims dims{4, hidden};
            CudaKernelOptions cuda;
            cuda.one_pass = one_pass;
            // The split count dispatch (HcPreOp::kernel_splits) gives T, and the spec it names.
            auto splits_at = [&](int64_t t) {
              return hc_pre_kernel_splits(backend, dims, num_splits(t, dims.k(), sms), cuda, input);
            };
            for (const SplitBucket& b : split_buckets(20000, dims.k(), sms)) {
              const int at_max = splits_at(b.max_tokens);
              ASSERT_EQ(splits_at(b.min_tokens), at_max) << hidden << " " << sms << " bucket " << b.min_tokens;
              ASSERT_EQ(splits_at((b.min_tokens + b.max_tokens) / 2), at_max);
              // What the one-token warmup launch is given: the bucket's own split count, mapped the same way.
              ASSERT_EQ(hc_pre_kernel_splits(backend, dims, b.num_splits, cuda, input), at_max);
              const jit::KernelSpec lo = hc_pre_kernel_spec(backend, dims, splits_at(b.min_tokens), true, cuda, input);
              const jit::KernelSpec hi = hc_pre_kernel_spec(backend, dims, at_max, true, cuda, input);
              ASSERT_EQ(lo.params, hi.params);
              ASSERT_EQ(lo.source, hi.source);
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace hcwarm::mhc
