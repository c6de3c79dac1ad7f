#include "cli/op_backends.hpp"

namespace hcwarm::cli {

std::string default_op_backend() { return "reference"; }

mhc::HcPreResult run_op_backend(const CliContext&, const std::string& backend, const model::ModelConfig& model,
                                const model::ServerArgs&, const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                                const HostTensor<float>& scale, const HostTensor<float>& base,
                                const HostTensor<bf16>* norm_weight, const std::string&) {
  HCWARM_CHECK_ARG(backend == "reference" || backend == "cpu" || backend == "cuda",
                   "--backend {:?} is not one of reference, cpu, cuda", backend);
  HCWARM_CHECK_ARG(backend == "reference", "--backend {} is not built yet", backend);
  return mhc::hc_pre_reference(residual, fn, scale, base, norm_weight, model.mhc_constants());
}

}  // namespace hcwarm::cli
