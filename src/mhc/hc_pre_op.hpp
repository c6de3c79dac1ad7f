#pragma once
// hc_pre dispatch: the single place where a run-time token count becomes a
// compile-time split count (split_policy.hpp), a kernel key (kernel_spec) and a
// loaded kernel (through the JIT runtime). planned_specs() walks the same
// functions over [1, M], so the warmup compiles exactly what run() will ask for.
// What differs per device goes through one interface, backends/hc_pre_backend.hpp
// (bind a module, size the workspace, launch), entered once per call.
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
#include "mhc/mhc_types.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::jit {
class JitRuntime;
}

namespace hcwarm::mhc {


enum class Backend { Reference, Cpu, Cuda };
Backend parse_backend(std::string_view name);  // "reference" | "cpu" | "cuda"; else InvalidArgument
const char* to_string(Backend b);
// Cuda when a CUDA device is present (the driver opened from cuda_library, or
// libcuda.so.1), else Cpu. Never throws.
Backend default_backend(const std::string& cuda_library = {});

enum class Variant { Specialized, Generic };
Variant parse_variant(std::string_view name);  // "specialized" | "generic"
const char* to_string(Variant v);

// Specialized kernels from a function instead of a JIT runtime (tests); never tiered.
using ModuleSource = jit::FunctionModuleProvider::Fn;

// How the CUDA specialized kernels are built: part of every CUDA key.
struct CudaKernelOptions {
  std::string arch = "sm_90a";      // the device's, e.g. sm_90a on Hopper
  bool one_pass = true;             // num_splits == 1, sm_90+, hidden % 1024 == 0, <= 7168: the one-pass kernel
  bool fast_finish = true;          // Sinkhorn with branch-free reciprocals (not IEEE division)
};

// The JIT spec of one split bucket, with no op and no device: what HcPreOp::run
// asks for, and what `hcwarm cache build` compiles on a machine without a GPU.
// CPU specs carry num_splits=S. CUDA kernels read the split count at run time
// and are specialized per split class (cuda::cuda_split_class): their specs
// carry splits=<class> ("1", "2", "3-4", "5-21", "22+"), so the buckets of a class share
// one key. input Embed / Post adds the param input=embed / input=post (and never
// the one-pass kernel).
jit::KernelSpec hc_pre_kernel_spec(Backend backend, MhcDims dims, int num_splits, bool fused_norm,
                                   const CudaKernelOptions& cuda = {}, HcPreInput input = HcPreInput::Residual);
// The split count the kernels of a bucket of `num_splits` splits run with:
// num_splits, except on CUDA with the one-pass kernel on and supported, for
// residual input, in the buckets cuda::one_pass_max_splits admits: 1, the
// one-pass kernel. Dispatch (HcPreOp::run) and the plan both go through it.
int hc_pre_kernel_splits(Backend backend, MhcDims dims, int num_splits, const CudaKernelOptions& cuda,
                         HcPreInput input = HcPreInput::Residual);
// A split count an hc_pre spec serves: its num_splits, or its split class's smallest.
int hc_pre_spec_num_splits(const jit::KernelSpec& spec);
// Every spec hc_pre can ask for over T in [1, max_num_tokens], each once, in
// bucket order: one per split bucket on the CPU, one per split class on CUDA
// (with input Post, of the token counts the boundary fuses at: hc_post_pre.hpp).
std::vector<jit::KernelSpec> hc_pre_planned_specs(Backend backend, MhcDims dims, int num_sms, int64_t max_num_tokens,
                                                  bool fused_norm, const CudaKernelOptions& cuda = {},
                                                  HcPreInput input = HcPreInput::Residual);

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
  // The split count run() launches T tokens of `input` with (hc_pre_kernel_splits).
  int kernel_splits(int64_t num_tokens, HcPreInput input = HcPreInput::Residual) const;
  // The JIT spec of one split bucket (Cpu: Host target; Cuda: the device's arch, sm_90a without a device).
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
  // it, in the buckets hc_pre_kernel_splits gives it (default: on the H200 it is
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

