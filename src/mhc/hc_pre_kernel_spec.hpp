#pragma once
// hc_pre's JIT keys: the spec (key and source) a launch plan compiles, and the
// device-free functions warmup and `hcwarm cache build` walk to list them.
#include <cstdint>
#include <vector>

#include "jit/kernel_spec.hpp"
#include "mhc/hc_pre_launch_plan.hpp"
#include "mhc/hc_pre_names.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

// The spec of a plan: what HcPreOp binds for it. The key is written from the
// plan: CPU specs carry num_splits=S; CUDA kernels read the split count at run
// time and are specialized per split class (cuda::cuda_split_class), so their
// specs carry splits=<class> ("1", "2", "3-4", "5-21", "22+") and the buckets
// of a class share one key; a one-pass plan adds one_pass=1. Input Embed / Post
// adds input=embed / input=post. Reference plans have no kernels (InvalidArgument).
jit::KernelSpec hc_pre_kernel_spec(const HcPreLaunchPlan& plan);

// The JIT spec of one split count, with no op and no device: what HcPreOp::run
// asks for, and what `hcwarm cache build` compiles on a machine without a GPU.
// num_splits is the count the kernels run with (a Kernel-count plan).
jit::KernelSpec hc_pre_kernel_spec(Backend backend, MhcDims dims, int num_splits, bool fused_norm,
                                   const CudaKernelOptions& cuda = {}, HcPreInput input = HcPreInput::Residual);
// The split count the kernels of a bucket of `num_splits` splits run with
// (plan_hc_pre_launch's kernel_splits): 1 where the plan takes the one-pass
// kernel, else num_splits.
int hc_pre_kernel_splits(Backend backend, MhcDims dims, int num_splits, const CudaKernelOptions& cuda,
                         HcPreInput input = HcPreInput::Residual);
// A split count an hc_pre spec serves: its num_splits, or its split class's smallest.
int hc_pre_spec_num_splits(const jit::KernelSpec& spec);
// Every spec hc_pre can ask for over T in [1, max_num_tokens], each once, in
// bucket order: one per split bucket on the CPU, one per split class on CUDA
// (with input Post, of the token counts the boundary fuses at: hc_post_pre.hpp).
std::vector<jit::KernelSpec> hc_pre_planned_specs(Backend backend, MhcDims dims, int num_sms, int64_t max_num_tokens,
                                                  bool fused_norm, const CudaKernelOptions& cuda = {},
                                                  HcPreInput input = HcPreInput::Residual);

}  // namespace hcwarm::mhc
