#include "runtime/op_context.hpp"
#include "core/logging.hpp"
#include "core/stopwatch.hpp"
#include "jit/report.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "backends/cuda/cuda_device.hpp"
#include "core/thread_pool.hpp"
#include "jit/cuda_targets.hpp"
#include "mhc/hc_post_pre.hpp"
#include "model/deepseek_v4.hpp"
#include "runtime/kernel_plan.hpp"
#include "runtime/peak_memory.hpp"

namespace hcwarm::runtime {
namespace {

// One token of zeros through the op with an explicit split count: the same
// kernels as the bucket's real calls, so the first real launch (and a capture)
// meets no lazy module load.
void run_one_token(mhc::HcPreOp& op, Device& device, int splits, bool norm) {
  const mhc::MhcDims d = op.dims();
  DeviceBuffer residual(device, static_cast<size_t>(d.k()) * sizeof(bf16));
  DeviceBuffer fn(device, static_cast<size_t>(d.mix()) * d.k() * sizeof(float));
  DeviceBuffer scale(device, 3 * sizeof(float)), base(device, static_cast<size_t>(d.mix()) * sizeof(float));
  DeviceBuffer w(device, static_cast<size_t>(d.hidden) * sizeof(bf16));
  DeviceBuffer y(device, static_cast<size_t>(d.hidden) * sizeof(bf16));
  DeviceBuffer post(device, static_cast<size_t>(d.hc_mult) * sizeof(float));
  DeviceBuffer comb(device, static_cast<size_t>(d.hc_mult) * d.hc_mult * sizeof(float));
  for (DeviceBuffer* b : {&residual, &fn, &scale, &base, &w}) device.fill_zero(b->get(), b->bytes());
  op.run_with_splits({.num_tokens = 1, .residual = residual.as<bf16>(), .fn = fn.as<float>(),
                      .scale = scale.as<float>(), .base = base.as<float>(),
                      .norm_weight = norm ? w.as<bf16>() : nullptr, .y = y.as<bf16>(), .post = post.as<float>(),
                      .comb = comb.as<float>()},
                     splits);
  device.synchronize();
}

void run_post_once(mhc::HcPostOp& op, Device& device, mhc::MhcDims d) {
  DeviceBuffer x(device, static_cast<size_t>(d.hidden) * sizeof(bf16));
  DeviceBuffer residual(device, static_cast<size_t>(d.k()) * sizeof(bf16));
  DeviceBuffer post(device, static_cast<size_t>(d.hc_mult) * sizeof(float));
  DeviceBuffer comb(device, static_cast<size_t>(d.hc_mult) * d.hc_mult * sizeof(float));
  for (DeviceBuffer* b : {&x, &residual, &post, &comb}) device.fill_zero(b->get(), b->bytes());
  op.run(1, x.as<bf16>(), residual.as<bf16>(), post.as<float>(), comb.as<float>(), residual.as<bf16>());
  device.synchronize();
}

}  // namespace

OpContext::OpContext(OpContextOptions options) : options_(std::move(options)) {
  const mhc::Backend backend = options_.backend;
  HCWARM_CHECK_ARG(backend == mhc::Backend::Cpu || backend == mhc::Backend::Cuda,
                   "an op context runs the cpu or cuda backend, not {}", mhc::to_string(backend));
  if (options_.num_sms) HCWARM_CHECK_ARG(*options_.num_sms >= 1, "num_sms must be positive, got {}", *options_.num_sms);
  if (backend == mhc::Backend::Cuda) {
    auto dev = std::make_unique<cuda::CudaDevice>(options_.device_ordinal, options_.env);
    // A GPU below the kernels' floor is refused here, at start-up, by name: never by a compile while serving.
    jit::require_supported_cuda_arch(dev->arch(), "GPU " + dev->name());
    num_sms_ = options_.num_sms.value_or(dev->num_sms());
    if (const auto info = cuda::query_device(options_.device_ordinal, options_.env.cuda_library);
        info && info->total_memory_gb > 0) {
      device_memory_gb_ = info->total_memory_gb;
    }
    device_ = std::move(dev);
  } else {
    HCWARM_CHECK_ARG(options_.device_ordinal == 0, "the cpu backend has one device, 0; got {}",
                     options_.device_ordinal);
    num_sms_ = options_.num_sms.value_or(options_.env.num_sms.value_or(kDefaultNumSms));
    device_ = std::make_unique<CpuDevice>();
  }
  jit_ = std::make_unique<jit::JitRuntime>(options_.jit);
  if (auto* cd = dynamic_cast<cuda::CudaDevice*>(device_.get())) {
    jit_->set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cd));
  }
  pool_ = std::make_shared<ThreadPool>();
}

