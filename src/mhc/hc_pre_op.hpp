#pragma once
// hc_pre dispatch: where a run-time token count becomes a split count
// (split_policy.hpp), a launch plan (hc_pre_launch_plan.hpp: the kernel form,
// the split count the kernels run with, the workspace), a kernel key
// (hc_pre_kernel_spec.hpp) and a loaded kernel (through the JIT runtime).
// planned_specs() walks the same functions over [1, M], so the warmup compiles
// exactly what run() will ask for.
// What differs per device goes through one interface, backends/hc_pre_backend.hpp
// (bind a module, launch), entered once per call; the CUDA backend binds and
// launches from the plan itself, so that it follows the plan's kernel form.
//
//   Reference: the double-precision oracle (any Device; data staged through the host).
//   Cpu:       host-JIT kernels (Specialized) or the generic ones compiled into
//              libhcwarm (Generic), threaded on a pool owned by the op.
//   Cuda:      NVRTC kernels for the device's arch (Specialized) or the nvcc
//              fatbin embedded in libhcwarm (Generic); asynchronous on the
//              CudaDevice's stream.
// Tiered execution (Specialized, on by default where the provider tiers): a call
// whose bucket is not loaded runs the generic kernels at once while the
// specialization compiles in the background; the first call after it lands
// binds it, and from then on the bucket costs one map lookup, as before.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "backends/hc_pre_backend.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "core/tensor.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"
#include "jit/module_provider.hpp"
#include "mhc/hc_pre_host.hpp"         // run_hc_pre_host and the other host-tensor runners
#include "mhc/hc_pre_kernel_spec.hpp"  // hc_pre_kernel_spec, hc_pre_kernel_splits, hc_pre_planned_specs
#include "mhc/hc_pre_launch_plan.hpp"  // CudaKernelOptions, HcPreLaunchPlan
#include "mhc/hc_pre_names.hpp"        // Backend, Variant
#include "mhc/mhc_types.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::jit {
class JitRuntime;
}

namespace hcwarm::cuda {
class CudaHcPreBackend;
}

namespace hcwarm::mhc {

// Specialized kernels from a function instead of a JIT runtime (tests); never tiered.
using ModuleSource = jit::FunctionModuleProvider::Fn;

class HcPreOp {
 public:
  // Whether an op of this backend and variant runs JIT-specialized kernels (the
  // keys warmup must compile); the instance method answers for this op.
  static bool uses_fast_path(Backend backend, Variant variant) {
    return backend != Backend::Reference && variant == Variant::Specialized;
  }

