#pragma once
// The mHC head on a CUDA device: the "mhc_head" JIT kernel (one per hc and
// hidden, kernels/cuda/mhc_head.cuh) launched on the caller's stream.
#include <memory>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_head_backend.hpp"

namespace hcwarm::cuda {

inline constexpr const char* kCudaHeadSymbol = "hcwarm_mhc_head";
inline constexpr unsigned kCudaHeadThreads = 256;
inline constexpr unsigned kCudaHeadTokens = 4;  // tokens per block: fn is read once for all of them

// The translation unit of one (hc, hidden) specialization.
std::string mhc_head_cuda_source(int hc, int hidden);

class CudaHcHeadBackend final : public backends::HcHeadBackend {
 public:
  explicit CudaHcHeadBackend(CudaDevice& device) : device_(device) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool capturing(const LaunchContext& launch) const override;
  const char* unsupported_argument(const hcwarm_mhc_head_params& p) const override;
  void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) override;

 private:
  CUstream stream_of(const LaunchContext& launch) const;

  CudaDevice& device_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction fn_ = nullptr;
};

}  // namespace hcwarm::cuda