OpContext::~OpContext() {
  // Ops hold modules and buffers of the device: gone before it.
  pre_.clear();
  post_.clear();
  head_.clear();
}

std::string OpContext::arch() const {
  if (const auto* cd = dynamic_cast<const cuda::CudaDevice*>(device_.get())) return cd->arch();
  return {};
}

mhc::HcPreOp& OpContext::hc_pre(mhc::MhcDims dims, const mhc::MhcConstants& c) {
  const PreKey key{dims.hc_mult, dims.hidden, c.sinkhorn_iters, c.hc_eps, c.rms_eps, c.norm_eps, c.post_mult};
  std::lock_guard<std::mutex> lock(mu_);
  auto& op = pre_[key];
  if (!op) {
    auto made = std::make_unique<mhc::HcPreOp>(options_.backend, dims, c, num_sms_, jit_.get(), *device_,
                                               options_.variant);
    if (options_.backend == mhc::Backend::Cpu) made->set_cpu_pool(pool_);
    made->set_cuda_one_pass(options_.env.mhc_one_pass);
    op = std::move(made);
  }
  return *op;
}

mhc::HcPostOp& OpContext::hc_post(mhc::MhcDims dims) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& op = post_[{dims.hc_mult, dims.hidden}];
  if (!op) op = std::make_unique<mhc::HcPostOp>(dims, *device_, jit_.get(), arch(), pool_);
  return *op;
}

mhc::HcHeadOp& OpContext::hc_head(mhc::MhcDims dims, float hc_eps, float rms_eps) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& op = head_[{dims.hc_mult, dims.hidden, hc_eps, rms_eps}];
  if (!op) {
    mhc::MhcConstants c;
    c.hc_eps = hc_eps;
    c.rms_eps = rms_eps;
    // The head runs once per forward: on the CPU, on the caller's thread.
    op = std::make_unique<mhc::HcHeadOp>(dims, c, *device_, jit_.get(), arch(), nullptr);
    op->set_cuda_one_pass(options_.env.mhc_one_pass);
  }
  return *op;
}

model::ServerArgs OpContext::prewarm_server(const PrewarmRequest& req) const {
  model::ServerArgsInput in = req.server;
  in.num_sms = num_sms_;  // the ops' split policy, whatever the request says
  in.device_num_sms = num_sms_;
  if (device_memory_gb_) in.device_memory_gb = device_memory_gb_;
  return model::ServerArgs::process(in, options_.env.num_sms);
}

std::string OpContext::prewarm_skipped() const {
  return model::mhc_prewarm_skip_reason(mhc::HcPreOp::uses_fast_path(options_.backend, options_.variant),
                                        options_.env);
}

std::vector<jit::KernelSpec> OpContext::prewarm_specs(const PrewarmRequest& req) {
  HCWARM_CHECK_ARG(req.fused_norm || req.unfused_norm,
                   "prewarm: neither calls with a norm weight nor calls without one are asked for: nothing to warm");
  const model::ServerArgs server = prewarm_server(req);
  const mhc::MhcDims dims = req.model.mhc_dims();
  mhc::HcPreOp& pre = hc_pre(dims, req.model.mhc_constants());
  const bool skipped = !prewarm_skipped().empty();
  const mhc::MhcConstants c = req.model.mhc_constants();
  std::vector<jit::KernelSpec> specs = hc_head(dims, c.hc_eps, c.rms_eps).planned_specs();

  // The model runner's plan, less the families these ops never reach (the stand-in MLP).
  KernelPlanInput plan;
  plan.model = req.model;
  plan.server = server;
  plan.env = options_.env;
  plan.backend = options_.backend;
  plan.variant = options_.variant;
  plan.cuda = pre.cuda_options();
  plan.model_hook_conditions = false;
  for (jit::KernelSpec& s : make_kernel_registry(plan).planned(/*include_mhc=*/true)) {
    if (s.family == "mhc_post" || (s.family == "mhc_pre" && req.fused_norm)) specs.push_back(std::move(s));
  }
  if (req.unfused_norm && !skipped && pre.uses_fast_path()) {
    for (jit::KernelSpec& s : mhc::hc_pre_planned_specs(options_.backend, dims, num_sms_, server.max_num_tokens(),
                                                        /*fused_norm=*/false, plan.cuda)) {
      specs.push_back(std::move(s));
    }
  }
  return specs;
}

std::pair<std::vector<std::string>, std::vector<jit::KernelSpec>> OpContext::planned_keys(
    const PrewarmRequest& req) {
  std::pair<std::vector<std::string>, std::vector<jit::KernelSpec>> out;
  std::set<std::string> seen;
  for (jit::KernelSpec& s : prewarm_specs(req)) {
    std::string key = jit_->key(s);
    if (!seen.insert(key).second) continue;
    out.first.push_back(std::move(key));
    out.second.push_back(std::move(s));
  }
  return out;
}

