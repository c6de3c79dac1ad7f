#include "cli/op_backends.hpp"

#include "backends/cuda/cuda_device.hpp"
#include "cli/cache_dir.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::cli {

mhc::HcPreResult run_op_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                const model::ServerArgs& server, const HostTensor<bf16>& residual,
                                const HostTensor<float>& fn, const HostTensor<float>& scale,
                                const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                const std::string& cache_dir) {
  if (backend == "reference") return mhc::hc_pre_reference(residual, fn, scale, base, norm_weight, model.mhc_constants());
  // The fast path: the JIT-specialized kernel of this T's split bucket (cached like warmup's).
  jit::JitOptions jo = jit_options(ctx, cache_dir);
  jit::JitRuntime rt(jo);
  std::unique_ptr<Device> dev;
  if (backend == "cuda") {
    auto cd = std::make_unique<cuda::CudaDevice>(0, ctx.env.cuda_library);
    rt.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*cd));
    dev = std::move(cd);
  } else {
    dev = std::make_unique<CpuDevice>();
  }
  mhc::HcPreOp op(mhc::parse_backend(backend), model.mhc_dims(), model.mhc_constants(), server.num_sms, &rt, *dev);
  op.set_cuda_one_pass(ctx.env.mhc_one_pass);
  op.set_tiered(false);  // one call: it runs the specialized kernels it asked for
  return mhc::run_hc_pre_host(op, *dev, residual, fn, scale, base, norm_weight);
}

}  // namespace hcwarm::cli
