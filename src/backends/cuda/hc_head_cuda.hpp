#pragma once
// The mHC head on a CUDA device: the "mhc_head" JIT kernel (one per hc and
// hidden, kernels/cuda/mhc_head.cuh) launched on the caller's stream: its
// narrow instantiation while the grid is at most one block per SM (decode), the
// wide one beyond. Clusters need compute capability 9.0 or newer.
#include <memory>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_head_backend.hpp"

namespace hcwarm::cuda {

inline constexpr const char* kCudaHeadSymbol = "hcwarm_mhc_head";            // 1 token per thread (decode)
inline constexpr const char* kCudaHeadWideSymbol = "hcwarm_mhc_head_wide";   // HCWARM_MHC_HEAD_WIDE_TPT

// Why the CUDA head cannot take this shape, or nullptr.
const char* head_shape_unsupported(int hc, int hidden);
// Tokens per thread of the wide kernel (HCWARM_MHC_HEAD_WIDE_TPT).
int head_wide_tokens_per_thread(int hc, int hidden);
// The translation unit of one (hc, hidden) specialization.
std::string mhc_head_cuda_source(int hc, int hidden);

class CudaHcHeadBackend final : public backends::HcHeadBackend {
 public:
  CudaHcHeadBackend(CudaDevice& device, int hc, int hidden) : device_(device), hc_(hc), hidden_(hidden) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool capturing(const LaunchContext& launch) const override;
  const char* unsupported_argument(const hcwarm_mhc_head_params& p) const override;
  void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) override;

 private:
  CUstream stream_of(const LaunchContext& launch) const;

  CudaDevice& device_;
  int hc_;
  int hidden_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction narrow_ = nullptr;
  CUfunction wide_ = nullptr;
};

}  // namespace hcwarm::cuda
