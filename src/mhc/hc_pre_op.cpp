#include "mhc/hc_pre_op.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "backends/cpu/hc_pre_cpu_backend.hpp"
#include "backends/cpu/mhc_pre_cpu.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/hc_pre_cuda_backend.hpp"
#include "mhc/hc_post_pre.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/reference.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {

namespace {
constexpr EnumName<Backend> kBackendNames[] = {
    {Backend::Reference, "reference"}, {Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}};
constexpr EnumName<Variant> kVariantNames[] = {{Variant::Specialized, "specialized"}, {Variant::Generic, "generic"}};
}  // namespace

Backend parse_backend(std::string_view name) { return parse_enum(kBackendNames, name, "backend"); }
const char* to_string(Backend b) { return enum_name(kBackendNames, b); }

Backend default_backend(const std::string& cuda_library) {
  return cuda::cuda_device_present(cuda_library) ? Backend::Cuda : Backend::Cpu;
}

Variant parse_variant(std::string_view name) { return parse_enum(kVariantNames, name, "variant"); }
const char* to_string(Variant v) { return enum_name(kVariantNames, v); }

const char* to_string(HcPreInput input) {
  return input == HcPreInput::Embed ? "embed" : input == HcPreInput::Post ? "post" : "residual";
}

HcPreInput parse_hc_pre_input(std::string_view name) {
  if (name.empty()) return HcPreInput::Residual;
  for (const HcPreInput i : {HcPreInput::Residual, HcPreInput::Embed, HcPreInput::Post}) {
    if (name == to_string(i)) return i;
  }
  HCWARM_THROW(ErrorKind::InvalidArgument, "unknown hc_pre input '{}' (residual, embed or post)", name);
}

namespace {
// The kernels' name of an input kind (kernels/common/mhc_params.hpp).
int input_code(HcPreInput input) {
  return input == HcPreInput::Embed  ? HCWARM_MHC_INPUT_EMBED
         : input == HcPreInput::Post ? HCWARM_MHC_INPUT_POST
                                     : HCWARM_MHC_INPUT_RESIDUAL;
}
}  // namespace

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
    HCWARM_CHECK_ARG(dims.hc_mult == 4, "the cuda kernels are built for hc_mult 4, got {}", dims.hc_mult);
    HCWARM_CHECK_ARG(dims.hidden % 8 == 0 && dims.hidden <= 8192,
                     "the cuda kernels need hidden % 8 == 0 and hidden <= 8192, got {}", dims.hidden);
  }
  device_backend_ = make_device_backend();
}

std::unique_ptr<backends::HcPreBackend> HcPreOp::make_device_backend() const {
  switch (backend_) {
    case Backend::Cpu: return std::make_unique<cpu::CpuHcPreBackend>(dims_.hc_mult, pool_);
    case Backend::Cuda:
      return std::make_unique<cuda::CudaHcPreBackend>(static_cast<cuda::CudaDevice&>(*device_), dims_.hc_mult,
                                                      dims_.hidden, one_pass_, fast_finish_);
    case Backend::Reference: return nullptr;
  }
  return nullptr;
}

void HcPreOp::rebuild_device_backend() {
  generic_.clear();  // bound by the old backend
  device_backend_ = make_device_backend();
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
  return tiered_ && uses_fast_path() && modules_ != nullptr && modules_->tiered() && device_backend_ &&
         device_backend_->has_generic();
}

// The workspace, the last member, waits for queued kernels before anything is freed.
HcPreOp::~HcPreOp() = default;

bool HcPreOp::uses_fast_path() const { return uses_fast_path(backend_, variant_); }

int HcPreOp::num_splits(int64_t num_tokens) const { return mhc::num_splits(num_tokens, dims_.k(), num_sms_); }

int HcPreOp::kernel_splits(int64_t num_tokens, HcPreInput input) const {
  return hc_pre_kernel_splits(backend_, dims_, num_splits(num_tokens), cuda_options(), input);
}

