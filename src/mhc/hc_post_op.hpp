#pragma once
// The mHC post step (docs/MATH.md, section 3) on the model's device, through
// backends/hc_post_backend.hpp: the CPU runs it in the library; CUDA runs the
// "mhc_post" JIT kernel family, one key per (hc, hidden), which the
// framework-level warmup compiles ahead of serving. With tiering (hc 4), a call
// before that kernel is loaded runs the generic one of the library while it
// compiles in the background.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/hc_post_backend.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"
#include "jit/module_provider.hpp"
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
  // graph capture a kernel not loaded yet (nor, with tiering, the generic one)
  // throws ErrorKind::NotWarmed.
  void run(int64_t num_tokens, const bf16* out, const bf16* residual_in, const float* post, const float* comb,
           bf16* residual_out, const LaunchContext& launch = {});
  // Fetches the CUDA kernel now, waiting for its compile (warmup), and with
  // tiering the generic one too; nothing on the CPU.
  void load();
  // A call in graph capture succeeds: the JIT kernel is bound, or with tiering the generic one.
  bool loaded() const;
  // The JIT kernel is bound (not serving generically).
  bool specialized_loaded() const;
  // Tiered execution: default on; also needs the runtime to tier and a generic kernel.
  void set_tiered(bool on) { tiered_ = on; }
  bool tiered() const;

 private:
  MhcDims dims_;
  Device& device_;
  jit::JitRuntime* jit_;
  std::string cuda_arch_;
  // Under mu_: whether the call runs the JIT kernel (false: the generic one).
  bool select_kernel(bool capturing);

  std::unique_ptr<backends::HcPostBackend> backend_;
  mutable std::mutex mu_;
  bool bound_ = false;  // the CUDA kernel, fetched once
  bool tiered_ = true;
  bool generic_bound_ = false;
  std::shared_ptr<const jit::PendingModule> pending_;  // its background compile
};

}  // namespace hcwarm::mhc
