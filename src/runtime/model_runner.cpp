#include "runtime/model_runner.hpp"
#include "core/logging.hpp"
#include "core/stopwatch.hpp"
#include "jit/report.hpp"

#include "runtime/kernel_plan.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "model/standin/swiglu_cpu.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "model/standin/swiglu_cuda.hpp"
#include "core/thread_pool.hpp"
#include "model/nextn.hpp"
#include "model/standin/swiglu_mlp.hpp"
#include "runtime/peak_memory.hpp"

namespace hcwarm::runtime {
namespace {

}  // namespace

std::unique_ptr<Device> make_device(mhc::Backend backend, const EnvConfig& env) {
  if (backend == mhc::Backend::Cuda) return std::make_unique<cuda::CudaDevice>(0, env);
  return std::make_unique<CpuDevice>();
}

model::ServerArgs ModelRunner::server_args_for(const std::optional<cuda::DeviceInfo>& gpu) const {
  model::ServerArgsInput in = config_.server_input;
  if (gpu) {
    in.device_num_sms = gpu->num_sms;
    if (gpu->total_memory_gb > 0) in.device_memory_gb = gpu->total_memory_gb;
  }
  return model::ServerArgs::process(in, config_.env.num_sms);
}

KernelRegistry ModelRunner::make_registry(const model::ServerArgs& server, mhc::Variant variant,
                                          const mhc::CudaKernelOptions& cuda) const {
  KernelPlanInput plan;
  plan.model = config_.model;
  plan.server = server;
  plan.env = config_.env;
  plan.backend = config_.backend;
  plan.variant = variant;
  plan.cuda = cuda;
  plan.mlp_width = config_.mlp_width;
  KernelRegistry registry = make_kernel_registry(plan);
  for (const std::string& f : config_.drop_families) registry.remove(f);
  return registry;
}

void ModelRunner::start_early_build() {
  if (!jit_ || !jit_->disk_writable()) return;  // compile-only results live on disk
  std::optional<cuda::DeviceInfo> gpu;
  mhc::CudaKernelOptions cuda;
  cuda.one_pass = config_.env.mhc_one_pass;
  if (config_.backend == mhc::Backend::Cuda) {
    gpu = cuda::query_device(0, config_.env.cuda_library);
    if (!gpu || gpu->arch.empty()) return;  // the device's own error comes from make_device
    cuda = mhc::cuda_kernel_options(gpu->arch, config_.env.mhc_one_pass, config_.env.cuda_portable);
  }
  // The same plan the constructor makes once the ops exist, from the op's
  // defaults; where they differ, warmup compiles the rest.
  std::vector<jit::KernelSpec> specs =
      make_registry(server_args_for(gpu), mhc::Variant::Specialized, cuda).planned(/*include_mhc=*/true);
  jit::JitRuntime* jit = jit_.get();
  early_build_ = std::async(std::launch::async, [jit, specs = std::move(specs)] {
    return jit->build(specs, jit::BuildMode::CompileOnly);
  });
}

ModelRunner::ModelRunner(RunnerConfig config) : config_(std::move(config)) {
  const model::ModelConfig& mc = config_.model;
  if (config_.backend != mhc::Backend::Reference) jit_ = std::make_unique<jit::JitRuntime>(config_.jit);
  if (config_.compile_while_device_starts) start_early_build();
  device_ = make_device(config_.backend, config_.env);
  std::optional<cuda::DeviceInfo> gpu;
  if (const auto* cd = dynamic_cast<const cuda::CudaDevice*>(device_.get())) {
    gpu = cuda::query_device(cd->ordinal(), config_.env.cuda_library);
    if (!gpu) gpu = cuda::DeviceInfo{};
    gpu->num_sms = cd->num_sms();
  }
  server_ = server_args_for(gpu);
  if (jit_) {
    if (auto* cuda_dev = dynamic_cast<cuda::CudaDevice*>(device_.get())) {
      jit_->set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cuda_dev));
    }
  }
  pool_ = std::make_shared<ThreadPool>(config_.cpu_threads);
  hc_pre_ = std::make_unique<mhc::HcPreOp>(config_.backend, mc.mhc_dims(), mc.mhc_constants(),
                                           server_.num_sms, jit_.get(), *device_);
  if (config_.backend == mhc::Backend::Cpu) hc_pre_->set_cpu_pool(pool_);
  hc_pre_->set_cuda_one_pass(config_.env.mhc_one_pass);
  const auto* cuda_dev = dynamic_cast<const cuda::CudaDevice*>(device_.get());
  hc_post_ = std::make_unique<mhc::HcPostOp>(mc.mhc_dims(), *device_, jit_.get(),
                                             cuda_dev ? cuda_dev->arch() : std::string(), pool_);
  hc_head_ = std::make_unique<mhc::HcHeadOp>(mc.mhc_dims(), mc.mhc_constants(), *device_, jit_.get(),
                                             cuda_dev ? cuda_dev->arch() : std::string(), pool_);
  hc_head_->set_cuda_one_pass(config_.env.mhc_one_pass);

  // The shipped sublayer on both paths: a dense SwiGLU MLP (attention and MoE are the host engine's).
  const uint64_t seed = config_.build.seed;
  auto make_sublayer = [&](int layer, const std::string& path) -> std::unique_ptr<model::Sublayer> {
    auto weights = std::make_shared<const model::SwigluWeights>(model::SwigluWeights::random(
        mc.hidden_size, config_.mlp_width, seed * 7919u + static_cast<uint64_t>(layer) * 2u + (path == "ffn")));
    std::unique_ptr<model::SwigluBackend> backend;
    if (auto* cd = dynamic_cast<cuda::CudaDevice*>(device_.get())) {
      backend = std::make_unique<cuda::CudaSwigluBackend>(weights, *cd, *jit_, server_.max_num_tokens());
    } else {
      backend = cpu::make_cpu_swiglu_backend(weights, pool_);
    }
    return std::make_unique<model::SwigluMlp>(weights, std::move(backend));
  };
  const model::LayerOps ops{*hc_pre_, *hc_post_, *hc_head_, *device_};
  if (mc.architecture == model::Architecture::DeepseekV4ForCausalLMNextN) {
    model_ = std::make_unique<model::DeepseekV4ForCausalLMNextN>(mc, config_.build, ops, make_sublayer);
  } else {
    model_ = std::make_unique<model::DeepseekV4ForCausalLM>(mc, config_.build, ops, make_sublayer);
  }

  // Kernel families and the keys they will ask for: the same plan `hcwarm cache
  // build` compiles ahead of time, with this op's own CUDA build options.
  registry_ = make_registry(server_, hc_pre_->variant(), hc_pre_->cuda_options());
  const int64_t max_tokens = server_.max_num_tokens();

  // The batch's token embedding, N(0, 1) bf16 written once (one 64-token block
  // drawn and repeated, so that start-up does not draw max_tokens * D numbers).
  const size_t row = static_cast<size_t>(mc.hidden_size);
  embed_ = DeviceBuffer(*device_, static_cast<size_t>(max_tokens) * row * sizeof(bf16));
  out_ = DeviceBuffer(*device_, static_cast<size_t>(max_tokens) * row * sizeof(bf16));
  {
    const int64_t block_tokens = std::min<int64_t>(max_tokens, 64);
    std::vector<bf16> block(static_cast<size_t>(block_tokens) * row);
    std::mt19937_64 rng(seed + 17);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    for (auto& v : block) v = bf16::from_float(n01(rng));
    for (int64_t t = 0; t < max_tokens; t += block_tokens) {
      const int64_t n = std::min(block_tokens, max_tokens - t);
      device_->copy_from_host(embed_.as<bf16>() + static_cast<size_t>(t) * row, block.data(),
                              static_cast<size_t>(n) * row * sizeof(bf16));
    }
  }
  model_->reserve(max_tokens);
  scratch_ = DeviceBuffer(*device_, model_->workspace_bytes(max_tokens));
  // Touched now, so that the first forward of a larger batch does not fault in its pages.
  device_->fill_zero(scratch_.get(), scratch_.bytes());
  device_->synchronize();
}