std::string HcPreOp::cuda_arch() const {
  if (auto* cd = dynamic_cast<const cuda::CudaDevice*>(device_)) return cd->arch();
  return "sm_90a";
}

namespace {
// "sm_90a" -> 9, "sm_100a" -> 10, "sm_80" -> 8; 0 when unreadable.
int arch_major(std::string_view arch) {
  int v = 0;
  for (size_t i = arch.rfind('_') + 1; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) v = v * 10 + (arch[i] - '0');
  return v / 10;
}

// Whether the options, the input and the shape let the one-pass kernel run (its specs: num_splits 1).
bool one_pass_available(MhcDims dims, const CudaKernelOptions& cuda, HcPreInput input) {
  return cuda.one_pass && input == HcPreInput::Residual &&
         cuda::one_pass_supported(dims.hc_mult, static_cast<int>(dims.hidden), arch_major(cuda.arch));
}
}  // namespace

int hc_pre_kernel_splits(Backend backend, MhcDims dims, int num_splits, const CudaKernelOptions& cuda,
                         HcPreInput input) {
  const bool one_pass = backend == Backend::Cuda && one_pass_available(dims, cuda, input) &&
                        num_splits <= cuda::one_pass_max_splits(static_cast<int>(dims.hidden));
  return one_pass ? 1 : num_splits;
}

jit::KernelSpec hc_pre_kernel_spec(Backend backend, MhcDims dims, int splits, bool fused_norm,
                                   const CudaKernelOptions& cuda, HcPreInput input) {
  HCWARM_CHECK_ARG(backend != Backend::Reference, "the reference backend has no kernels");
  HCWARM_CHECK_ARG(splits >= 1, "num_splits must be >= 1, got {}", splits);
  jit::KernelSpec s;
  s.family = "mhc_pre";
  s.params = {{backend == Backend::Cpu ? "num_splits" : "splits",
               backend == Backend::Cpu ? std::to_string(splits)
                                       : cuda::cuda_split_class_name(cuda::cuda_split_class(splits))},
              {"hc", std::to_string(dims.hc_mult)},
              {"hidden", std::to_string(dims.hidden)},
              {"norm", fused_norm ? "1" : "0"}};
  if (input != HcPreInput::Residual) s.params.emplace_back("input", to_string(input));  // residual keys stay as they were
  if (backend == Backend::Cpu) {
    s.target = jit::TargetKind::Host;
    s.source = cpu::mhc_pre_cpu_source(splits, dims.hc_mult, dims.hidden, fused_norm, input_code(input));
  } else {
    s.target = jit::TargetKind::Cuda;
    s.arch = cuda.arch;
    // The one-pass kernel reads residual streams only: the embedding and the boundary take the two kernels.
    const bool one_pass = splits == 1 && one_pass_available(dims, cuda, input);
    if (one_pass) s.params.emplace_back("one_pass", "1");
    if (cuda.fast_finish) s.params.emplace_back("finish", "fast");
    s.source = cuda::mhc_pre_cuda_source(splits, dims.hc_mult, dims.hidden, fused_norm, one_pass,
                                         cuda.fast_finish, input_code(input));
  }
  return s;
}

int hc_pre_spec_num_splits(const jit::KernelSpec& spec) {
  HCWARM_CHECK_ARG(spec.family == "mhc_pre", "{} is not an hc_pre spec", spec.family);
  const std::string_view n = spec.param("num_splits");
  const std::string_view c = n.empty() ? spec.param("splits") : n;  // a class: "3-4", "22+" -> its first count
  int v = 0;
  const auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
  HCWARM_CHECK_ARG(ec == std::errc{} && end != c.data() && v >= 1,
                   "hc_pre spec with no split count (num_splits or splits): {}", spec.describe());
  return v;
}