  std::string cuda_arch() const;
  CudaKernelOptions cuda_options() const { return {cuda_arch(), one_pass_, fast_finish_}; }

 private:
  using KernelsId = std::tuple<int, bool, int>;
  KernelsId kernels_id(int num_splits, bool fused_norm, HcPreInput input = HcPreInput::Residual) const;
  const backends::HcPreKernels& kernels_for(int num_splits, bool fused_norm, HcPreInput input = HcPreInput::Residual);
  // A call whose bucket is not in kernels_: tiered (generic now, specialized
  // scheduled) or blocking; in capture only what is loaded, else NotWarmed.
  const backends::HcPreKernels& kernels_on_miss(int num_splits, bool fused_norm, HcPreInput input, bool capturing,
                                                int64_t num_tokens);
  // The generic kernels: one binding per norm flag, which launches the kernels of the call's input kind.
  const backends::HcPreKernels& generic_kernels(bool fused_norm);
  // The device's half of the op for the current options (null for Reference).
  std::unique_ptr<backends::HcPreBackend> make_device_backend() const;
  // After an option the backend reads changed: a new backend, and the generic kernels bound again on use.
  void rebuild_device_backend();
  void run_reference(const HcPreArgs& args);

  Backend backend_;
  MhcDims dims_;
  MhcConstants constants_;
  int num_sms_;
  std::unique_ptr<jit::ModuleProvider> owned_modules_;
  jit::ModuleProvider* modules_ = nullptr;
  Device* device_;
  Variant variant_;
  bool one_pass_ = CudaKernelOptions{}.one_pass;
  bool fast_finish_ = CudaKernelOptions{}.fast_finish;
  bool tiered_ = true;

  std::shared_ptr<ThreadPool> pool_;  // Cpu backend: its own, or one shared with the caller
  std::unique_ptr<backends::HcPreBackend> device_backend_;

  std::mutex mu_;
  std::map<KernelsId, std::unique_ptr<backends::HcPreKernels>> kernels_;
  // Tiered: the generic kernels per norm flag, and the buckets compiling in the background.
  std::map<bool, std::unique_ptr<backends::HcPreKernels>> generic_;
  std::map<KernelsId, std::shared_ptr<const jit::PendingModule>> pending_;
  std::set<KernelsId> stays_generic_;  // buckets whose specialization failed: generic kernels in kernels_
  OwnedWorkspace workspace_;
};

// Runs op on host tensors: copies the inputs to `device`, runs, synchronizes and
// copies the outputs back (for the CLI and tests). Shapes are checked first.
HcPreResult run_hc_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& residual,
                            const HostTensor<float>& fn, const HostTensor<float>& scale,
                            const HostTensor<float>& base, const HostTensor<bf16>* norm_weight);

// The first layer's hc_pre on host tensors: the embedding (T, D) as input Embed.
HcPreResult run_hc_pre_embed_host(HcPreOp& op, Device& device, const HostTensor<bf16>& embed,
                                  const HostTensor<float>& fn, const HostTensor<float>& scale,
                                  const HostTensor<float>& base, const HostTensor<bf16>* norm_weight);

// The fused sublayer boundary on host tensors (input Post), as run_hc_pre_host:
// shapes checked first (check_hc_post_pre_shapes), then the new residual and
// the pre step's outputs.
HcPostPreResult run_hc_post_pre_host(HcPreOp& op, Device& device, const HostTensor<bf16>& x,
                                     const HostTensor<bf16>& residual, const HostTensor<float>& prev_post,
                                     const HostTensor<float>& prev_comb, const HostTensor<float>& fn,
                                     const HostTensor<float>& scale, const HostTensor<float>& base,
                                     const HostTensor<bf16>* norm_weight);

}  // namespace hcwarm::mhc
