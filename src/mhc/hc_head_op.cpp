#include "mhc/hc_head_op.hpp"

#include "backends/cpu/hc_head_cpu.hpp"
#include "backends/cuda/hc_head_cuda.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::mhc {

HcHeadOp::HcHeadOp(MhcDims dims, MhcConstants constants, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
                   std::shared_ptr<ThreadPool> pool)
    : dims_(dims),
      constants_(constants),
      device_(device),
      jit_(jit),
      cuda_arch_(std::move(cuda_arch)),
      workspace_(device) {
  HCWARM_CHECK_ARG(dims.hc_mult >= 1 && dims.hc_mult <= 8 && dims.hidden >= 1,
                   "hc_head: bad dims hc={} hidden={} (hc in [1, 8])", dims.hc_mult, dims.hidden);
  if (device.kind() == DeviceKind::Cuda) {
    HCWARM_CHECK_ARG(jit_ != nullptr, "hc_head on CUDA needs a JIT runtime");
    const char* bad = cuda::head_shape_unsupported(dims.hc_mult, dims.hidden);
    HCWARM_CHECK_ARG(bad == nullptr, "hc_head on CUDA (hc {}, hidden {}): {}", dims.hc_mult, dims.hidden, bad ? bad : "");
    auto* cd = dynamic_cast<cuda::CudaDevice*>(&device);
    HCWARM_CHECK_ARG(cd != nullptr, "hc_head: device {} is not a CUDA device", device.name());
    cuda_portable_ = cd->portable();
    auto b = std::make_unique<cuda::CudaHcHeadBackend>(*cd, dims.hc_mult, dims.hidden);
    cuda_backend_ = b.get();
    backend_ = std::move(b);
  } else {
    HCWARM_CHECK_ARG(dims.hidden % 16 == 0, "hc_head on the CPU needs hidden % 16 == 0, got {}", dims.hidden);
    backend_ = std::make_unique<cpu::CpuHcHeadBackend>(std::move(pool));
  }
}

HcHeadOp::~HcHeadOp() = default;

jit::KernelSpec HcHeadOp::cuda_spec(MhcDims dims, const std::string& arch, bool portable) {
  jit::KernelSpec s;
  s.family = "mhc_head";
  s.params = {{"hc", std::to_string(dims.hc_mult)}, {"hidden", std::to_string(dims.hidden)}};
  if (portable) s.params.emplace_back("portable", "1");
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  s.set_source(cuda::mhc_head_cuda_source(dims.hc_mult, dims.hidden, portable));
  return s;
}

std::vector<jit::KernelSpec> HcHeadOp::planned_specs() const {
  if (!backend_->needs_module()) return {};
  return {cuda_spec(dims_, cuda_arch_, cuda_portable_)};
}

void HcHeadOp::set_cuda_one_pass(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  one_pass_ = on;
  if (cuda_backend_ == nullptr) return;
  const int64_t from = one_pass_min_tokens_ > 0 ? one_pass_min_tokens_ : cuda::head_one_pass_min_tokens(dims_.hidden);
  cuda_backend_->set_one_pass_min_tokens(on ? from : INT64_MAX);
}

void HcHeadOp::set_cuda_one_pass_min_tokens(int64_t num_tokens) {
  HCWARM_CHECK_ARG(num_tokens >= 1, "hc_head: the one-pass kernel's first token count must be >= 1, got {}", num_tokens);
  bool on = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    one_pass_min_tokens_ = num_tokens;
    on = one_pass_;
  }
  set_cuda_one_pass(on);
}

size_t HcHeadOp::workspace_bytes(int64_t num_tokens) const { return backend_->workspace_bytes(num_tokens); }

void HcHeadOp::reserve_workspace(int64_t max_num_tokens) {
  // The one-pass workspace grows with T: the largest T needs the most.
  const size_t bytes = workspace_bytes(max_num_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > 0) workspace_.ensure(bytes);
}

void HcHeadOp::load() {
  if (!backend_->needs_module()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bound_) {
    backend_->bind(jit_->get(cuda_spec(dims_, cuda_arch_, cuda_portable_)));
    bound_ = true;
  }
}