std::vector<jit::KernelSpec> hc_pre_planned_specs(Backend backend, MhcDims dims, int num_sms, int64_t max_num_tokens,
                                                  bool fused_norm, const CudaKernelOptions& cuda, HcPreInput input) {
  std::vector<jit::KernelSpec> out;
  // The boundary runs the fused kernel only up to fused_boundary_max_tokens (hc_post_pre.hpp).
  if (input == HcPreInput::Post) {
    max_num_tokens = std::min(max_num_tokens, fused_boundary_max_tokens(backend, dims, num_sms));
  }
  // The functions run() uses: num_splits (via the buckets), hc_pre_kernel_splits and the spec.
  for (const SplitBucket& b : split_buckets(max_num_tokens, dims.k(), num_sms)) {
    HCWARM_ASSERT(mhc::num_splits(b.representative(), dims.k(), num_sms) == b.num_splits,
                  "split bucket disagrees with num_splits");
    jit::KernelSpec s =
        hc_pre_kernel_spec(backend, dims, hc_pre_kernel_splits(backend, dims, b.num_splits, cuda, input), fused_norm,
                           cuda, input);
    // CUDA: the buckets of a split class share one spec.
    const bool seen = std::any_of(out.begin(), out.end(), [&](const jit::KernelSpec& o) { return o.params == s.params; });
    if (!seen) out.push_back(std::move(s));
  }
  return out;
}

jit::KernelSpec HcPreOp::kernel_spec(int splits, bool fused_norm, HcPreInput input) const {
  return hc_pre_kernel_spec(backend_, dims_, splits, fused_norm, cuda_options(), input);
}

std::vector<jit::KernelSpec> HcPreOp::planned_specs(int64_t max_num_tokens, bool fused_norm, HcPreInput input) const {
  if (!uses_fast_path()) return {};
  return hc_pre_planned_specs(backend_, dims_, num_sms_, max_num_tokens, fused_norm, cuda_options(), input);
}

std::vector<int64_t> HcPreOp::representatives(int64_t max_num_tokens) const {
  return mhc::representatives(max_num_tokens, dims_.k(), num_sms_);
}

HcPreOp::KernelsId HcPreOp::kernels_id(int splits, bool fused_norm, HcPreInput input) const {
  // Generic kernels do not depend on the split count, and one binding launches every input kind's.
  // Specialized ones: one set per input kind, in the bits above the CUDA options.
  constexpr int kInputShift = 64;
  const bool generic = variant_ == Variant::Generic;
  // CUDA specializations serve a whole split class (hc_pre_kernel_spec).
  const int unit = generic ? 0 : backend_ == Backend::Cuda ? cuda::cuda_split_class(splits) : splits;
  return {unit, fused_norm,
          (one_pass_ ? 1 : 0) + (fast_finish_ ? 2 : 0) +
              (generic ? 0 : static_cast<int>(input) * kInputShift)};
}

