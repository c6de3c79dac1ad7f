#pragma once
// hc_post on a CUDA device: the "mhc_post" JIT kernel (one per hc and hidden,
// kernels/cuda/mhc_post.cuh) launched on the caller's stream.
#include <memory>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_post_backend.hpp"

namespace hcwarm::cuda {

inline constexpr const char* kCudaPostSymbol = "hcwarm_mhc_post";
inline constexpr unsigned kCudaPostThreads = 256;  // each thread writes 8 columns of one token

// The translation unit of one (hc, hidden) specialization.
std::string mhc_post_cuda_source(int hc, int hidden);

class CudaHcPostBackend final : public backends::HcPostBackend {
 public:
  explicit CudaHcPostBackend(CudaDevice& device) : device_(device) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool capturing(const LaunchContext& launch) const override;
  void launch(const backends::HcPostParams& p, const LaunchContext& launch) override;

 private:
  CudaDevice& device_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction fn_ = nullptr;
};

}  // namespace hcwarm::cuda
