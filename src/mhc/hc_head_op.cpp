#include "mhc/hc_head_op.hpp"

#include "backends/cpu/hc_head_cpu.hpp"
#include "backends/cuda/hc_head_cuda.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::mhc {

HcHeadOp::HcHeadOp(MhcDims dims, MhcConstants constants, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
                   std::shared_ptr<ThreadPool> pool)
    : dims_(dims), constants_(constants), device_(device), jit_(jit), cuda_arch_(std::move(cuda_arch)) {
  HCWARM_CHECK_ARG(dims.hc_mult >= 1 && dims.hc_mult <= 8 && dims.hidden >= 1,
                   "hc_head: bad dims hc={} hidden={} (hc in [1, 8])", dims.hc_mult, dims.hidden);
  if (device.kind() == DeviceKind::Cuda) {
    HCWARM_CHECK_ARG(jit_ != nullptr, "hc_head on CUDA needs a JIT runtime");
    const char* bad = cuda::head_shape_unsupported(dims.hc_mult, dims.hidden);
    HCWARM_CHECK_ARG(bad == nullptr, "hc_head on CUDA (hc {}, hidden {}): {}", dims.hc_mult, dims.hidden, bad ? bad : "");
    auto* cd = dynamic_cast<cuda::CudaDevice*>(&device);
    HCWARM_CHECK_ARG(cd != nullptr, "hc_head: device {} is not a CUDA device", device.name());
    backend_ = std::make_unique<cuda::CudaHcHeadBackend>(*cd, dims.hc_mult, dims.hidden);
  } else {
    HCWARM_CHECK_ARG(dims.hidden % 16 == 0, "hc_head on the CPU needs hidden % 16 == 0, got {}", dims.hidden);
    backend_ = std::make_unique<cpu::CpuHcHeadBackend>(std::move(pool));
  }
}

HcHeadOp::~HcHeadOp() = default;

jit::KernelSpec HcHeadOp::cuda_spec(MhcDims dims, const std::string& arch) {
  jit::KernelSpec s;
  s.family = "mhc_head";
  s.params = {{"hc", std::to_string(dims.hc_mult)}, {"hidden", std::to_string(dims.hidden)}};
  s.target = jit::TargetKind::Cuda;
  s.arch = arch;
  s.source = cuda::mhc_head_cuda_source(dims.hc_mult, dims.hidden);
  return s;
}

std::vector<jit::KernelSpec> HcHeadOp::planned_specs() const {
  if (!backend_->needs_module()) return {};
  return {cuda_spec(dims_, cuda_arch_)};
}

void HcHeadOp::load() {
  if (!backend_->needs_module()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bound_) {
    backend_->bind(jit_->get(cuda_spec(dims_, cuda_arch_)));
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