bool HcPreOp::loaded(int64_t num_tokens, bool fused_norm, HcPreInput input) {
  if (backend_ == Backend::Reference || num_tokens <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (kernels_.count(kernels_id(kernel_splits(num_tokens, input), fused_norm, input)) != 0) return true;
  return tiered() && generic_.count(fused_norm) != 0;
}

bool HcPreOp::specialized_loaded(int64_t num_tokens, bool fused_norm, HcPreInput input) {
  if (backend_ == Backend::Reference || num_tokens <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const KernelsId id = kernels_id(kernel_splits(num_tokens, input), fused_norm, input);
  return kernels_.count(id) != 0 && stays_generic_.count(id) == 0;
}

void HcPreOp::load(int splits, bool fused_norm, HcPreInput input) {
  HCWARM_CHECK_ARG(splits >= 1, "num_splits must be >= 1, got {}", splits);
  if (backend_ == Backend::Reference) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto scope = device_backend_->enter();
  kernels_for(splits, fused_norm, input);
  pending_.erase(kernels_id(splits, fused_norm, input));
  if (tiered()) generic_kernels(fused_norm);
}

size_t HcPreOp::workspace_bytes(int64_t num_tokens) const {
  if (num_tokens <= 0 || !device_backend_) return 0;
  // Residual input may run the one-pass kernel where the other inputs split.
  return std::max(device_backend_->workspace_bytes(num_tokens, num_splits(num_tokens)),
                  device_backend_->workspace_bytes(num_tokens, kernel_splits(num_tokens)));
}

void HcPreOp::reserve_workspace(int64_t max_num_tokens) {
  size_t bytes = 0;
  // Not monotonic in T (the split count falls as T grows): the largest over the buckets' extremes.
  for (const int64_t t : representatives(max_num_tokens)) bytes = std::max(bytes, workspace_bytes(t));
  if (max_num_tokens > 0) bytes = std::max(bytes, workspace_bytes(max_num_tokens));
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > 0) workspace_.ensure(bytes);
}

const backends::HcPreKernels& HcPreOp::kernels_for(int splits, bool fused_norm, HcPreInput input) {
  const KernelsId id = kernels_id(splits, fused_norm, input);
  if (auto it = kernels_.find(id); it != kernels_.end()) return *it->second;
  std::unique_ptr<backends::HcPreKernels> k;
  if (variant_ == Variant::Generic) {
    k = device_backend_->bind_generic(fused_norm);
  } else {
    const jit::KernelSpec spec = kernel_spec(splits, fused_norm, input);
    k = device_backend_->bind(modules_->get(spec), spec, splits);
  }
  return *kernels_.emplace(id, std::move(k)).first->second;
}

const backends::HcPreKernels& HcPreOp::generic_kernels(bool fused_norm) {
  auto& g = generic_[fused_norm];
  if (!g) g = device_backend_->bind_generic(fused_norm);
  return *g;
}

const backends::HcPreKernels& HcPreOp::kernels_on_miss(int splits, bool norm, HcPreInput input, bool capturing,
                                                        int64_t num_tokens) {
  const KernelsId id = kernels_id(splits, norm, input);
  const bool tier = variant_ == Variant::Specialized && tiered();
  if (capturing) {
    if (tier) {
      if (auto g = generic_.find(norm); g != generic_.end()) {
        modules_->note_served_by_generic();
        return *g->second;
      }
    }
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "hc_pre ({}, hidden {}, {}, input={}): the kernels of split bucket num_splits={} (T={}) are not "
                 "loaded{}, and the call is inside CUDA-graph capture, where nothing may be compiled or loaded: "
                 "prewarm the model (hcwarm.prewarm / kernel_warmup) or make one eager call with T={} before "
                 "capturing",
                 to_string(backend_), dims_.hidden, norm ? "fused norm" : "no norm", to_string(input), splits,
                 num_tokens, tier ? " (nor the generic ones)" : "", num_tokens);
  }
  if (!tier) return kernels_for(splits, norm, input);
  auto p = pending_.find(id);
  if (p == pending_.end() || p->second->state.load(std::memory_order_acquire) == jit::PendingModule::Landed) {
    // First miss of the bucket, or its background compile landed: ask (never waits for a compile).
    const jit::KernelSpec spec = kernel_spec(splits, norm, input);
    jit::TieredModule t = modules_->get_or_schedule(spec);
    if (t.module) {
      pending_.erase(id);
      auto k = device_backend_->bind(std::move(t.module), spec, splits);
      return *kernels_.insert_or_assign(id, std::move(k)).first->second;
    }
    HCWARM_ASSERT(t.pending != nullptr, "tiered module provider returned neither a module nor a pending compile");
    p = pending_.insert_or_assign(id, std::move(t.pending)).first;
  }
  if (p->second->state.load(std::memory_order_acquire) == jit::PendingModule::Failed) {
    // The specialization cannot be built (logged once by the runtime): the bucket stays generic.
    pending_.erase(p);
    stays_generic_.insert(id);
    return *kernels_.insert_or_assign(id, device_backend_->bind_generic(norm)).first->second;
  }
  const backends::HcPreKernels& g = generic_kernels(norm);
  modules_->note_served_by_generic();
  return g;
}

