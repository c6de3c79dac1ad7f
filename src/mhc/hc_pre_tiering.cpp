// HcPreOp's kernel cache and its tiering state machine: which bound kernels a
// plan runs on, binding on a hit, compiling in the calling thread or in the
// background on a miss (the generic kernels serve meanwhile), and what graph
// capture may use. Every member here runs under mu_.
#include "backends/cuda/hc_pre_cuda_backend.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::mhc {

HcPreOp::KernelsId HcPreOp::kernels_id(const HcPreLaunchPlan& plan) const {
  // Generic kernels do not depend on the split count, and one binding launches every input kind's.
  // Specialized ones: one set per input kind, in the bits above the CUDA options.
  constexpr int kInputShift = 64;
  const bool generic = variant_ == Variant::Generic;
  // CUDA specializations serve a whole split class (hc_pre_kernel_spec).
  const int unit = generic ? 0 : plan.split_class;
  return {unit, plan.fused_norm,
          (one_pass_ ? 1 : 0) + (fast_finish_ ? 2 : 0) +
              (generic ? 0 : static_cast<int>(plan.input) * kInputShift)};
}

bool HcPreOp::loaded(int64_t num_tokens, bool fused_norm, HcPreInput input) {
  if (backend_ == Backend::Reference || num_tokens <= 0) return true;
  const KernelsId id = kernels_id(launch_plan(num_tokens, fused_norm, input));
  std::lock_guard<std::mutex> lock(mu_);
  if (kernels_.count(id) != 0) return true;
  return tiered() && generic_.count(fused_norm) != 0;
}

bool HcPreOp::specialized_loaded(int64_t num_tokens, bool fused_norm, HcPreInput input) {
  if (backend_ == Backend::Reference || num_tokens <= 0) return true;
  const KernelsId id = kernels_id(launch_plan(num_tokens, fused_norm, input));
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.count(id) != 0 && stays_generic_.count(id) == 0;
}

void HcPreOp::load(int splits, bool fused_norm, HcPreInput input) {
  HCWARM_CHECK_ARG(splits >= 1, "num_splits must be >= 1, got {}", splits);
  if (backend_ == Backend::Reference) return;
  const HcPreLaunchPlan p = launch_plan_for_splits(splits, fused_norm, input);
  std::lock_guard<std::mutex> lock(mu_);
  const auto scope = device_backend_->enter();
  kernels_for(p);
  pending_.erase(kernels_id(p));
  if (tiered()) generic_kernels(fused_norm);
}

std::unique_ptr<backends::HcPreKernels> HcPreOp::bind(std::shared_ptr<const jit::LoadedModule> module,
                                                      const jit::KernelSpec& spec, const HcPreLaunchPlan& plan) {
  if (cuda_backend_ != nullptr) return cuda_backend_->bind(std::move(module), plan);
  return device_backend_->bind(std::move(module), spec, plan.kernel_splits);
}

const backends::HcPreKernels& HcPreOp::kernels_for(const HcPreLaunchPlan& plan) {
  const KernelsId id = kernels_id(plan);
  if (auto it = kernels_.find(id); it != kernels_.end()) return *it->second;
  std::unique_ptr<backends::HcPreKernels> k;
  if (variant_ == Variant::Generic) {
    k = device_backend_->bind_generic(plan.fused_norm);
  } else {
    const jit::KernelSpec spec = hc_pre_kernel_spec(plan);
    k = bind(modules_->get(spec), spec, plan);
  }
  return *kernels_.emplace(id, std::move(k)).first->second;
}

const backends::HcPreKernels& HcPreOp::generic_kernels(bool fused_norm) {
  auto& g = generic_[fused_norm];
  if (!g) g = device_backend_->bind_generic(fused_norm);
  return *g;
}

const backends::HcPreKernels& HcPreOp::kernels_on_miss(const HcPreLaunchPlan& plan, bool capturing) {
  const KernelsId id = kernels_id(plan);
  const bool norm = plan.fused_norm;
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
                 to_string(backend_), dims_.hidden, norm ? "fused norm" : "no norm", to_string(plan.input),
                 plan.kernel_splits, plan.num_tokens, tier ? " (nor the generic ones)" : "", plan.num_tokens);
  }
  if (!tier) return kernels_for(plan);
  auto p = pending_.find(id);
  if (p == pending_.end() || p->second->state.load(std::memory_order_acquire) == jit::PendingModule::Landed) {
    // First miss of the bucket, or its background compile landed: ask (never waits for a compile).
    const jit::KernelSpec spec = hc_pre_kernel_spec(plan);
    jit::TieredModule t = modules_->get_or_schedule(spec);
    if (t.module) {
      pending_.erase(id);
      auto k = bind(std::move(t.module), spec, plan);
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

}  // namespace hcwarm::mhc