bool HcHeadOp::loaded() const {
  if (!backend_->needs_module()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return bound_;
}

void HcHeadOp::run(const HcHeadArgs& a, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(a.num_tokens >= 0, "hc_head: num_tokens must be >= 0, got {}", a.num_tokens);
  if (a.num_tokens == 0) return;
  HCWARM_CHECK_ARG(a.residual && a.fn && a.scale && a.base && a.y, "hc_head: a required pointer is null");
  hcwarm_mhc_head_params p{};
  p.num_tokens = a.num_tokens;
  p.residual = reinterpret_cast<const unsigned short*>(a.residual);
  p.fn = a.fn;
  p.scale = a.scale;
  p.base = a.base;
  p.y = reinterpret_cast<unsigned short*>(a.y);
  p.hc_mult = dims_.hc_mult;
  p.hidden = dims_.hidden;
  p.hc_eps = constants_.hc_eps;
  p.rms_eps = constants_.rms_eps;
  p.workspace = launch.workspace;
  p.workspace_bytes = launch.workspace_bytes;
  if (const char* bad = backend_->unsupported_argument(p)) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "hc_head: {} is not 16-byte aligned (the kernel moves 16 bytes at a time)",
                 bad);
  }
  if (!loaded() && backend_->capturing(launch)) {
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "hc_head (cuda, hc {}, hidden {}): the mhc_head kernel is not loaded, and the call is inside "
                 "CUDA-graph capture, where nothing may be compiled or loaded: prewarm (hcwarm.prewarm / "
                 "kernel_warmup) or make one eager call before capturing",
                 dims_.hc_mult, dims_.hidden);
  }
  load();
  const size_t need = backend_->workspace_bytes(a.num_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  if (need > 0 && launch.workspace != nullptr) {
    HCWARM_CHECK_ARG(launch.workspace_bytes >= need, "hc_head: the workspace holds {} bytes, T={} needs {}",
                     launch.workspace_bytes, a.num_tokens, need);
  } else if (need > 0) {
    if (workspace_.bytes() < need && backend_->capturing(launch)) {
      HCWARM_THROW(ErrorKind::NotWarmed,
                   "hc_head (cuda, hc {}, hidden {}): the op's workspace holds {} bytes and T={} needs {}; inside "
                   "CUDA-graph capture it cannot grow: pass a workspace, or reserve_workspace(max_num_tokens) before "
                   "capturing",
                   dims_.hc_mult, dims_.hidden, workspace_.bytes(), a.num_tokens, need);
    }
    workspace_.ensure(need);
    p.workspace = workspace_.get();
    p.workspace_bytes = workspace_.bytes();
  }
  backend_->launch(p, launch);
}

HostTensor<bf16> run_hc_head_host(HcHeadOp& op, Device& device, const HostTensor<bf16>& residual,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base) {
  check_hc_head_shapes(residual, fn, scale, base);
  const int64_t T = residual.dim(0);
  const int64_t D = residual.dim(2);
  HCWARM_CHECK_ARG(residual.dim(1) == op.dims().hc_mult && D == op.dims().hidden,
                   "hc_head: residual {} does not match the op's hc_mult {} and hidden {}",
                   shape_string(residual.shape()), op.dims().hc_mult, op.dims().hidden);
  HostTensor<bf16> y({T, D});
  if (T == 0) return y;
  auto upload = [&](const void* src, size_t bytes) {
    DeviceBuffer b(device, bytes);
    device.copy_from_host(b.get(), src, bytes);
    return b;
  };
  DeviceBuffer r = upload(residual.data(), residual.numel() * sizeof(bf16));
  DeviceBuffer f = upload(fn.data(), fn.numel() * sizeof(float));
  DeviceBuffer s = upload(scale.data(), scale.numel() * sizeof(float));
  DeviceBuffer b = upload(base.data(), base.numel() * sizeof(float));
  DeviceBuffer out(device, y.numel() * sizeof(bf16));
  op.run({T, r.as<bf16>(), f.as<float>(), s.as<float>(), b.as<float>(), out.as<bf16>()});
  device.synchronize();
  device.copy_to_host(y.data(), out.get(), y.numel() * sizeof(bf16));
  return y;
}

}  // namespace hcwarm::mhc