namespace {

// Every pointer the input kind needs, each named when null; the new residual
// either is the residual (in place) or does not overlap it.
void check_pointers(const HcPreArgs& a, size_t row_bytes) {
  const std::pair<const void*, const char*> required[] = {
      {a.residual, a.input == HcPreInput::Embed ? "residual (the embedding)" : "residual"},
      {a.fn, "fn"}, {a.scale, "scale"}, {a.base, "base"}, {a.y, "y"}, {a.post, "post"}, {a.comb, "comb"}};
  for (const auto& [ptr, name] : required) {
    HCWARM_CHECK_ARG(ptr != nullptr, "hc_pre (input={}): {} is null", to_string(a.input), name);
  }
  if (a.input != HcPreInput::Post) return;
  const std::pair<const void*, const char*> post_inputs[] = {
      {a.x, "x"}, {a.prev_post, "prev_post"}, {a.prev_comb, "prev_comb"}, {a.new_residual, "new_residual"}};
  for (const auto& [ptr, name] : post_inputs) {
    HCWARM_CHECK_ARG(ptr != nullptr, "hc_post_pre (input=post): {} is null", name);
  }
  const auto in = reinterpret_cast<uintptr_t>(a.residual), out = reinterpret_cast<uintptr_t>(a.new_residual);
  const uintptr_t bytes = static_cast<uintptr_t>(a.num_tokens) * row_bytes;
  HCWARM_CHECK_ARG(in == out || in + bytes <= out || out + bytes <= in,
                   "hc_post_pre (input=post): new_residual overlaps residual without being it (in place needs the "
                   "same pointer)");
}

}  // namespace

void HcPreOp::run_reference(const HcPreArgs& a) {
  const int64_t T = a.num_tokens;
  const int hc = dims_.hc_mult;
  const int64_t D = dims_.hidden;
  const int64_t mix = dims_.mix();
  HostTensor<bf16> residual({T, hc, D});
  if (a.input == HcPreInput::Embed) {
    HostTensor<bf16> embed({T, D});
    device_->copy_to_host(embed.data(), a.residual, embed.numel() * sizeof(bf16));
    residual = broadcast_streams(embed, hc);
  }
  HostTensor<float> fn({mix, dims_.k()}), scale({3}), base({mix});
  HostTensor<bf16> w({D});
  if (a.input != HcPreInput::Embed) {
    device_->copy_to_host(residual.data(), a.residual, residual.numel() * sizeof(bf16));
  }
  device_->copy_to_host(fn.data(), a.fn, fn.numel() * sizeof(float));
  device_->copy_to_host(scale.data(), a.scale, 3 * sizeof(float));
  device_->copy_to_host(base.data(), a.base, mix * sizeof(float));
  if (a.norm_weight != nullptr) device_->copy_to_host(w.data(), a.norm_weight, D * sizeof(bf16));
  const HostTensor<bf16>* norm = a.norm_weight != nullptr ? &w : nullptr;
  HcPreResult r;
  if (a.input == HcPreInput::Post) {
    // Every input is on the host before the new residual is written: it may alias the residual.
    HostTensor<bf16> x({T, D});
    HostTensor<float> prev_post({T, hc}), prev_comb({T, hc, hc});
    device_->copy_to_host(x.data(), a.x, x.numel() * sizeof(bf16));
    device_->copy_to_host(prev_post.data(), a.prev_post, prev_post.numel() * sizeof(float));
    device_->copy_to_host(prev_comb.data(), a.prev_comb, prev_comb.numel() * sizeof(float));
    HcPostPreResult pp = hc_post_pre_reference(x, residual, prev_post, prev_comb, fn, scale, base, norm, constants_);
    device_->copy_from_host(a.new_residual, pp.new_residual.data(), pp.new_residual.numel() * sizeof(bf16));
    r = std::move(pp.pre);
  } else {
    r = hc_pre_reference(residual, fn, scale, base, norm, constants_);
  }
  device_->copy_from_host(a.y, r.y.data(), r.y.numel() * sizeof(bf16));
  device_->copy_from_host(a.post, r.post.data(), r.post.numel() * sizeof(float));
  device_->copy_from_host(a.comb, r.comb.data(), r.comb.numel() * sizeof(float));
}

