#pragma once
// The shipped SwiGLU MLP sublayer on CUDA: two launches of the "swiglu_mlp"
// JIT kernel family (gate/up fused with silu, then down), one key per
// (hidden, width), warmed by the runner's framework-level warmup.
#include <memory>
#include <mutex>

#include "backends/cuda/cuda_device.hpp"
#include "jit/kernel_spec.hpp"
#include "model/standin/swiglu_backend.hpp"

namespace hcwarm::jit {
class JitRuntime;
}

namespace hcwarm::cuda {

class CudaSwigluBackend final : public backends::SwigluBackend {
 public:
  // max_tokens: the largest batch; the activation buffer is allocated for it up
  // front, so serving never allocates device memory in a forward.
  CudaSwigluBackend(std::shared_ptr<const backends::SwigluWeights> weights, CudaDevice& device, jit::JitRuntime& jit,
                    int64_t max_tokens);

  static jit::KernelSpec kernel_spec(int hidden, int width, const std::string& arch);
  // The spec's kernels (hcwarm_gemm's __global__ templates of standin/gemm_nt.cuh), named by their entries.
  struct SwigluEntries {
    jit::KernelEntry gate_up, act, down;
  };
  static SwigluEntries kernel_entries(int hidden, int width);

  DeviceKind device_kind() const override { return DeviceKind::Cuda; }
  std::string name() const override { return "cuda"; }
  void forward(const bf16* x, bf16* out, int64_t T, Device& device) override;

 private:
  std::shared_ptr<const backends::SwigluWeights> weights_;
  CudaDevice& device_;
  jit::JitRuntime& jit_;
  DeviceBuffer gate_, up_, down_;
  DeviceBuffer gate_up_;     // (max_tokens, 2 * width) f32: the split-K sums
  DeviceBuffer hidden_act_;  // (max_tokens, width) bf16
  std::once_flag module_once_;
  std::shared_ptr<const jit::LoadedModule> module_;
  // Its kernels, looked up once when the module is bound (a forward only launches).
  CUfunction gate_up_fn_ = nullptr, act_fn_ = nullptr, down_fn_ = nullptr;
};

}  // namespace hcwarm::cuda
