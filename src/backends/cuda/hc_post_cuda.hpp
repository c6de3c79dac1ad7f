#pragma once
// hc_post on a CUDA device: the "mhc_post" JIT kernel (one per hc and hidden,
// kernels/cuda/mhc_post.cuh), or the generic one of the embedded nvcc fatbin
// (hc 4, hidden at run time), launched on the caller's stream.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/hc_post_backend.hpp"

namespace hcwarm::cuda {

inline constexpr const char* kCudaPostSymbol = "hcwarm_mhc_post";
inline constexpr const char* kCudaPostGenericSymbol = "hcwarm_mhc_post_generic";
inline constexpr unsigned kCudaPostThreads = 256;  // each thread writes 8 columns of one token

// The nvcc fatbin of the generic kernel (backends/cuda/mhc_post_generic.cu); empty without nvcc.
std::span<const std::byte> mhc_post_generic_fatbin();

// The translation unit of one (hc, hidden) specialization.
std::string mhc_post_cuda_source(int hc, int hidden);

class CudaHcPostBackend final : public backends::HcPostBackend {
 public:
  explicit CudaHcPostBackend(CudaDevice& device) : device_(device) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool has_generic() const override { return !mhc_post_generic_fatbin().empty(); }
  void bind_generic() override;
  bool capturing(const LaunchContext& launch) const override;
  void launch(const backends::HcPostParams& p, const LaunchContext& launch, bool generic) override;

 private:
  CudaDevice& device_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction fn_ = nullptr;
  std::shared_ptr<const jit::LoadedModule> generic_module_;
  CUfunction generic_fn_ = nullptr;
};

}  // namespace hcwarm::cuda
