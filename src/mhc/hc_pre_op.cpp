// HcPreOp: construction and options, planning a call, and running it. The
// kernel cache and its tiering live in hc_pre_tiering.cpp.
#include "mhc/hc_pre_op.hpp"

#include <algorithm>
#include <mutex>

#include "backends/cpu/hc_pre_cpu_backend.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/hc_pre_cuda_backend.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "jit/cuda_targets.hpp"
#include "jit/jit_runtime.hpp"
#include "kernels/common/mhc_params.hpp"
#include "mhc/hc_pre_arguments.hpp"
#include "mhc/hc_pre_reference_run.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {

HcPreOp::HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms, jit::JitRuntime* jit,
                 Device& device, Variant variant)
    : HcPreOp(backend, dims, constants, num_sms, std::unique_ptr<jit::ModuleProvider>(), device, variant) {
  modules_ = jit;
  if (uses_fast_path()) {
    HCWARM_CHECK_ARG(modules_ != nullptr, "the {} specialized backend needs a JIT runtime", to_string(backend));
  }
}

HcPreOp::HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms, ModuleSource modules,
                 Device& device, Variant variant)
    : HcPreOp(backend, dims, constants, num_sms,
              modules ? std::make_unique<jit::FunctionModuleProvider>(std::move(modules))
                      : std::unique_ptr<jit::ModuleProvider>(),
              device, variant) {
  if (uses_fast_path()) {
    HCWARM_CHECK_ARG(modules_ != nullptr, "the {} specialized backend needs a JIT runtime", to_string(backend));
  }
}

HcPreOp::HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms,
                 std::unique_ptr<jit::ModuleProvider> modules, Device& device, Variant variant)
    : backend_(backend),
      dims_(dims),
      constants_(constants),
      num_sms_(num_sms),
      owned_modules_(std::move(modules)),
      modules_(owned_modules_.get()),
      device_(&device),
      variant_(variant),
      workspace_(device, size_t{1} << 16) {
  // The device's target and kernel forms, fixed for its life: read once, not on every plan.
  if (const auto* cd = dynamic_cast<const cuda::CudaDevice*>(&device)) {
    cuda_arch_ = cd->arch();
    cuda_portable_ = cd->portable();
    cuda_one_wave_ = cd->one_wave();
  }
  HCWARM_CHECK_ARG(dims.hc_mult >= 1 && dims.hidden >= 1, "bad mHC dims hc_mult={} hidden={}", dims.hc_mult,
                   dims.hidden);
  HCWARM_CHECK_ARG(num_sms >= 1, "num_sms must be positive, got {}", num_sms);
  if (backend == Backend::Cpu) {
    HCWARM_CHECK_ARG(device.kind() == DeviceKind::Cpu, "the cpu backend needs a CPU device, got {}", device.name());
    HCWARM_CHECK_ARG(dims.hidden % 16 == 0, "the cpu backend needs hidden % 16 == 0, got {}", dims.hidden);
    pool_ = std::make_shared<ThreadPool>();
  }
  if (backend == Backend::Cuda) {
    HCWARM_CHECK_ARG(dynamic_cast<cuda::CudaDevice*>(&device) != nullptr,
                     "the cuda backend needs a CUDA device, got {}", device.name());
    jit::require_supported_cuda_arch(static_cast<cuda::CudaDevice&>(device).arch(), "GPU " + device.name());
    HCWARM_CHECK_ARG(dims.hc_mult == 4, "the cuda kernels are built for hc_mult 4, got {}", dims.hc_mult);
    HCWARM_CHECK_ARG(dims.hidden % 8 == 0 && dims.hidden <= hcwarm_mhc::kCudaMaxHidden,
                     "the cuda kernels need hidden % 8 == 0 and hidden <= {}, got {}", hcwarm_mhc::kCudaMaxHidden,
                     dims.hidden);
  }
  rebuild_device_backend();
}

