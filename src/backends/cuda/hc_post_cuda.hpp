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
#include "jit/kernel_entry.hpp"
#include "jit/kernel_spec.hpp"

namespace hcwarm::cuda {

inline constexpr unsigned kCudaPostThreads = 256;  // each thread writes 8 columns of one token

// The kernels (jit/kernel_entry.hpp): hcwarm_post::mhc_post_kernel of one
// (hc, hidden), and the generic fatbin's mhc_post_dyn_kernel (hc 4).
jit::KernelEntry post_entry(int hc, int hidden);
jit::KernelEntry generic_post_entry();

// The nvcc fatbin of the generic kernel (backends/cuda/mhc_post_generic.cu); empty without nvcc.
std::span<const std::byte> mhc_post_generic_fatbin();

// The translation unit of one (hc, hidden) specialization: post_entry's kernel.
jit::KernelSource mhc_post_cuda_source(int hc, int hidden);

class CudaHcPostBackend final : public backends::HcPostBackend {
 public:
  // hc, hidden: the shape of the JIT kernel bind looks up (post_entry).
  CudaHcPostBackend(CudaDevice& device, int hc, int hidden) : device_(device), hc_(hc), hidden_(hidden) {}
  bool needs_module() const override { return true; }
  void bind(std::shared_ptr<const jit::LoadedModule> module) override;
  bool has_generic() const override { return !mhc_post_generic_fatbin().empty(); }
  void bind_generic() override;
  bool capturing(const LaunchContext& launch) const override;
  void launch(const backends::HcPostParams& p, const LaunchContext& launch, bool generic) override;

 private:
  CudaDevice& device_;
  int hc_, hidden_;
  std::shared_ptr<const jit::LoadedModule> module_;
  CUfunction fn_ = nullptr;
  std::shared_ptr<const jit::LoadedModule> generic_module_;
  CUfunction generic_fn_ = nullptr;
};

}  // namespace hcwarm::cuda
