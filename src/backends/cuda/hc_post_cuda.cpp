#include "backends/cuda/hc_post_cuda.hpp"

#include <fmt/format.h>

#include "backends/cuda/launch_stream.hpp"
#include "core/error.hpp"

namespace hcwarm::cuda {

namespace {
// (long long t, const unsigned short* out, const unsigned short* r_in, const float* post,
//  const float* comb, unsigned short* r_out) in namespace hcwarm_post; the generic kernel
// takes int hidden after t.
constexpr const char* kPostParams = "xPKtS2_PKfS4_Pt";
constexpr const char* kPostDynParams = "xiPKtS2_PKfS4_Pt";
}  // namespace

jit::KernelEntry post_entry(int hc, int hidden) {
  return jit::kernel_entry(0, {"hcwarm_post"}, "mhc_post_kernel", {hc, hidden, static_cast<int>(kCudaPostThreads)},
                           kPostParams);
}

jit::KernelEntry generic_post_entry() {
  return jit::kernel_entry(0, {"hcwarm_post"}, "mhc_post_dyn_kernel", {4, static_cast<int>(kCudaPostThreads)},
                           kPostDynParams);
}

jit::KernelSource mhc_post_cuda_source(int hc, int hidden) {
  return {fmt::format("// mhc_post CUDA: hc={} hidden={}\n#include \"cuda/mhc_post.cuh\"\n", hc, hidden), 1,
          {post_entry(hc, hidden)}};
}

void CudaHcPostBackend::bind(std::shared_ptr<const jit::LoadedModule> module) {
  fn_ = static_cast<CUfunction>(module->function(post_entry(hc_, hidden_).symbol));
  module_ = std::move(module);
}

void CudaHcPostBackend::bind_generic() {
  if (generic_fn_ != nullptr) return;
  const auto image = mhc_post_generic_fatbin();
  if (image.empty()) {
    HCWARM_THROW(ErrorKind::Unavailable, "this libhcwarm was built without nvcc: no generic CUDA hc_post kernel");
  }
  const ScopedContext scoped(device_);
  generic_module_ = CudaModuleLoader(device_).load("mhc_post_generic", image);
  generic_fn_ = static_cast<CUfunction>(generic_module_->function(generic_post_entry().symbol));
}

bool CudaHcPostBackend::capturing(const LaunchContext& launch) const { return launch_capturing(device_, launch); }

void CudaHcPostBackend::launch(const backends::HcPostParams& p, const LaunchContext& launch, bool generic) {
  const CUfunction fn = generic ? generic_fn_ : fn_;
  HCWARM_ASSERT(fn != nullptr, "hc_post (cuda): launched before its {} kernel was bound", generic ? "generic" : "JIT");
  const ScopedContext scoped(device_);
  long long t = p.num_tokens;
  int hidden = static_cast<int>(p.hidden);
  const void* args_p[] = {p.out, p.residual_in, p.post, p.comb, p.residual_out};
  void* params[] = {&t, &args_p[0], &args_p[1], &args_p[2], &args_p[3], &args_p[4]};
  void* generic_params[] = {&t, &hidden, &args_p[0], &args_p[1], &args_p[2], &args_p[3], &args_p[4]};
  const long long threads = t * (p.hidden / 8);
  const unsigned blocks = static_cast<unsigned>((threads + kCudaPostThreads - 1) / kCudaPostThreads);
  HCWARM_CHECK_CU(device_.driver(),
                  device_.driver().cuLaunchKernel(fn, blocks, 1, 1, kCudaPostThreads, 1, 1, 0,
                                                  launch_stream(device_, launch), generic ? generic_params : params,
                                                  nullptr));
}

}  // namespace hcwarm::cuda
