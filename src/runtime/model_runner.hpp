#pragma once
// The model runner: configuration -> device -> JIT runtime -> ops -> model,
// then kernel_warmup(): framework-level warmups first (every registered kernel
// family's planned keys, compiled in parallel), then the model's own warmup
// hook when the model has one, then reset what warmup touched and mark the
// runtime ready. forward() runs the layers on a token count.
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/causal_lm.hpp"
#include "model/deepseek_v4.hpp"
#include "model/model_config.hpp"
#include "model/runner_view.hpp"
#include "model/server_args.hpp"
#include "runtime/coverage_check.hpp"
#include "runtime/kernel_plan.hpp"
#include "runtime/kernel_registry.hpp"

namespace hcwarm::runtime {

struct RunnerConfig {
  model::ModelConfig model;
  // Processed into server_args() once the device is known (its SM count and memory).
  model::ServerArgsInput server_input;
  EnvConfig env;
  mhc::Backend backend = mhc::Backend::Cpu;
  jit::JitOptions jit;
  model::ModelBuildOptions build;
  int mlp_width = 256;  // the shipped SwiGLU MLP sublayer's intermediate width
  int cpu_threads = 0;  // CPU backend threads (0: hardware threads)
  // Tests only: kernel families left out of the plan (a warmup that misses them).
  std::vector<std::string> drop_families;
  // Start compiling the planned kernels into the disk cache before the device
  // is created (planned from the GPU's attributes, read without a context), so
  // that creating the CUDA context, about 1 s when several ranks share a GPU,
  // overlaps the compiles; kernel_warmup() waits for them. Needs a writable disk cache.
  bool compile_while_device_starts = false;
};

// The counts (keys, compiled, ...) are the framework warmup's build's.
struct WarmupReport : jit::BuildCounts {
  bool ran = false;                   // false with --no-prewarm
  double seconds = 0.0;               // the whole kernel_warmup()
  double framework_seconds = 0.0;     // the parallel build of registered families
  double model_hook_seconds = 0.0;    // the model's own hook
  std::vector<int64_t> token_counts;  // the buckets the model hook prewarmed, each by its largest count
  size_t peak_device_bytes = 0;       // above the model's own memory, during warmup
  // Above the runtime's own at warmup's start (peak_memory.hpp): host RSS on the
  // CPU backend, device memory on CUDA.
  size_t peak_bytes = 0;
  std::vector<std::string> families;
};

class ModelRunner final : public model::RunnerView {
 public:
  explicit ModelRunner(RunnerConfig config);
  ~ModelRunner() override;

  // prewarm = false is the situation before the upstream fix: no mHC prewarm
  // (other registered families still warm); the runtime is marked ready all the same.
  WarmupReport kernel_warmup(bool prewarm = true);

  // After kernel_warmup: every mHC op at one token count of every split bucket
  // with compiling switched off; names each kernel warmup missed (coverage_check.hpp).
  CoverageReport check_coverage();

  // Runs the model on num_tokens tokens (1 <= T <= max_num_tokens): from the
  // embedding through every layer and the head; waits for the device, returns the seconds it took.
  double forward(int64_t num_tokens);

  const model::ServerArgs& server_args() const override { return server_; }
  const EnvConfig& env() const override { return config_.env; }
  Device& device() override { return *device_; }

  // Compiles since the runtime was marked ready in a call's own path, and those the
  // background worker ran (docs/DESIGN.md, "Two counters"); 0 without a JIT.
  int64_t compiles_after_ready() const { return jit_ ? jit_->stats().compiles_after_ready : 0; }
  int64_t background_compiles_after_ready() const {
    return jit_ ? jit_->stats().background_compiles_after_ready : 0;
  }
  // The JIT runtime's counters (zeros without a JIT).
  jit::CompileStats compile_stats() const { return jit_ ? jit_->stats() : jit::CompileStats{}; }
  // Whether a kernel miss is served by the generic kernels while it compiles in the background.
  bool tiered() const { return hc_pre_->tiered(); }
  // Waits until the JIT runtime's background worker is idle (nothing without a JIT).
  void drain_background() {
    if (jit_) jit_->drain_background();
  }

  const RunnerConfig& config() const { return config_; }
  // Binds each planned kernel into its op (warmup's last framework step).
  void load_into_ops(const std::vector<jit::KernelSpec>& specs);
  jit::JitRuntime& jit() { return *jit_; }
  mhc::HcPreOp& hc_pre() { return *hc_pre_; }
  mhc::HcPostOp& hc_post() { return *hc_post_; }
  mhc::HcHeadOp& hc_head() { return *hc_head_; }
  model::CausalLM& model() { return *model_; }
  const KernelRegistry& registry() const { return registry_; }
  int64_t max_num_tokens() const { return server_.max_num_tokens(); }

 private:
  // The plan of this configuration for `server` (processed for the device) and
  // the hc_pre op's variant and CUDA build options: the one place the runner builds it.
  KernelRegistry make_registry(const model::ServerArgs& server, mhc::Variant variant,
                               const mhc::CudaKernelOptions& cuda) const;
  // The device's server arguments from its attributes alone (no context).
  model::ServerArgs server_args_for(const std::optional<cuda::DeviceInfo>& gpu) const;
  void start_early_build();

  RunnerConfig config_;
  std::unique_ptr<Device> device_;
  model::ServerArgs server_;
  std::unique_ptr<jit::JitRuntime> jit_;
  std::future<jit::BuildReport> early_build_;  // compile_while_device_starts; destroyed (waited for) before jit_
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<mhc::HcPreOp> hc_pre_;
  std::unique_ptr<mhc::HcPostOp> hc_post_;
  std::unique_ptr<mhc::HcHeadOp> hc_head_;
  std::unique_ptr<model::CausalLM> model_;
  KernelRegistry registry_;
  DeviceBuffer embed_;    // (max_num_tokens, D): the batch's token embedding
  DeviceBuffer out_;      // (max_num_tokens, D): the model's output (the head's)
  DeviceBuffer scratch_;  // the forward's workspace (residual streams included) for max_num_tokens
};

// The device a backend runs on: a CpuDevice, or the first CUDA device.
std::unique_ptr<Device> make_device(mhc::Backend backend, const EnvConfig& env);

}  // namespace hcwarm::runtime
