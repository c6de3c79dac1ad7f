// CUDA hc_pre of the first layer from the embedding: specialized and generic
// kernels equal hc_pre on the materialised copies bit for bit and match the
// reference, in the split buckets of small and large T (the large one takes
// the two kernels, never the one-pass kernel). Label `gpu`.
#include <gtest/gtest.h>

#include "../backends/embed_check.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::test {
namespace {

TEST(HcPreEmbedCuda, EqualsTheCopies) {
  const auto env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) GTEST_SKIP() << "no CUDA device";
  cuda::CudaDevice dev(0, env.cuda_library);
  jit::JitOptions o;
  o.cache_dir = std::nullopt;
  o.nvrtc_library = env.nvrtc_library;
  jit::JitRuntime jit(o);
  jit.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(dev));
  for (const mhc::Variant v : {mhc::Variant::Specialized, mhc::Variant::Generic}) {
    mhc::HcPreOp op(mhc::Backend::Cuda, {4, 4096}, {}, dev.num_sms(), &jit, dev, v);
    // The copies through the two kernels (the one-pass kernel parts K differently).
    mhc::HcPreOp two(mhc::Backend::Cuda, {4, 4096}, {}, dev.num_sms(), &jit, dev, v);
    two.set_cuda_one_pass(false);
    for (const int64_t T : {int64_t{1}, int64_t{77}, int64_t{9000}}) {
      const EmbedCase c = make_case(T, 4096, 60 + T);
      const std::string what = std::string(mhc::to_string(v)) + " T=" + std::to_string(T);
      const auto got = run_embed(op, dev, c, true);
      expect_same(got, run_op(two, dev, c.copies, true), what);
      expect_close(check_against_reference(got, c.copies, true), what);
    }
  }
}

}  // namespace
}  // namespace hcwarm::test