std::unique_ptr<backends::HcPreBackend> HcPreOp::make_device_backend() const {
  switch (backend_) {
    case Backend::Cpu: return std::make_unique<cpu::CpuHcPreBackend>(dims_.hc_mult, pool_);
    case Backend::Cuda: {
      // Whether any plan of this op can take the one-pass kernel: the plan of a one-split residual call.
      const bool one_pass = plan(1, HcPreSplitsAre::Kernel, false, HcPreInput::Residual, 0).one_pass();
      return std::make_unique<cuda::CudaHcPreBackend>(static_cast<cuda::CudaDevice&>(*device_), dims_.hc_mult,
                                                      dims_.hidden, one_pass, fast_finish_);
    }
    case Backend::Reference: return nullptr;
  }
  return nullptr;
}

void HcPreOp::rebuild_device_backend() {
  generic_.clear();  // bound by the old backend
  device_backend_ = make_device_backend();
  cuda_backend_ = backend_ == Backend::Cuda ? static_cast<cuda::CudaHcPreBackend*>(device_backend_.get()) : nullptr;
}

void HcPreOp::set_cuda_one_pass(bool on) {
  one_pass_ = on;
  rebuild_device_backend();
}

void HcPreOp::set_cuda_fast_finish(bool on) {
  fast_finish_ = on;
  rebuild_device_backend();
}

void HcPreOp::set_cpu_pool(std::shared_ptr<ThreadPool> pool) {
  pool_ = std::move(pool);
  rebuild_device_backend();
}

bool HcPreOp::tiered() const {
  const bool wanted = tiered_ && uses_fast_path() && modules_ != nullptr && modules_->tiered() && device_backend_;
  if (wanted && backend_ == Backend::Cuda && !cuda::generic_kernels_built()) {
    // Said once per process, so that tiering being off is never silent.
    static std::once_flag once;
    std::call_once(once, [] {
      log::warn("tiered execution is off on CUDA: this build of hcwarm has no generic CUDA kernels (nvcc was not "
                "found when it was built), so a kernel that prewarm did not load compiles in the call's path");
    });
  }
  return wanted && device_backend_->has_generic();
}

// The workspace, the last member, waits for queued kernels before anything is freed.
HcPreOp::~HcPreOp() = default;

bool HcPreOp::uses_fast_path() const { return uses_fast_path(backend_, variant_); }

int HcPreOp::num_splits(int64_t num_tokens) const { return mhc::num_splits(num_tokens, dims_.k(), num_sms_); }

HcPreLaunchPlan HcPreOp::plan(int splits, HcPreSplitsAre splits_are, bool fused_norm, HcPreInput input,
                              int64_t num_tokens) const {
  HcPreLaunchRequest r;
  r.backend = backend_;
  r.variant = variant_;
  r.dims = dims_;
  r.cuda = cuda_options();
  r.input = input;
  r.fused_norm = fused_norm;
  r.num_splits = splits;
  r.splits_are = splits_are;
  r.num_tokens = num_tokens;
  return plan_hc_pre_launch(r);
}

HcPreLaunchPlan HcPreOp::launch_plan(int64_t num_tokens, bool fused_norm, HcPreInput input) const {
  return plan(num_splits(num_tokens), HcPreSplitsAre::Bucket, fused_norm, input, num_tokens);
}

HcPreLaunchPlan HcPreOp::launch_plan_for_splits(int splits, bool fused_norm, HcPreInput input,
                                                int64_t num_tokens) const {
  return plan(splits, HcPreSplitsAre::Kernel, fused_norm, input, num_tokens);
}

int HcPreOp::kernel_splits(int64_t num_tokens, HcPreInput input) const {
  return launch_plan(num_tokens, false, input).kernel_splits;
}

jit::KernelSpec HcPreOp::kernel_spec(int splits, bool fused_norm, HcPreInput input) const {
  HCWARM_CHECK_ARG(backend_ != Backend::Reference, "the reference backend has no kernels");
  return hc_pre_kernel_spec(launch_plan_for_splits(splits, fused_norm, input));
}

std::vector<jit::KernelSpec> HcPreOp::planned_specs(int64_t max_num_tokens, bool fused_norm, HcPreInput input) const {
  if (!uses_fast_path()) return {};
  return hc_pre_planned_specs(backend_, dims_, num_sms_, max_num_tokens, fused_norm, cuda_options(), input);
}

