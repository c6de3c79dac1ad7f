#pragma once
// The mHC head (docs/MATH.md, section 6) on the model's device: after the last
// layer, residual (T, hc, D) collapses into y (T, D) with hc_head_fn /
// hc_head_scale / hc_head_base, through backends/hc_head_backend.hpp. The CPU
// runs it in the library; CUDA runs the "mhc_head" JIT kernel family, one key
// per (hc, hidden) for every T (no split buckets: it runs once per forward),
// which the framework-level warmup compiles ahead of serving. From
// cuda::head_one_pass_min_tokens (512) CUDA runs the one-pass kernel, which needs
// a workspace (workspace_bytes): the caller's (LaunchContext::workspace) or the op's own.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/hc_head_backend.hpp"
#include "core/device.hpp"
#include "core/launch_context.hpp"
#include "core/tensor.hpp"
#include "core/thread_pool.hpp"
#include "jit/kernel_spec.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::jit {
class JitRuntime;
}
namespace hcwarm::cuda {
class CudaHcHeadBackend;
}
namespace hcwarm::mhc {

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
  // The CUDA kernel's spec for these dims and architecture (no device needed);
  // portable: the cluster-free forms (CudaKernelOptions::portable).
  static jit::KernelSpec cuda_spec(MhcDims dims, const std::string& arch, bool portable);

  // T = 0 is a no-op. A null pointer, or on CUDA one that is not 16-byte
  // aligned (residual, fn, y, workspace), or a workspace smaller than
  // workspace_bytes(T), is InvalidArgument before anything is queued. On
  // CUDA, asynchronous on launch.stream (else the device's); without
  // launch.workspace the op's own buffer, grown outside capture. Inside
  // CUDA-graph capture a kernel not loaded yet, or an own buffer too small,
  // throws ErrorKind::NotWarmed.
  void run(const HcHeadArgs& args, const LaunchContext& launch = {});
  // Scratch bytes a call on T tokens needs (LaunchContext::workspace): 0 on the
  // CPU and wherever the cluster kernel runs.
  size_t workspace_bytes(int64_t num_tokens) const;
  // Grows the op's own workspace to serve every T <= max_num_tokens (for
  // callers that pass none and capture graphs).
  void reserve_workspace(int64_t max_num_tokens);
  // CUDA: whether large T may take the one-pass kernel (HCWARM_MHC_ONE_PASS),
  // and from which T (default cuda::head_one_pass_min_tokens; 1: every T, for
  // tests and benchmarks). No effect on the CPU.
  void set_cuda_one_pass(bool on);
  void set_cuda_one_pass_min_tokens(int64_t num_tokens);
  // Fetches the CUDA kernel now (warmup); nothing on the CPU.
  void load();
  bool loaded() const;

 private:
  MhcDims dims_;
  MhcConstants constants_;
  Device& device_;
  jit::JitRuntime* jit_;
  std::string cuda_arch_;
  bool cuda_portable_ = false;  // the CUDA device's portable forms
  std::unique_ptr<backends::HcHeadBackend> backend_;
  cuda::CudaHcHeadBackend* cuda_backend_ = nullptr;  // backend_ on CUDA
  int64_t one_pass_min_tokens_ = 0;                  // set_cuda_one_pass_min_tokens; 0: the default
  bool one_pass_ = true;
  mutable std::mutex mu_;
  bool bound_ = false;  // the CUDA kernel, fetched once
  OwnedWorkspace workspace_;  // under mu_
};

// Runs op on host tensors: copies the inputs to `device`, runs, synchronizes and
// copies y back (for the CLI and tests). Shapes are checked first.
HostTensor<bf16> run_hc_head_host(HcHeadOp& op, Device& device, const HostTensor<bf16>& residual,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base);

}  // namespace hcwarm::mhc
