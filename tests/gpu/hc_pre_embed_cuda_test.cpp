// CUDA hc_pre of the first layer from the embedding: the specialized and
// generic kernels fold fn over the hc streams, so they match the float64
// reference on the materialised copies within the tolerances of hc_pre (not
// bit for bit), with and without the fused norm, in the split buckets of small
// and large T (the large one takes the two kernels, never the one-pass kernel).
// Label `gpu`.
#include <gtest/gtest.h>

#include "../backends/embed_check.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::test {
namespace {

TEST(HcPreEmbedCuda, MatchesTheReferenceOnTheCopies) {
  const auto env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) GTEST_SKIP() << "no CUDA device";
  cuda::CudaDevice dev(0, env.cuda_library);
  jit::JitOptions o;
  o.cache_dir = std::nullopt;
  o.nvrtc_library = env.nvrtc_library;
  jit::JitRuntime jit(o);
  jit.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(dev));
  for (const int hidden : {4096, 7168}) {
    for (const mhc::Variant v : {mhc::Variant::Specialized, mhc::Variant::Generic}) {
      mhc::HcPreOp op(mhc::Backend::Cuda, {4, hidden}, {}, dev.num_sms(), &jit, dev, v);
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

}  // namespace
}  // namespace hcwarm::test
