#include "mhc/hc_post_op.hpp"

#include <fmt/format.h>

#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "jit/jit_runtime.hpp"
#include "core/thread_pool.hpp"

namespace hcwarm::mhc {

HcPostOp::HcPostOp(MhcDims dims, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
                   std::shared_ptr<ThreadPool> pool)
    : dims_(dims), device_(device), jit_(jit), cuda_arch_(std::move(cuda_arch)), pool_(std::move(pool)) {
  HCWARM_CHECK_ARG(dims.hc_mult >= 1 && dims.hidden >= 1, "hc_post: bad dims hc={} hidden={}", dims.hc_mult,
                   dims.hidden);
  if (device.kind() == DeviceKind::Cuda) {
    HCWARM_CHECK_ARG(jit_ != nullptr, "hc_post on CUDA needs a JIT runtime");
    HCWARM_CHECK_ARG(dims.hidden % 8 == 0, "hc_post on CUDA needs hidden % 8 == 0, got {}", dims.hidden);
  }
}

jit::KernelSpec HcPostOp::cuda_spec(MhcDims dims, const std::string& arch) {
  jit::KernelSpec s;
  s.family = "mhc_post";
  s.params = {{"hc", std::to_string(dims.hc_mult)}, {"hidden", std::to_string(dims.hidden)}};
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  s.source = fmt::format(
      "#include \"cuda/mhc_post.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__(256) hcwarm_mhc_post(long long t, const unsigned short* out,\n"
      "    const unsigned short* r_in, const float* post, const float* comb, unsigned short* r_out) {{\n"
      "  hcwarm_post::mhc_post<{}, {}>(t, out, r_in, post, comb, r_out);\n"
      "}}\n",
      dims.hc_mult, dims.hidden);
  return s;
}

std::vector<jit::KernelSpec> HcPostOp::planned_specs() const {
  if (device_.kind() != DeviceKind::Cuda) return {};
  return {cuda_spec(dims_, cuda_arch_)};
}

void HcPostOp::load() {
  if (device_.kind() != DeviceKind::Cuda) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!module_) module_ = jit_->get(cuda_spec(dims_, cuda_arch_));
}

bool HcPostOp::loaded() const {
  if (device_.kind() != DeviceKind::Cuda) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return module_ != nullptr;
}

void HcPostOp::run(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post,
                   const float* comb, bf16* residual_out, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(num_tokens >= 0, "hc_post: num_tokens must be >= 0, got {}", num_tokens);
  if (num_tokens == 0) return;
  if (device_.kind() == DeviceKind::Cuda) {
    run_cuda(num_tokens, out, residual_in, post, comb, residual_out, launch);
  } else {
    run_cpu(num_tokens, out, residual_in, post, comb, residual_out);
  }
}

void HcPostOp::run_cpu(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post,
                       const float* comb, bf16* residual_out) {
  const int hc = dims_.hc_mult;
  const int64_t d = dims_.hidden;
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<float> acc(static_cast<size_t>(hc) * d);
    for (int64_t t = t0; t < t1; ++t) {
      const float* p = post + t * hc;
      const float* c = comb + t * hc * hc;
      for (int j = 0; j < hc; ++j) {
        for (int64_t e = 0; e < d; ++e) acc[j * d + e] = p[j] * out[t * d + e].to_float();
      }
      for (int i = 0; i < hc; ++i) {
        const bf16* r = residual_in + (t * hc + i) * d;
        for (int j = 0; j < hc; ++j) {
          const float w = c[i * hc + j];
          for (int64_t e = 0; e < d; ++e) acc[j * d + e] += w * r[e].to_float();
        }
      }
      // All inputs of token t are read before any of its outputs is written.
      for (int64_t i = 0; i < hc * d; ++i) residual_out[t * hc * d + i] = bf16::from_float(acc[i]);
    }
  };
  if (pool_) {
    pool_->parallel_for(num_tokens, 16, body);
  } else {
    body(0, num_tokens);
  }
}

void HcPostOp::run_cuda(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post,
                        const float* comb, bf16* residual_out, const LaunchContext& launch) {
  auto& dev = static_cast<cuda::CudaDevice&>(device_);
  const cuda::ScopedContext scoped(dev);
  const cuda::CUstream stream = launch.stream ? static_cast<cuda::CUstream>(*launch.stream) : dev.stream();
  if (!loaded() && cuda::stream_capturing(dev.driver(), stream)) {
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "hc_post (cuda, hc {}, hidden {}): the kernel is not loaded, and the call is inside CUDA-graph "
                 "capture, where nothing may be compiled or loaded: prewarm (hcwarm.prewarm / kernel_warmup) or "
                 "make one eager call before capturing",
                 dims_.hc_mult, dims_.hidden);
  }
  load();
  std::shared_ptr<const jit::LoadedModule> module;
  {
    std::lock_guard<std::mutex> lock(mu_);
    module = module_;
  }
  auto fn = static_cast<cuda::CUfunction>(module->function("hcwarm_mhc_post"));
  long long t = num_tokens;
  const void* args_p[] = {out, residual_in, post, comb, residual_out};
  void* params[] = {&t, &args_p[0], &args_p[1], &args_p[2], &args_p[3], &args_p[4]};
  const long long threads = t * (dims_.hidden / 8);
  const unsigned blocks = static_cast<unsigned>((threads + 255) / 256);
  HCWARM_CHECK_CU(dev.driver(),
                  dev.driver().cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, stream, params, nullptr));
}

}  // namespace hcwarm::mhc
