#pragma once
// Runs the mHC ops on host tensors with a named backend, for `hcwarm op`. The
// reference backend is the double-precision oracle; cpu and cuda run the
// JIT-specialized kernels of each call's split bucket (cached like warmup's).
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "mhc/reference.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"

namespace hcwarm::cli {

// hc_pre; a (T, D) residual is the first layer's embedding (input Embed).
mhc::HcPreResult run_op_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                const model::ServerArgs& server, const HostTensor<bf16>& residual,
                                const HostTensor<float>& fn, const HostTensor<float>& scale,
                                const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                const std::string& cache_dir);

// The fused sublayer boundary (hc_pre input Post).
mhc::HcPostPreResult run_post_pre_backend(const CliContext& ctx, const std::string& backend,
                                          const model::ModelConfig& model, const model::ServerArgs& server,
                                          const HostTensor<bf16>& x, const HostTensor<bf16>& residual,
                                          const HostTensor<float>& prev_post, const HostTensor<float>& prev_comb,
                                          const HostTensor<float>& fn, const HostTensor<float>& scale,
                                          const HostTensor<float>& base, const HostTensor<bf16>* norm_weight,
                                          const std::string& cache_dir);

// The head: residual (T, hc, D) -> y (T, D).
HostTensor<bf16> run_head_backend(const CliContext& ctx, const std::string& backend, const model::ModelConfig& model,
                                  const HostTensor<bf16>& residual, const HostTensor<float>& fn,
                                  const HostTensor<float>& scale, const HostTensor<float>& base,
                                  const std::string& cache_dir);

}  // namespace hcwarm::cli
