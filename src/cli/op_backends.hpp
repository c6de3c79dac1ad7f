#pragma once
// Runs hc_pre on host tensors with a named backend, for `hcwarm op` and
// `hcwarm bench`. The reference backend is the double-precision oracle.
#include <string>

#include "cli/commands.hpp"
#include "mhc/reference.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::cli {

mhc::HcPreResult run_op_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                const model::ServerArgs& server, const HostTensor<bf16>& residual,
                                const HostTensor<float>& fn, const HostTensor<float>& scale,
                                const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                const std::string& cache_dir);

}  // namespace hcwarm::cli