  // jit may be null for Reference and for Generic. device: where args' pointers
  // live (a CpuDevice for Reference/Cpu, a cuda::CudaDevice for Cuda).
  HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms, jit::JitRuntime* jit, Device& device,
          Variant variant = Variant::Specialized);
  HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms, ModuleSource modules, Device& device,
          Variant variant = Variant::Specialized);
  // Any provider (the op owns it).
  HcPreOp(Backend backend, MhcDims dims, MhcConstants constants, int num_sms,
          std::unique_ptr<jit::ModuleProvider> modules, Device& device, Variant variant = Variant::Specialized);
  ~HcPreOp();
  HcPreOp(const HcPreOp&) = delete;
  HcPreOp& operator=(const HcPreOp&) = delete;

  Backend backend() const { return backend_; }
  Variant variant() const { return variant_; }
  const MhcDims& dims() const { return dims_; }
  int num_sms() const { return num_sms_; }

  // True for the Cpu/Cuda specialized (JIT) paths: the ones whose keys warmup must compile.
  bool uses_fast_path() const;
  // The split policy's count for T (docs/MATH.md, section 4): the bucket.
  int num_splits(int64_t num_tokens) const;
  // The split count run() launches T tokens of `input` with (the plan's kernel_splits).
  int kernel_splits(int64_t num_tokens, HcPreInput input = HcPreInput::Residual) const;
  // How run() launches T tokens of `input` (plan_hc_pre_launch on T's bucket).
  HcPreLaunchPlan launch_plan(int64_t num_tokens, bool fused_norm, HcPreInput input = HcPreInput::Residual) const;
  // How run_with_splits() launches an explicit split count (num_tokens 0: no workspace).
  HcPreLaunchPlan launch_plan_for_splits(int num_splits, bool fused_norm, HcPreInput input = HcPreInput::Residual,
                                         int64_t num_tokens = 0) const;
  // The JIT spec of one split count (Cpu: Host target; Cuda: the device's arch, sm_90a without a device).
  jit::KernelSpec kernel_spec(int num_splits, bool fused_norm, HcPreInput input = HcPreInput::Residual) const;
  // Every spec run() can request for T in [1, max_num_tokens]; empty unless uses_fast_path().
  std::vector<jit::KernelSpec> planned_specs(int64_t max_num_tokens, bool fused_norm,
                                             HcPreInput input = HcPreInput::Residual) const;
  // One token count per reachable split count, the largest of its bucket (docs/MATH.md, section 4).
  std::vector<int64_t> representatives(int64_t max_num_tokens) const;

  // Pointers on `device`. T == 0 is a no-op. Asynchronous on CUDA: on
  // launch.stream, else the device's stream. Inside CUDA-graph capture the call
  // only launches: kernels not loaded yet, or a workspace too small, throw
  // ErrorKind::NotWarmed naming the split bucket instead of compiling,
  // loading, allocating or synchronizing.
  void run(const HcPreArgs& args, const LaunchContext& launch = {});
  // What run() refuses before touching anything: a negative T, a null pointer
  // the input kind needs (named), a new residual overlapping the residual.
  void check_arguments(const HcPreArgs& args) const;
  // Tests and benchmarks: the kernels of an explicit split count (any T);
  // stages: bit 0 = partial, bit 1 = finish (3 = both; one alone only for timing).
  void run_with_splits(const HcPreArgs& args, int num_splits, int stages = 3, const LaunchContext& launch = {});

  // Scratch bytes a call on T tokens needs (LaunchContext::workspace), 0 for T == 0.
  size_t workspace_bytes(int64_t num_tokens) const;
  // Grows the op's own workspace to serve every T <= max_num_tokens without
  // allocating later (for callers that pass no workspace).
  void reserve_workspace(int64_t max_num_tokens);
  // Whether the kernels a call on T tokens needs are loaded into this op (a
  // call in graph capture then succeeds): its bucket's, or with tiering the generic ones.
  bool loaded(int64_t num_tokens, bool fused_norm, HcPreInput input = HcPreInput::Residual);
  // Whether the bucket of T runs its own specialized kernels now (not the generic ones).
  bool specialized_loaded(int64_t num_tokens, bool fused_norm, HcPreInput input = HcPreInput::Residual);
  // Fetches (compiling or loading as needed, waiting) and sets up the kernels of
  // one split count now (warmup); with tiering also the generic ones, which a
  // capture then falls back on for buckets not loaded.
  void load(int num_splits, bool fused_norm, HcPreInput input = HcPreInput::Residual);

  // Tiered execution (default on; the provider must tier too: HCWARM_TIERED, not
  // strict, JIT allowed). Off: a miss compiles in the calling thread.
  void set_tiered(bool on) { tiered_ = on; }
  // Whether a miss of this op is served by the generic kernels while it compiles.
  bool tiered() const;

  // Options, set before the first call (not while calls are in flight).
  // Cuda, residual input: the one-pass kernel where the shape and device allow
  // it, in the buckets the launch plan gives it (default: on the H200 it is
  // faster there at hidden 4096 and 7168; docs/BENCHMARKS.md, "The one-pass kernel for the larger buckets"), or
  // the split policy's two kernels everywhere (HCWARM_MHC_ONE_PASS=0: its
  // cooperative launch waits for 128 free SMs).
  void set_cuda_one_pass(bool on);
  // Cuda: the scalar part (sigmoids, Sinkhorn) with branch-free reciprocals
  // (default), or with IEEE ones; the specialized and the generic kernels alike.
  void set_cuda_fast_finish(bool on);
  bool cuda_fast_finish() const { return fast_finish_; }
  bool cuda_one_pass() const { return one_pass_; }
  // Cpu backend: run on the caller's pool instead of the op's own (one set of threads per process).
  void set_cpu_pool(std::shared_ptr<ThreadPool> pool);

  // The CUDA device's target ("sm_90a" on another device) and CudaDevice::portable().
  const std::string& cuda_arch() const { return cuda_arch_; }
  bool cuda_portable() const { return cuda_portable_; }
  CudaKernelOptions cuda_options() const {
    return {cuda_arch_, one_pass_, fast_finish_, num_sms_, cuda_portable_, cuda_one_wave_};
  }

 private:
  using KernelsId = std::tuple<int, bool, int>;
  // The one way the op plans: this op's facts and options, and a split count of either meaning.
  HcPreLaunchPlan plan(int num_splits, HcPreSplitsAre splits_are, bool fused_norm, HcPreInput input,
                       int64_t num_tokens) const;
  // The tiering state machine (hc_pre_tiering.cpp); callers hold mu_.
  KernelsId kernels_id(const HcPreLaunchPlan& plan) const;
  const backends::HcPreKernels& kernels_for(const HcPreLaunchPlan& plan);
  // A call whose bucket is not in kernels_: tiered (generic now, specialized
  // scheduled) or blocking; in capture only what is loaded, else NotWarmed.
  const backends::HcPreKernels& kernels_on_miss(const HcPreLaunchPlan& plan, bool capturing);
  // The generic kernels: one binding per norm flag, which launches the kernels of the call's input kind.
  const backends::HcPreKernels& generic_kernels(bool fused_norm);
  // A specialized module bound as the plan says (CUDA reads its kernel form; the CPU's has one form).
  std::unique_ptr<backends::HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                               const jit::KernelSpec& spec, const HcPreLaunchPlan& plan);
  // Packs and queues one call (its arguments checked) as `plan` says.
  void launch_planned(const HcPreArgs& args, const HcPreLaunchPlan& plan, int stages, const LaunchContext& launch);
  // The device's half of the op for the current options (null for Reference).
  std::unique_ptr<backends::HcPreBackend> make_device_backend() const;
  // After an option the backend reads changed: a new backend, and the generic kernels bound again on use.
  void rebuild_device_backend();

  Backend backend_;
  MhcDims dims_;
  MhcConstants constants_;
  int num_sms_;
  std::unique_ptr<jit::ModuleProvider> owned_modules_;
  jit::ModuleProvider* modules_ = nullptr;
  Device* device_;
  std::string cuda_arch_ = "sm_90a";  // the constructor's reading of a CUDA device
  bool cuda_portable_ = false;
  bool cuda_one_wave_ = CudaKernelOptions{}.one_wave;  // the device's CudaDevice::one_wave
  Variant variant_;
  bool one_pass_ = CudaKernelOptions{}.one_pass;
  bool fast_finish_ = CudaKernelOptions{}.fast_finish;
  bool tiered_ = true;

  std::shared_ptr<ThreadPool> pool_;  // Cpu backend: its own, or one shared with the caller
  std::unique_ptr<backends::HcPreBackend> device_backend_;
  cuda::CudaHcPreBackend* cuda_backend_ = nullptr;  // device_backend_ on Cuda, which binds and launches from plans

  std::mutex mu_;
  std::map<KernelsId, std::unique_ptr<backends::HcPreKernels>> kernels_;
  // Tiered: the generic kernels per norm flag, and the buckets compiling in the background.
  std::map<bool, std::unique_ptr<backends::HcPreKernels>> generic_;
  std::map<KernelsId, std::shared_ptr<const jit::PendingModule>> pending_;
  std::set<KernelsId> stays_generic_;  // buckets whose specialization failed: generic kernels in kernels_
  OwnedWorkspace workspace_;
};

}  // namespace hcwarm::mhc
