#pragma once
// The mHC head (docs/MATH.md, section 6) on the model's device: after the last
// layer, residual (T, hc, D) collapses into y (T, D) with hc_head_fn /
// hc_head_scale / hc_head_base, through backends/hc_head_backend.hpp. The CPU
// runs it in the library; CUDA runs the "mhc_head" JIT kernel family, one key
// per (hc, hidden) for every T (no split buckets: it runs once per forward),
// which the framework-level warmup compiles ahead of serving.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/hc_head_backend.hpp"
#include "core/device.hpp"
#include "core/tensor.hpp"
#include "core/thread_pool.hpp"
#include "jit/kernel_spec.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::jit {
class JitRuntime;
}
namespace hcwarm::mhc {

// Device pointers of one head call. Outputs are written for every token.
struct HcHeadArgs {
  int64_t num_tokens = 0;
  const bf16* residual = nullptr;  // (T, hc, D)
  const float* fn = nullptr;       // (hc, hc*D)   hc_head_fn
  const float* scale = nullptr;    // (1,)         hc_head_scale
  const float* base = nullptr;     // (hc,)        hc_head_base
  bf16* y = nullptr;               // (T, D)
};

class HcHeadOp {
 public:
  // cuda_arch: the NVRTC target of `device` when it is a CUDA device. pool: the
  // CPU backend's threads (null: the caller's thread).
  HcHeadOp(MhcDims dims, MhcConstants constants, Device& device, jit::JitRuntime* jit, std::string cuda_arch,
           std::shared_ptr<ThreadPool> pool);
  ~HcHeadOp();
  HcHeadOp(const HcHeadOp&) = delete;
  HcHeadOp& operator=(const HcHeadOp&) = delete;

  const MhcDims& dims() const { return dims_; }
  // The JIT kernels this op will ask for (none on the CPU).
  std::vector<jit::KernelSpec> planned_specs() const;
  // The CUDA kernel's spec for these dims and architecture (no device needed).
  static jit::KernelSpec cuda_spec(MhcDims dims, const std::string& arch);

  // T = 0 is a no-op. A null pointer, or on CUDA one that is not 16-byte
  // aligned (residual, fn, y), is InvalidArgument before anything is queued. On
  // CUDA, asynchronous on launch.stream (else the device's); inside CUDA-graph
  // capture a kernel not loaded yet throws ErrorKind::NotWarmed.
  void run(const HcHeadArgs& args, const LaunchContext& launch = {});
  // Fetches the CUDA kernel now (warmup); nothing on the CPU.
  void load();
  bool loaded() const;

 private:
  MhcDims dims_;
  MhcConstants constants_;
  Device& device_;
  jit::JitRuntime* jit_;
  std::string cuda_arch_;
  std::unique_ptr<backends::HcHeadBackend> backend_;
  mutable std::mutex mu_;
  bool bound_ = false;  // the CUDA kernel, fetched once
};

// Runs op on host tensors: copies the inputs to `device`, runs, synchronizes and
// copies y back (for the CLI and tests). Shapes are checked first.
HostTensor<bf16> run_hc_head_host(HcHeadOp& op, Device& device, const HostTensor<bf16>& residual,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base);

}  // namespace hcwarm::mhc
