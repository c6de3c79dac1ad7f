#include "cli/op_backends.hpp"

#include "backends/cuda/cuda_device.hpp"
#include "cli/cache_dir.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {
namespace {

// The JIT runtime and device of one call on a fast backend (cpu | cuda). The
// runtime outlives the device, as its CUDA module loader was made for it.
class OpDevice {
 public:
  OpDevice(const CliContext& ctx, const std::string& backend, const std::string& cache_dir)
      : rt_(std::make_unique<jit::JitRuntime>(jit_options(ctx, cache_dir))) {
    if (backend == "cuda") {
      auto cd = std::make_unique<cuda::CudaDevice>(0, ctx.env);
      rt_->set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cd));
      arch_ = cd->arch();
      dev_ = std::move(cd);
    } else {
      dev_ = std::make_unique<CpuDevice>();
    }
  }
  Device& device() { return *dev_; }
  jit::JitRuntime& jit() { return *rt_; }
  const std::string& cuda_arch() const { return arch_; }

  // hc_pre on it: each call runs the specialized kernels it asked for (no tiering).
  std::unique_ptr<mhc::HcPreOp> hc_pre(const CliContext& ctx, const std::string& backend,
                                       const model::ModelConfig& model, const model::ServerArgs& server) {
    auto op = std::make_unique<mhc::HcPreOp>(mhc::parse_backend(backend), model.mhc_dims(), model.mhc_constants(),
                                             server.num_sms, rt_.get(), *dev_);
    op->set_cuda_one_pass(ctx.env.mhc_one_pass);
    op->set_tiered(false);
    return op;
  }

 private:
  std::unique_ptr<jit::JitRuntime> rt_;
  std::unique_ptr<Device> dev_;
  std::string arch_;
};

}  // namespace

mhc::HcPreResult run_op_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                const model::ServerArgs& server, const HostTensor<bf16>& residual,
                                const HostTensor<float>& fn, const HostTensor<float>& scale,
                                const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                const std::string& cache_dir) {
  const bool embed = residual.rank() == 2;
  if (backend == "reference") {
    return embed ? mhc::hc_pre_embed_reference(residual, model.hc_mult, fn, scale, base, norm_weight,
                                               model.mhc_constants())
                 : mhc::hc_pre_reference(residual, fn, scale, base, norm_weight, model.mhc_constants());
  }
  OpDevice d(ctx, backend, cache_dir);
  const auto op = d.hc_pre(ctx, backend, model, server);
  return embed ? mhc::run_hc_pre_embed_host(*op, d.device(), residual, fn, scale, base, norm_weight)
               : mhc::run_hc_pre_host(*op, d.device(), residual, fn, scale, base, norm_weight);
}

mhc::HcPostPreResult run_post_pre_backend(const CliContext& ctx, const std::string& backend,
                                          const model::ModelConfig& model, const model::ServerArgs& server,
                                          const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                                          const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                                          const HostTensor<float>& fn, const HostTensor<float>& scale,
                                          const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                          const std::string& cache_dir) {
  if (backend == "reference") {
    return mhc::hc_post_pre_reference(x, residual, prev_post, prev_comb, fn, scale, base, norm_weight,
                                      model.mhc_constants());
  }
  OpDevice d(ctx, backend, cache_dir);
  const auto op = d.hc_pre(ctx, backend, model, server);
  return mhc::run_hc_post_pre_host(*op, d.device(), x, residual, prev_post, prev_comb, fn, scale, base, norm_weight);
}

HostTensor<bf16> run_head_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                  const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                                  const HostTensor<float>& scale, const HostTensor<float>& base,
                                  const std::string& cache_dir) {
  if (backend == "reference") return mhc::hc_head_reference(residual, fn, scale, base, model.mhc_constants());
  OpDevice d(ctx, backend, cache_dir);
  // The CPU head runs on the calling thread (no pool): one call.
  mhc::HcHeadOp op(model.mhc_dims(), model.mhc_constants(), d.device(), &d.jit(), d.cuda_arch(), nullptr);
  op.set_cuda_one_pass(ctx.env.mhc_one_pass);
  return mhc::run_hc_head_host(op, d.device(), residual, fn, scale, base);
}

}  // namespace hcwarm::cli
