#pragma once
// hc_pre on a CUDA device: NVRTC modules (one per split bucket) or the nvcc
// fatbin of generic kernels embedded in the library, launched through the
// driver API on the caller's stream, inside the device's context.
#include <memory>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_pre_backend.hpp"

namespace hcwarm::cuda {

class CudaHcPreBackend final : public backends::HcPreBackend {
 public:
  // one_pass: num_splits == 1 calls may take the one-pass kernel where the
  // module has it and the device runs it (HCWARM_MHC_ONE_PASS). fast_finish:
  // the generic kernels' reciprocals, as the specializations' option sets them.
  CudaHcPreBackend(CudaDevice& device, int hc_mult, int hidden, bool one_pass, bool fast_finish);

  std::unique_ptr<Scope> enter() const override;
  std::unique_ptr<backends::HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                               const jit::KernelSpec& spec, int num_splits) override;
  std::unique_ptr<backends::HcPreKernels> bind_generic(bool fused_norm) override;
  bool has_generic() const override;
  size_t workspace_bytes(int64_t num_tokens, int num_splits) const override;
  const char* unsupported_argument(const hcwarm_mhc_pre_params& p) const override;
  bool capturing(const LaunchContext& launch) const override;
  void launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, const LaunchContext& launch,
              int stages) override;

 private:
  bool one_pass_possible(int num_splits) const;

  CudaDevice& device_;
  int hc_mult_, hidden_;
  bool one_pass_, fast_finish_;
  std::shared_ptr<const jit::LoadedModule> generic_module_;  // loaded on first bind_generic
};

}  // namespace hcwarm::cuda