jit::ExchangeReport OpContext::prewarm_exchange(const PrewarmRequest& req, int rank, int world,
                                                const jit::GatherBytes& gather) {
  return jit::exchange_kernels(*jit_, prewarm_specs(req), rank, world, gather);  // it keeps each key once
}

PrewarmReport OpContext::prewarm(const PrewarmRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<cuda::ScopedContext> scoped;
  if (const auto* cd = dynamic_cast<const cuda::CudaDevice*>(device_.get())) scoped.emplace(*cd);
  jit_->mark_warming();
  PeakMemoryProbe probe(*device_);
  const model::ServerArgs server = prewarm_server(req);
  const mhc::MhcDims dims = req.model.mhc_dims();
  mhc::HcPreOp& pre = hc_pre(dims, req.model.mhc_constants());
  mhc::HcPostOp& post = hc_post(dims);
  const mhc::MhcConstants c = req.model.mhc_constants();
  mhc::HcHeadOp& head = hc_head(dims, c.hc_eps, c.rms_eps);

  PrewarmReport r;
  r.max_num_tokens = server.max_num_tokens();
  r.num_sms = num_sms_;
  r.skipped = prewarm_skipped();
  r.defaults = req.model.defaulted_fields;
  const std::vector<jit::KernelSpec> specs = prewarm_specs(req);
  // Ready with no hc_pre key for a model whose every layer runs hc_pre would be a silent trap.
  HCWARM_ASSERT(!r.skipped.empty() || std::any_of(specs.begin(), specs.end(),
                                                  [](const jit::KernelSpec& s) { return s.family == "mhc_pre"; }),
                "prewarm of {} planned no hc_pre kernel and gave no reason", req.model.name);
  const jit::BuildReport b = jit_->build(specs);
  static_cast<jit::BuildCounts&>(r) = b;
  if (b.failed > 0) {
    // The first failure's kind: NotWarmed under HCWARM_JIT=off, Compile for a compiler error, ...
    HCWARM_THROW(b.first_error_kind, "prewarm: {} of {} kernels failed to build: {}", b.failed, b.keys,
                 b.errors.empty() ? std::string() : b.errors.front());
  }

  // Every planned kernel into its op, each bucket launched once.
  if (r.skipped.empty()) {
    r.token_counts = pre.representatives(r.max_num_tokens);
    // The split counts each input kind's kernels run with over the buckets (HcPreOp::kernel_splits).
    std::set<int> splits, embed_splits, boundary_splits;
    for (const int64_t t : r.token_counts) {
      splits.insert(pre.kernel_splits(t));
      embed_splits.insert(pre.kernel_splits(t, mhc::HcPreInput::Embed));
    }
    // The boundary's fused kernels: the buckets of the token counts it fuses at.
    const int64_t fused_max = mhc::fused_boundary_max_tokens(pre.backend(), pre.dims(), pre.num_sms());
    for (const int64_t t : pre.representatives(std::min(r.max_num_tokens, fused_max))) {
      boundary_splits.insert(pre.kernel_splits(t, mhc::HcPreInput::Post));
    }
    for (const bool norm : {true, false}) {
      if (norm ? !req.fused_norm : !req.unfused_norm) continue;
      for (const int s : splits) {
        pre.load(s, norm);
        run_one_token(pre, *device_, s, norm);
      }
      if (!norm) continue;  // the first layer's hc_pre and the boundary are planned with the norm
      for (const int s : embed_splits) pre.load(s, norm, mhc::HcPreInput::Embed);
      for (const int s : boundary_splits) pre.load(s, norm, mhc::HcPreInput::Post);
    }
    pre.reserve_workspace(r.max_num_tokens);
  }
  post.load();
  run_post_once(post, *device_, dims);
  head.load();
  device_->synchronize();
  r.peak_bytes = probe.finish();
  jit_->mark_ready();
  r.seconds = seconds_since(t0);
  const std::string defaults = model::defaulted_fields_note(req.model);
  log::info("prewarm ({}, {}): {:.3f}s, {} keys ({}), {} token counts up to {}, peak {} MiB{}{}", req.model.name,
            mhc::to_string(options_.backend), r.seconds, r.keys, jit::format_sources(r), r.token_counts.size(),
            r.max_num_tokens, r.peak_bytes >> 20, r.skipped.empty() ? "" : "; mHC prewarm skipped: " + r.skipped,
            defaults.empty() ? "" : "; " + defaults);
  return r;
}

}  // namespace hcwarm::runtime
