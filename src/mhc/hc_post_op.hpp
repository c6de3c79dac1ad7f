#pragma once
// The mHC post step (docs/MATH.md, section 3) on the model's device, through
// backends/hc_post_backend.hpp: the CPU runs it in the library; CUDA runs the
// "mhc_post" JIT kernel family, one key per (hc, hidden), which the
// framework-level warmup compiles ahead of serving.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/hc_post_backend.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::jit {
class JitRuntime;
}
namespace hcwarm::mhc {

class HcPostOp {
 public:
  // cuda_arch: the NVRTC target of `device` when it is a CUDA device.
  HcPostOp(MhcDims dims, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
           std::shared_ptr<ThreadPool> pool);
  ~HcPostOp();

  // The JIT kernels this op will ask for (none on the CPU).
  std::vector<jit::KernelSpec> planned_specs() const;
  // The CUDA kernel's spec for these dims and architecture (no device needed).
  static jit::KernelSpec cuda_spec(MhcDims dims, const std::string& arch);

  // residual_out may alias residual_in. Pointers are on the device; T = 0 is a
  // no-op. On CUDA, asynchronous on launch.stream (else the device's); inside
  // graph capture a kernel not loaded yet throws ErrorKind::NotWarmed.
  void run(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post, const float* comb,
           bf16* residual_out, const LaunchContext& launch = {});
  // Fetches the CUDA kernel now (warmup); nothing on the CPU.
  void load();
  bool loaded() const;

 private:
  MhcDims dims_;
  Device& device_;
  jit::JitRuntime* jit_;
  std::string cuda_arch_;
  std::unique_ptr<backends::HcPostBackend> backend_;
  mutable std::mutex mu_;
  bool bound_ = false;  // the CUDA kernel, fetched once
};

}  // namespace hcwarm::mhc