void HcPreOp::check_arguments(const HcPreArgs& a) const {
  HCWARM_CHECK_ARG(a.num_tokens >= 0, "num_tokens must be >= 0, got {}", a.num_tokens);
  if (a.num_tokens > 0) check_pointers(a, static_cast<size_t>(dims_.k()) * sizeof(bf16));
}

void HcPreOp::run(const HcPreArgs& a, const LaunchContext& launch) {
  run_with_splits(a, a.num_tokens > 0 ? kernel_splits(a.num_tokens, a.input) : 1, 3, launch);
}

void HcPreOp::run_with_splits(const HcPreArgs& a, int splits, int stages, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(splits >= 1, "num_splits must be >= 1, got {}", splits);
  check_arguments(a);
  if (a.num_tokens == 0) return;
  if (launch.workspace != nullptr && reinterpret_cast<uintptr_t>(launch.workspace) % 16 != 0) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "hc_pre: workspace is not 16-byte aligned");
  }
  if (backend_ == Backend::Reference) {
    std::lock_guard<std::mutex> lock(mu_);
    run_reference(a);
    return;
  }
  hcwarm_mhc_pre_params p{};
  p.num_tokens = a.num_tokens;
  p.residual = reinterpret_cast<const unsigned short*>(a.residual);
  p.fn = a.fn;
  p.scale = a.scale;
  p.base = a.base;
  p.norm_weight = reinterpret_cast<const unsigned short*>(a.norm_weight);
  p.y = reinterpret_cast<unsigned short*>(a.y);
  p.post = a.post;
  p.comb = a.comb;
  p.num_splits = splits;
  p.hc_mult = dims_.hc_mult;
  p.hidden = dims_.hidden;
  p.sinkhorn_iters = constants_.sinkhorn_iters;
  p.hc_eps = constants_.hc_eps;
  p.rms_eps = constants_.rms_eps;
  p.norm_eps = constants_.norm_eps;
  p.post_mult = constants_.post_mult;
  p.input = input_code(a.input);
  p.post_x = reinterpret_cast<const unsigned short*>(a.x);
  p.prev_post = a.prev_post;
  p.prev_comb = a.prev_comb;
  p.residual_out = reinterpret_cast<unsigned short*>(a.new_residual);
  if (const char* bad = device_backend_->unsupported_argument(p)) {
    HCWARM_THROW(ErrorKind::InvalidArgument,
                 "hc_pre ({}): {} is not 16-byte aligned (the kernels move 16 bytes at a time)", to_string(backend_),
                 bad);
  }

  std::lock_guard<std::mutex> lock(mu_);
  const auto scope = device_backend_->enter();
  const bool norm = a.norm_weight != nullptr;
  const bool capturing = device_backend_->capturing(launch);
  const auto found = kernels_.find(kernels_id(splits, norm, a.input));
  const backends::HcPreKernels& k =
      found != kernels_.end() ? *found->second : kernels_on_miss(splits, norm, a.input, capturing, a.num_tokens);
  const size_t need = device_backend_->workspace_bytes(a.num_tokens, splits);
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
  device_backend_->launch(k, p, launch, stages);
}

namespace {

// Host tensors staged on `device` for one call from the host (kept alive until the call's end).
class Staging {
 public:
  explicit Staging(Device& device) : device_(device) {}
  template <class T>
  T* upload(const HostTensor<T>& t) {
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(T);
    buffers_.emplace_back(device_, bytes);
    device_.copy_from_host(buffers_.back().get(), t.data(), bytes);
    return buffers_.back().as<T>();
  }
  template <class T>
  T* alloc(const HostTensor<T>& t) {
    buffers_.emplace_back(device_, static_cast<size_t>(t.numel()) * sizeof(T));
    return buffers_.back().as<T>();
  }
  template <class T>
  void download(HostTensor<T>& t, const T* src) {
    device_.copy_to_host(t.data(), src, static_cast<size_t>(t.numel()) * sizeof(T));
  }