std::vector<int64_t> HcPreOp::representatives(int64_t max_num_tokens) const {
  return mhc::representatives(max_num_tokens, dims_.k(), num_sms_);
}

size_t HcPreOp::workspace_bytes(int64_t num_tokens) const {
  if (num_tokens <= 0 || !device_backend_) return 0;
  // Residual input may run the one-pass kernel where the other inputs split.
  return std::max(launch_plan(num_tokens, false, HcPreInput::Residual).workspace_bytes,
                  launch_plan(num_tokens, false, HcPreInput::Embed).workspace_bytes);
}

void HcPreOp::reserve_workspace(int64_t max_num_tokens) {
  size_t bytes = 0;
  // Not monotonic in T (the split count falls as T grows): the largest over the buckets' extremes.
  for (const int64_t t : representatives(max_num_tokens)) bytes = std::max(bytes, workspace_bytes(t));
  if (max_num_tokens > 0) bytes = std::max(bytes, workspace_bytes(max_num_tokens));
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > 0) workspace_.ensure(bytes);
}

void HcPreOp::check_arguments(const HcPreArgs& a) const {
  check_hc_pre_arguments(a, static_cast<size_t>(dims_.k()) * sizeof(bf16));
}

void HcPreOp::run(const HcPreArgs& a, const LaunchContext& launch) {
  check_arguments(a);
  if (a.num_tokens == 0) return;
  launch_planned(a, launch_plan(a.num_tokens, a.norm_weight != nullptr, a.input), 3, launch);
}

void HcPreOp::run_with_splits(const HcPreArgs& a, int splits, int stages, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(splits >= 1, "num_splits must be >= 1, got {}", splits);
  check_arguments(a);
  if (a.num_tokens == 0) return;
  launch_planned(a, launch_plan_for_splits(splits, a.norm_weight != nullptr, a.input, a.num_tokens), stages, launch);
}

void HcPreOp::launch_planned(const HcPreArgs& a, const HcPreLaunchPlan& plan, int stages, const LaunchContext& launch) {
  if (launch.workspace != nullptr && reinterpret_cast<uintptr_t>(launch.workspace) % 16 != 0) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "hc_pre: workspace is not 16-byte aligned");
  }
  if (backend_ == Backend::Reference) {
    std::lock_guard<std::mutex> lock(mu_);
    run_hc_pre_reference_on(*device_, dims_, constants_, a);
    return;
  }
  hcwarm_mhc_pre_params p = pack_hc_pre_params(a, constants_, plan);
  if (const char* bad = device_backend_->unsupported_argument(p)) {
    HCWARM_THROW(ErrorKind::InvalidArgument,
                 "hc_pre ({}): {} is not 16-byte aligned (the kernels move 16 bytes at a time)", to_string(backend_),
                 bad);
  }

  std::lock_guard<std::mutex> lock(mu_);
  const auto scope = device_backend_->enter();
  const bool capturing = device_backend_->capturing(launch);
  const auto found = kernels_.find(kernels_id(plan));
  const backends::HcPreKernels& k = found != kernels_.end() ? *found->second : kernels_on_miss(plan, capturing);
  const size_t need = plan.workspace_bytes;
  if (launch.workspace != nullptr) {
    HCWARM_CHECK_ARG(launch.workspace_bytes >= need, "hc_pre: the workspace holds {} bytes, T={} needs {}",
                     launch.workspace_bytes, a.num_tokens, need);
    p.partials = static_cast<float*>(launch.workspace);
  } else {
    if (capturing && workspace_.bytes() < need) {
      HCWARM_THROW(ErrorKind::NotWarmed,
                   "hc_pre ({}): the op's workspace holds {} bytes and T={} needs {}; inside CUDA-graph capture it "
                   "cannot grow: pass a workspace, or reserve_workspace(max_num_tokens) before capturing",
                   to_string(backend_), workspace_.bytes(), a.num_tokens, need);
    }
    workspace_.ensure(need);
    p.partials = workspace_.as<float>();
  }
  if (cuda_backend_ != nullptr) {
    cuda_backend_->launch(k, p, plan, launch, stages);
  } else {
    device_backend_->launch(k, p, launch, stages);
  }
}

}  // namespace hcwarm::mhc