ModelRunner::~ModelRunner() = default;

WarmupReport ModelRunner::kernel_warmup(bool prewarm) {
  WarmupReport r;
  r.ran = prewarm;
  r.families = registry_.families();
  const auto t0 = std::chrono::steady_clock::now();
  device_->reset_peak();
  PeakMemoryProbe probe(*device_);
  const size_t base_bytes = device_->memory_stats().current_bytes;

  if (jit_) {
    // What compiled while the device started (compile_while_device_starts) is
    // this process's compile all the same: counted as compiled, not as a disk load.
    int early_compiled = 0;
    if (early_build_.valid()) {
      try {
        early_compiled = early_build_.get().compiled;
      } catch (const std::exception&) {
        // The build below compiles what it did not, and reports any error itself.
      }
    }
    // Framework-level warmup: every registered family's planned keys, in parallel.
    const std::vector<jit::KernelSpec> specs = registry_.planned(/*include_mhc=*/prewarm);
    const jit::BuildReport b = jit_->build(specs);
    static_cast<jit::BuildCounts&>(r) = b;
    const int moved = std::min(early_compiled, r.loaded_from_disk);
    r.compiled += moved;
    r.loaded_from_disk -= moved;
    if (b.failed > 0) {
      // A build failure is not bad input: the first failure's kind (Compile, Timeout, Io, ...).
      HCWARM_THROW(b.first_error_kind, "warmup: {} of {} kernels failed to build: {}", b.failed, b.keys,
                   b.errors.empty() ? std::string() : b.errors.front());
    }
    load_into_ops(specs);
  }
  r.framework_seconds = seconds_since(t0);

  // The model's own hook, when it has one: the runner holds no model-specific code.
  const auto t1 = std::chrono::steady_clock::now();
  if (prewarm) {
    if (auto* hook = dynamic_cast<model::KernelWarmupHook*>(model_.get())) r.token_counts = hook->kernel_warmup(*this);
  }
  // llama.cpp's habit: one minimal forward through every path (T = 1), so the
  // first served batch meets no lazy module load or first-launch cost either.
  if (prewarm) model_->forward(embed_.as<bf16>(), out_.as<bf16>(), 1, scratch_.get());
  device_->synchronize();
  r.model_hook_seconds = seconds_since(t1);
  const MemoryStats mem = device_->memory_stats();
  r.peak_device_bytes = mem.peak_bytes > base_bytes ? mem.peak_bytes - base_bytes : 0;
  r.peak_bytes = probe.finish();

  // Serving starts clean: warmup's events and counters and the memory peak are
  // reset, then the runtime is ready and any later compile is flagged.
  if (jit_) {
    jit_->reset_counters();
    jit_->mark_ready();
  }
  device_->reset_peak();
  r.seconds = seconds_since(t0);
  const std::string defaults = model::defaulted_fields_note(config_.model);
  log::info("kernel warmup: {:.3f}s, {} keys ({}), mHC token counts {}{}", r.seconds, r.keys, jit::format_sources(r),
            r.token_counts.empty() ? std::string("none") : fmt::format("{}", fmt::join(r.token_counts, ", ")),
            defaults.empty() ? "" : "; " + defaults);
  return r;
}

