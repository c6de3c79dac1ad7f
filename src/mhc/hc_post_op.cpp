#include "mhc/hc_post_op.hpp"

#include "backends/cpu/hc_post_cpu.hpp"
#include "backends/cuda/hc_post_cuda.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::mhc {

HcPostOp::HcPostOp(MhcDims dims, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
                   std::shared_ptr<ThreadPool> pool)
    : dims_(dims), device_(device), jit_(jit), cuda_arch_(std::move(cuda_arch)) {
  HCWARM_CHECK_ARG(dims.hc_mult >= 1 && dims.hidden >= 1, "hc_post: bad dims hc={} hidden={}", dims.hc_mult,
                   dims.hidden);
  if (device.kind() == DeviceKind::Cuda) {
    HCWARM_CHECK_ARG(jit_ != nullptr, "hc_post on CUDA needs a JIT runtime");
    HCWARM_CHECK_ARG(dims.hidden % 8 == 0, "hc_post on CUDA needs hidden % 8 == 0, got {}", dims.hidden);
    auto* cd = dynamic_cast<cuda::CudaDevice*>(&device);
    HCWARM_CHECK_ARG(cd != nullptr, "hc_post: device {} is not a CUDA device", device.name());
    backend_ = std::make_unique<cuda::CudaHcPostBackend>(*cd);
  } else {
    backend_ = std::make_unique<cpu::CpuHcPostBackend>(std::move(pool));
  }
}

HcPostOp::~HcPostOp() = default;

jit::KernelSpec HcPostOp::cuda_spec(MhcDims dims, const std::string& arch) {
  jit::KernelSpec s;
  s.family = "mhc_post";
  s.params = {{"hc", std::to_string(dims.hc_mult)}, {"hidden", std::to_string(dims.hidden)}};
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  s.source = cuda::mhc_post_cuda_source(dims.hc_mult, dims.hidden);
  return s;
}

std::vector<jit::KernelSpec> HcPostOp::planned_specs() const {
  if (!backend_->needs_module()) return {};
  return {cuda_spec(dims_, cuda_arch_)};
}

void HcPostOp::load() {
  if (!backend_->needs_module()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bound_) {
    backend_->bind(jit_->get(cuda_spec(dims_, cuda_arch_)));
    bound_ = true;
  }
}

bool HcPostOp::loaded() const {
  if (!backend_->needs_module()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return bound_;
}

void HcPostOp::run(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post,
                   const float* comb, bf16* residual_out, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(num_tokens >= 0, "hc_post: num_tokens must be >= 0, got {}", num_tokens);
  if (num_tokens == 0) return;
  if (!loaded() && backend_->capturing(launch)) {
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "hc_post (cuda, hc {}, hidden {}): the kernel is not loaded, and the call is inside CUDA-graph "
                 "capture, where nothing may be compiled or loaded: prewarm (hcwarm.prewarm / kernel_warmup) or "
                 "make one eager call before capturing",
                 dims_.hc_mult, dims_.hidden);
  }
  load();
  backends::HcPostParams p;
  p.num_tokens = num_tokens;
  p.hc_mult = dims_.hc_mult;
  p.hidden = dims_.hidden;
  p.out = out;
  p.residual_in = residual_in;
  p.post = post;
  p.comb = comb;
  p.residual_out = residual_out;
  backend_->launch(p, launch);
}

}  // namespace hcwarm::mhc
