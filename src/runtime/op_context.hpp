#pragma once
// The mHC ops on one device for callers that bring their own tensors, stream
// and scratch memory: the Python package and C++ engines. An OpContext owns the
// device handle, the JIT runtime and one op per (dims, constants); prewarm()
// compiles and loads everything the ops can reach for a serving configuration,
// with the model runner's own planning (kernel_plan.hpp), then marks the
// runtime ready. Ops are thread-safe; a context is not copyable.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "jit/kernel_exchange.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::runtime {

struct OpContextOptions {
  mhc::Backend backend = mhc::Backend::Cpu;  // Cpu or Cuda (Reference has no kernels to warm)
  int device_ordinal = 0;                    // Cuda: which GPU
  // The split policy's SM count when set; else, on Cuda, the device's; on Cpu,
  // HCWARM_NUM_SMS (env), else 132 (an H200).
  std::optional<int> num_sms;
  mhc::Variant variant = mhc::Variant::Specialized;
  EnvConfig env;
  jit::JitOptions jit;  // usually JitOptions::from_env(env), with the caller's cache_dir
};

struct PrewarmRequest {
  model::ModelConfig model;
  model::ServerArgsInput server;  // chunked_prefill_size, dp_size, enable_dp_attention
  bool fused_norm = true;         // warm hc_pre calls that pass a norm weight (as DeepSeek V4's layers do)
  bool unfused_norm = false;      // and calls without one
};

// The counts (keys, compiled, ...) are the prewarm's build's.
struct PrewarmReport : jit::BuildCounts {
  double seconds = 0;
  int64_t max_num_tokens = 0;         // after the DP division, as planned
  int num_sms = 0;
  std::vector<int64_t> token_counts;  // the representatives run through the ops
  std::string skipped;                // why the mHC prewarm did not run (empty: it ran)
  std::vector<std::string> defaults;  // the model's defaulted_fields ("field=value")
  // Peak memory above the context's own at the prewarm's start (peak_memory.hpp):
  // host RSS on the CPU backend, device memory on CUDA.
  size_t peak_bytes = 0;
};

class OpContext {
 public:
  explicit OpContext(OpContextOptions options);
  ~OpContext();
  OpContext(const OpContext&) = delete;
  OpContext& operator=(const OpContext&) = delete;

  mhc::Backend backend() const { return options_.backend; }
  Device& device() { return *device_; }
  jit::JitRuntime& jit() { return *jit_; }
  int num_sms() const { return num_sms_; }
  int device_ordinal() const { return options_.device_ordinal; }
  const EnvConfig& env() const { return options_.env; }
  std::string arch() const;  // the NVRTC target ("" on the CPU)

  // The op for these shapes and constants, created on first use.
  mhc::HcPreOp& hc_pre(mhc::MhcDims dims, const mhc::MhcConstants& constants);
  mhc::HcPostOp& hc_post(mhc::MhcDims dims);
  // The head of these shapes and epsilons (the model's last step; no Sinkhorn).
  mhc::HcHeadOp& hc_head(mhc::MhcDims dims, float hc_eps, float rms_eps);

  // Plans every key the ops can reach for T in [1, max_num_tokens] of this
  // configuration, builds them in parallel, runs each hc_pre split bucket and
  // hc_post once and loads the head (every kernel into its op, the ops' own
  // workspace reserved), then marks the JIT runtime ready. Throws when a kernel fails to build.
  // The mHC keys are planned whatever the model's attention (every DeepSeek V4
  // layer has mHC); only HCWARM_MHC_PREWARM=0 or a non-JIT variant skips them,
  // said in the report's `skipped`.
  PrewarmReport prewarm(const PrewarmRequest& request);
  // The specs prewarm(request) builds, in its order: the head's kernel, then the
  // pre and post kernels of every split bucket.
  std::vector<jit::KernelSpec> prewarm_specs(const PrewarmRequest& request);
  // prewarm_specs' distinct keys with their first spec, in order.
  std::pair<std::vector<std::string>, std::vector<jit::KernelSpec>> planned_keys(const PrewarmRequest& request);
  // The group's kernel exchange before prewarm(request) (jit/kernel_exchange.hpp):
  // this rank builds its share of the planned keys compile-only, the ranks
  // gather what each built, and every entry from a rank on another cache
  // directory is verified and published here, so that prewarm() then finds
  // every key on disk. Nothing is loaded.
  jit::ExchangeReport prewarm_exchange(const PrewarmRequest& request, int rank, int world,
                                       const jit::GatherBytes& gather);
  // The server arguments prewarm(request) plans with: this context's SM count and
  // device memory (for the default chunked_prefill_size), DP attention applied once.
  model::ServerArgs prewarm_server(const PrewarmRequest& request) const;
  // Why prewarm() plans no mHC keys here (empty: it plans them): HCWARM_MHC_PREWARM=0,
  // or a variant without JIT kernels. Never the model's attention.
  std::string prewarm_skipped() const;

  // Compiles after ready in a call's own path, and in the background worker (docs/DESIGN.md, "Two counters").
  int64_t compiles_after_ready() const { return jit_->stats().compiles_after_ready; }
  int64_t background_compiles_after_ready() const { return jit_->stats().background_compiles_after_ready; }

 private:
  OpContextOptions options_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<jit::JitRuntime> jit_;
  std::shared_ptr<ThreadPool> pool_;
  int num_sms_ = 0;
  std::optional<double> device_memory_gb_;

  std::mutex mu_;
  using PreKey = std::tuple<int, int, int, float, float, float, float>;
  std::map<PreKey, std::unique_ptr<mhc::HcPreOp>> pre_;
  std::map<std::pair<int, int>, std::unique_ptr<mhc::HcPostOp>> post_;
  std::map<std::tuple<int, int, float, float>, std::unique_ptr<mhc::HcHeadOp>> head_;
};

}  // namespace hcwarm::runtime
