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
    backend_ = std::make_unique<cuda::CudaHcPostBackend>(*cd, dims.hc_mult, static_cast<int>(dims.hidden));
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
  s.set_source(cuda::mhc_post_cuda_source(dims.hc_mult, static_cast<int>(dims.hidden)));
  return s;
}

std::vector<jit::KernelSpec> HcPostOp::planned_specs() const {
  if (!backend_->needs_module()) return {};
  return {cuda_spec(dims_, cuda_arch_)};
}

bool HcPostOp::tiered() const {
  return tiered_ && backend_->needs_module() && jit_ != nullptr && jit_->tiered() && dims_.hc_mult == 4 &&
         backend_->has_generic();
}

void HcPostOp::load() {
  if (!backend_->needs_module()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bound_) {
    backend_->bind(jit_->get(cuda_spec(dims_, cuda_arch_)));
    bound_ = true;
    pending_.reset();
  }
  if (tiered() && !generic_bound_) {
    backend_->bind_generic();
    generic_bound_ = true;
  }
}

bool HcPostOp::loaded() const {
  if (!backend_->needs_module()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return bound_ || (generic_bound_ && tiered());
}

bool HcPostOp::specialized_loaded() const {
  if (!backend_->needs_module()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return bound_;
}

bool HcPostOp::select_kernel(bool capturing) {
  if (bound_) return true;
  const bool tier = tiered();
  if (capturing) {
    if (tier && generic_bound_) {
      jit_->note_served_by_generic();
      return false;
    }
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "hc_post (cuda, hc {}, hidden {}): the kernel is not loaded{}, and the call is inside CUDA-graph "
                 "capture, where nothing may be compiled or loaded: prewarm (hcwarm.prewarm / kernel_warmup) or "
                 "make one eager call before capturing",
                 dims_.hc_mult, dims_.hidden, tier ? " (nor the generic one)" : "");
  }
  if (!tier) {
    backend_->bind(jit_->get(cuda_spec(dims_, cuda_arch_)));
    bound_ = true;
    return true;
  }
  if (!pending_ || pending_->state.load(std::memory_order_acquire) == jit::PendingModule::Landed) {
    jit::TieredModule t = jit_->get_or_schedule(cuda_spec(dims_, cuda_arch_));
    if (t.module) {
      backend_->bind(std::move(t.module));
      bound_ = true;
      pending_.reset();
      return true;
    }
    HCWARM_ASSERT(t.pending != nullptr, "tiered module provider returned neither a module nor a pending compile");
    pending_ = std::move(t.pending);
  }
  if (!generic_bound_) {
    backend_->bind_generic();
    generic_bound_ = true;
  }
  // A failed background compile (logged by the runtime) leaves the generic kernel serving, uncounted.
  if (pending_->state.load(std::memory_order_acquire) != jit::PendingModule::Failed) jit_->note_served_by_generic();
  return false;
}

void HcPostOp::run(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post,
                   const float* comb, bf16* residual_out, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(num_tokens >= 0, "hc_post: num_tokens must be >= 0, got {}", num_tokens);
  if (num_tokens == 0) return;
  backends::HcPostParams p;
  p.num_tokens = num_tokens;
  p.hc_mult = dims_.hc_mult;
  p.hidden = dims_.hidden;
  p.out = out;
  p.residual_in = residual_in;
  p.post = post;
  p.comb = comb;
  p.residual_out = residual_out;
  if (!backend_->needs_module()) {
    backend_->launch(p, launch, /*generic=*/false);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const bool specialized = bound_ || select_kernel(backend_->capturing(launch));
  backend_->launch(p, launch, /*generic=*/!specialized);
}

}  // namespace hcwarm::mhc