 private:
  Device& device_;
  std::vector<DeviceBuffer> buffers_;
};

// The pre step's weights and outputs around `a` (its input already staged), run and copied back.
HcPreResult run_staged(HcPreOp& op, Device& device, Staging& st, HcPreArgs a, const HostTensor<float>& fn,
                       const HostTensor<float>& scale, const HostTensor<float>& base,
                       const HostTensor<bf16>* norm_weight) {
  const int64_t T = a.num_tokens;
  const int64_t hc = op.dims().hc_mult;
  const int64_t D = op.dims().hidden;
  HcPreResult out{HostTensor<bf16>({T, D}), HostTensor<float>({T, hc}), HostTensor<float>({T, hc, hc}),
                  norm_weight != nullptr};
  if (T == 0) return out;
  a.fn = st.upload(fn);
  a.scale = st.upload(scale);
  a.base = st.upload(base);
  a.norm_weight = norm_weight != nullptr ? st.upload(*norm_weight) : nullptr;
  a.y = st.alloc(out.y);
  a.post = st.alloc(out.post);
  a.comb = st.alloc(out.comb);
  op.run(a);
  device.synchronize();
  st.download(out.y, a.y);
  st.download(out.post, a.post);
  st.download(out.comb, a.comb);
  return out;
}

void check_op_dims(const HcPreOp& op, const Shape& shape, int64_t hc, int64_t d, const char* what) {
  HCWARM_CHECK_ARG(hc == op.dims().hc_mult && d == op.dims().hidden,
                   "{} {} does not match the op's hc_mult {} and hidden {}", what, shape_string(shape),
                   op.dims().hc_mult, op.dims().hidden);
}

}  // namespace

HcPreResult run_hc_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& residual,
                            const HostTensor<float>& fn, const HostTensor<float>& scale,
                            const HostTensor<float>& base, const HostTensor<bf16>* norm_weight) {
  check_hc_pre_shapes(residual, fn, scale, base, norm_weight);
  check_op_dims(op, residual.shape(), residual.dim(1), residual.dim(2), "residual");
  Staging st(device);
  HcPreArgs a;
  a.num_tokens = residual.dim(0);
  if (a.num_tokens > 0) a.residual = st.upload(residual);
  return run_staged(op, device, st, a, fn, scale, base, norm_weight);
}

HcPreResult run_hc_pre_embed_host(HcPreOp& op, Device& device, const HostTensor<bf16>& embed,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base, const HostTensor<bf16>* norm_weight) {
  check_hc_pre_embed_shapes(embed, op.dims().hc_mult, fn, scale, base, norm_weight);
  check_op_dims(op, embed.shape(), op.dims().hc_mult, embed.dim(1), "embed");
  Staging st(device);
  HcPreArgs a;
  a.num_tokens = embed.dim(0);
  a.input = HcPreInput::Embed;
  if (a.num_tokens > 0) a.residual = st.upload(embed);
  return run_staged(op, device, st, a, fn, scale, base, norm_weight);
}

HcPostPreResult run_hc_post_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& x,
                                     const HostTensor<bf16>& residual, const HostTensor<float>& prev_post,
                                     const HostTensor<float>& prev_comb, const HostTensor<float>& fn,
                                     const HostTensor<float>& scale, const HostTensor<float>& base,
                                     const HostTensor<bf16>* norm_weight) {
  check_hc_post_pre_shapes(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight);
  check_op_dims(op, residual.shape(), residual.dim(1), residual.dim(2), "residual");
  Staging st(device);
  HostTensor<bf16> next(residual.shape());
  HcPreArgs a;
  a.num_tokens = residual.dim(0);
  a.input = HcPreInput::Post;
  if (a.num_tokens > 0) {
    a.x = st.upload(x);
    a.residual = st.upload(residual);
    a.prev_post = st.upload(prev_post);
    a.prev_comb = st.upload(prev_comb);
    a.new_residual = st.alloc(next);
  }
  HcPreResult pre = run_staged(op, device, st, a, fn, scale, base, norm_weight);
  if (a.num_tokens > 0) st.download(next, a.new_residual);
  return {std::move(next), std::move(pre)};
}

}  // namespace hcwarm::mhc
