#pragma once
// The mHC head on a CUDA device: the "mhc_head" JIT kernel (one per hc and
// hidden, kernels/cuda/mhc_head.cuh) launched on the caller's stream: the
// cluster kernel while every 4-token tile gets a resident cluster (decode), the
// rows kernels beyond. Clusters need compute capability 9.0 or newer.
#include <memory>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_head_backend.hpp"

namespace hcwarm::cuda {

inline constexpr const char* kCudaHeadSymbol = "hcwarm_mhc_head";  // the decode (cluster) kernel
inline constexpr const char* kCudaHeadRowsSymbol = "hcwarm_mhc_head_rows";    // the prefill kernel

// Why the CUDA head cannot take this shape, or nullptr.
const char* head_shape_unsupported(int hc, int hidden);
// The translation unit of one (hc, hidden) specialization.
std::string mhc_head_cuda_source(int hc, int hidden);

class CudaHcHeadBackend final : public backends::HcHeadBackend {
 public:
  CudaHcHeadBackend(CudaDevice& device, int hidden) : device_(device), hidden_(hidden) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool capturing(const LaunchContext& launch) const override;
  const char* unsupported_argument(const hcwarm_mhc_head_params& p) const override;
  void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) override;

 private:
  CUstream stream_of(const LaunchContext& launch) const;

  CudaDevice& device_;
  int hidden_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction cluster_ = nullptr;
  CUfunction rows_ = nullptr;
};

}  // namespace hcwarm::cuda