void ModelRunner::load_into_ops(const std::vector<jit::KernelSpec>& specs) {
  // Each planned kernel into the op that runs it, so that a first call (or a
  // CUDA-graph capture) of any bucket finds it bound.
  for (const jit::KernelSpec& s : specs) {
    if (s.family == "mhc_pre") {
      hc_pre_->load(mhc::hc_pre_spec_num_splits(s), s.param("norm") == "1",
                    mhc::parse_hc_pre_input(s.param("input")));
    } else if (s.family == "mhc_post") {
      hc_post_->load();
    } else if (s.family == "mhc_head") {
      hc_head_->load();
    }
  }
}

CoverageReport ModelRunner::check_coverage() {
  return check_kernel_coverage({*hc_pre_, *hc_post_, *hc_head_}, *device_, jit_.get(), max_num_tokens(),
                               /*fused_norm=*/true);
}

double ModelRunner::forward(int64_t num_tokens) {
  HCWARM_CHECK_ARG(num_tokens >= 1 && num_tokens <= max_num_tokens(),
                   "forward: num_tokens {} is outside [1, max_num_tokens {}]", num_tokens, max_num_tokens());
  const auto t0 = std::chrono::steady_clock::now();
  model_->forward(embed_.as<bf16>(), out_.as<bf16>(), num_tokens, scratch_.get());
  device_->synchronize();
  return seconds_since(t0);
}

}  // namespace hcwarm::runtime
