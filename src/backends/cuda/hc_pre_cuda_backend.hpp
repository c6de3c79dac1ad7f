#pragma once
// hc_pre on a CUDA device: NVRTC modules (one per split class) or the nvcc
// fatbin of generic kernels embedded in the library, launched through the
// driver API on the caller's stream, inside the device's context. The op hands
// it a launch plan (mhc/hc_pre_launch_plan.hpp) for binding and launching: the
// backend follows the plan's kernel form and decides none.
#include <memory>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "backends/hc_pre_backend.hpp"

namespace hcwarm::mhc {
struct HcPreLaunchPlan;
}

namespace hcwarm::cuda {

class CudaHcPreBackend final : public backends::HcPreBackend {
 public:
  // one_pass: whether this op's plans can take the one-pass kernel (the plan of
  // a one-split residual call does): the generic kernels then bind theirs too.
  // fast_finish: the generic kernels' reciprocals, as the specializations' option sets them.
  CudaHcPreBackend(CudaDevice& device, int hc_mult, int hidden, bool one_pass, bool fast_finish);

  // The entry points of the module compiled from `plan`'s spec: the split pair,
  // the deep partial and the one-wave pair's finish where the specialization carries them, and the one-pass
  // kernel where the plan took it (left unset where the device cannot host its
  // cooperative grid: the pair runs then).
  std::unique_ptr<backends::HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                               const mhc::HcPreLaunchPlan& plan);
  // Queues the call as `plan` says: the one-pass kernel where it took it, the
  // kernels have it and both stages run; the one-wave pair on plan.one_wave_parts
  // where it took that and the kernels have it; else the split pair on plan.split_parts,
  // with the deep partial where the plan took it and the kernels have it.
  // p.partials holds plan.workspace_bytes.
  void launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, const mhc::HcPreLaunchPlan& plan,
              const LaunchContext& launch, int stages);

  // HcPreBackend. Without a plan, bind and launch take the split pair only.
  std::unique_ptr<Scope> enter() const override;
  std::unique_ptr<backends::HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                               const jit::KernelSpec& spec, int num_splits) override;
  std::unique_ptr<backends::HcPreKernels> bind_generic(bool fused_norm) override;
  bool has_generic() const override;
  // The most either path of a num_splits call can take (the op sizes calls from their plans).
  size_t workspace_bytes(int64_t num_tokens, int num_splits) const override;
  const char* unsupported_argument(const hcwarm_mhc_pre_params& p) const override;
  bool capturing(const LaunchContext& launch) const override;
  void launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, const LaunchContext& launch,
              int stages) override;

 private:
  // The pair named by `partial` and `finish` (their entries' symbols), the deep partial
  // where `deep_partial` is given and the one-wave pair's finish where `one_wave_finish` is.
  std::unique_ptr<backends::HcPreKernels> bind_split_pair(std::shared_ptr<const jit::LoadedModule> module,
                                                          const jit::KernelEntry& partial,
                                                          const jit::KernelEntry& finish, int partial_warps,
                                                          const jit::KernelEntry* deep_partial = nullptr,
                                                          const jit::KernelEntry* one_wave_finish = nullptr);
  // One launch: the one-pass kernel where one_pass (and the kernels have it), else the pair's
  // `pair` kernels on `parts` K-parts.
  void launch_kernels(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, bool one_pass, PairKernels pair,
                      int parts, const LaunchContext& launch, int stages);

  CudaDevice& device_;
  int hc_mult_, hidden_;
  bool one_pass_, fast_finish_;
  std::shared_ptr<const jit::LoadedModule> generic_module_;  // loaded on first bind_generic
};

}  // namespace hcwarm::cuda
