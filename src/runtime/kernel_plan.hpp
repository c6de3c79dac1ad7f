#pragma once
// Which JIT keys a model runner of a given configuration will ask for, family
// by family, each from its own dispatch code. The runner's start-up warmup
// builds them; `hcwarm cache build` builds the same list ahead of time on a
// machine without a GPU. One list, so the two can never disagree.
#include <string>

#include "core/env_config.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/model_config.hpp"
#include "model/server_args.hpp"
#include "runtime/kernel_registry.hpp"

namespace hcwarm::runtime {

struct KernelPlanInput {
  model::ModelConfig model;
  model::ServerArgs server;
  EnvConfig env;
  mhc::Backend backend = mhc::Backend::Cpu;
  mhc::Variant variant = mhc::Variant::Specialized;
  mhc::CudaKernelOptions cuda;       // how CUDA kernels are built; cuda.arch = the GPU's
  int mlp_width = 256;               // the shipped SwiGLU sublayer's width
  // The mHC prewarm families follow the model hook's conditions (model::mhc_hook_skip_reason,
  // upstream's: the runner and `cache build`); false: the library prewarm's
  // (model::mhc_prewarm_skip_reason, no attention condition: runtime::OpContext).
  bool model_hook_conditions = true;
};

// Families: "mhc_pre", "mhc_pre_embed" (the first layer's hc_pre from the
// embedding) and "mhc_post_pre" (the fused sublayer boundary, input=post), part
// of the mHC prewarm: planned only when mhc_prewarm_skipped(in) is empty;
// "mhc_head", "mhc_post" and "swiglu_mlp" (CUDA only).
KernelRegistry make_kernel_registry(const KernelPlanInput& in);

// Why the plan leaves the mHC prewarm families out (empty: it plans them), by
// in.model_hook_conditions.
std::string mhc_prewarm_skipped(const KernelPlanInput& in);

}  // namespace hcwarm::runtime
