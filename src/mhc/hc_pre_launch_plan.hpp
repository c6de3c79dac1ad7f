#pragma once
// How one hc_pre launch runs, decided once. plan_hc_pre_launch() is the only
// place that chooses between the one-pass kernel and the split-K pair, and the
// only place that derives the split count the kernels run with, their block
// shapes and the workspace; the kernel key and source (hc_pre_kernel_spec.hpp),
// the op's kernel cache and the backends read the plan and decide nothing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mhc/hc_pre_names.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

// How the CUDA specialized kernels are built: part of every CUDA key.
struct CudaKernelOptions {
  std::string arch = "sm_90a";      // the device's, e.g. sm_90a on Hopper
  bool one_pass = true;             // allow the one-pass kernel where the plan's rule admits it
  bool fast_finish = true;          // Sinkhorn with branch-free reciprocals (not IEEE division)
  int num_sms = 0;                  // the device's (or the plan's) SMs: the one-pass kernel needs 128; 0: no limit
  // The kernels' portable forms (jit::cuda_portable_target: below sm_90, or
  // HCWARM_CUDA_PORTABLE): no one-pass kernel, the cluster-free head, plain launches.
  bool portable = false;
  // Run the one-wave pair where the plan's rule admits it (HCWARM_MHC_ONE_WAVE); not part
  // of any key: the kernels that carry it carry it either way.
  bool one_wave = true;
};
// The options of a target: portable where forced or where the arch is below sm_90.
CudaKernelOptions cuda_kernel_options(std::string arch, bool one_pass, bool force_portable);

enum class HcPreKernelForm {
  SplitKPair,  // the partial kernel over num_parts K-parts, then the finish (every backend)
  OnePass,     // CUDA: partial and finish in one cooperative launch that reads the residual once
};
const char* to_string(HcPreKernelForm form);  // "split-k pair" | "one-pass"

// What num_splits of a request is.
enum class HcPreSplitsAre {
  Bucket,  // the split policy's count for the call's bucket: the plan may serve it with the one-pass kernel
  Kernel,  // the count the kernels run with (an explicit count, a key's): one-pass only where it is 1
};

struct HcPreLaunchRequest {
  Backend backend = Backend::Cuda;
  Variant variant = Variant::Specialized;
  MhcDims dims;
  CudaKernelOptions cuda;  // read on Cuda only
  HcPreInput input = HcPreInput::Residual;
  bool fused_norm = false;
  int num_splits = 1;
  HcPreSplitsAre splits_are = HcPreSplitsAre::Bucket;
  int64_t num_tokens = 0;  // 0: a plan for a bucket (its key), with no workspace
};

struct HcPreLaunchPlan {
  // The call, as requested.
  Backend backend = Backend::Cuda;
  Variant variant = Variant::Specialized;  // JIT specializations, or the library's generic kernels
  MhcDims dims;
  HcPreInput input = HcPreInput::Residual;
  int input_code = 0;  // the kernels' name of `input` (hcwarm_mhc::kInput*)
  bool fused_norm = false;
  int64_t num_tokens = 0;
  std::string arch;          // Cuda: the target the kernels are compiled for
  bool fast_finish = false;  // Cuda: branch-free reciprocals in the finish
  int num_sms = 0;           // Cuda: the SMs it was planned for (CudaKernelOptions::num_sms)
  // The decision.
  int bucket_splits = 1;  // the request's num_splits
  HcPreKernelForm form = HcPreKernelForm::SplitKPair;
  int kernel_splits = 1;  // what the kernels run with (params.num_splits): 1 with the one-pass kernel
  int split_class = 1;    // the unit of specialization: Cuda, cuda_split_class(kernel_splits); Cpu, kernel_splits
  // What the launch needs.
  int split_parts = 1;            // K-parts of the split-K pair's partial stage (params.num_parts; cuda_embed_parts, cuda_residual_parts)
  int partial_warps = 0;          // Cuda: the partial kernel's block, 16 tokens a warp
  unsigned one_pass_threads = 0;  // OnePass: its block (the launch bounds of its source)
  // Cuda, input Embed: fn folded over the streams once, by the fold kernel, into the
  // workspace at fold_offset (hcwarm_mhc::cuda_embed_folds), not in every partial block.
  bool fold_fn = false;
  size_t fold_offset = 0;
  // Cuda, residual streams in hidden 4096's classes 5 and 22 (hcwarm_mhc::cuda_one_wave_kernels):
  // the specialization carries the one-wave pair's kernels beside the class's (the generic
  // fatbin has them for every class). one_wave: this call runs them (not in the portable forms,
  // cc 9 or 10 targets, 129-512 tokens: hcwarm_mhc::cuda_one_wave) on one_wave_parts parts;
  // kernels without them run the pair on split_parts.
  bool one_wave_kernels = false;
  bool one_wave = false;
  int one_wave_parts = 0;
  // Cuda, residual streams: the partial kCudaDeepPartialStages residual chunks deep. The
  // specialization carries it where it carries the one-wave pair and in hidden 7168's class 22
  // (hcwarm_mhc::cuda_deep_partial_kernels; the generic fatbin has it for every class).
  // deep_partial: this call runs it, in the one-wave pair or with the class's parts and finish
  // (hcwarm_mhc::cuda_deep_partial: hidden 7168 up to 128 tokens; not in the portable forms,
  // cc 9 or 10 targets); kernels without it run the class's partial.
  bool deep_partial_kernels = false;
  bool deep_partial = false;
  // Scratch for num_tokens: the split pair's partials (then the folded fn) and, with
  // the one-pass kernel, its counters and ring (a device too busy to host its
  // cooperative grid runs the pair instead, on the same split count).
  size_t workspace_bytes = 0;

  bool one_pass() const { return form == HcPreKernelForm::OnePass; }
};

// The plan of one launch. The rule (docs/BENCHMARKS.md, "The one-pass kernel
// for the larger buckets"): the one-pass kernel runs on Cuda, with the option
// on, for residual input, where the target is sm_90 or newer, the kernels are
// not in their portable forms (CudaKernelOptions::portable) and the shape is
// hc 4 with hidden a multiple of 1024 up to 7168 (cuda::one_pass_supported),
// in the buckets of at most cuda::one_pass_max_splits(hidden) splits (a
// Kernel-count request: where it is 1). Everything else runs the split-K pair
// on the requested count; with the embedding, on fewer, wider parts
// (hcwarm_mhc::cuda_embed_parts), fn folded once where tokens are plentiful
// (hcwarm_mhc::cuda_embed_folds); residual streams on twice the parts where the
// class's grid is coarse (hcwarm_mhc::cuda_residual_parts, up to 128 tokens on 132
// SMs); at hidden 4096 from 129 to 512 tokens, the residual pair in its one-wave
// shape (hcwarm_mhc::cuda_one_wave, the option on, on sm_90 or sm_100-class
// targets, whose SMs hold two of its partial blocks); at hidden 7168 up to 128
// tokens, the deep partial on the same targets (hcwarm_mhc::cuda_deep_partial).
// num_splits < 1: InvalidArgument.
HcPreLaunchPlan plan_hc_pre_launch(const HcPreLaunchRequest& request);

}  // namespace hcwarm::mhc
