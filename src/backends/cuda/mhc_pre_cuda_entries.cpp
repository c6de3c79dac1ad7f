// The names of the mhc_pre kernels (jit/kernel_entry.hpp): written once here,
// for the JIT source (mhc_pre_cuda_source.cpp, hc_head_cuda.cpp), the lookups
// and the generic fatbin's explicit instantiations (mhc_pre_generic.cu).
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"

namespace hcwarm::cuda {

namespace {
// The parameter lists as mangled in namespace hcwarm_kernels::cuda.
constexpr const char* kPreParams = "21hcwarm_mhc_pre_params";                          // (hcwarm_mhc_pre_params)
constexpr const char* kOnePassParams = "21hcwarm_mhc_pre_params17hcwarm_tensor_map";  // (params, tensor map)

jit::KernelEntry pre_entry(int part, const char* name, const std::vector<jit::KernelTemplateArg>& args,
                           const char* params) {
  return jit::kernel_entry(part, {"hcwarm_kernels", "cuda"}, name, args, params);
}

void check_input(int input) {
  HCWARM_CHECK_ARG(input == hcwarm_mhc::kInputResidual || input == hcwarm_mhc::kInputEmbed ||
                       input == hcwarm_mhc::kInputPost,
                   "mhc_pre: input {} is not hcwarm_mhc::kInputResidual, kInputEmbed or kInputPost", input);
}
}  // namespace

jit::KernelEntry partial_entry(int part, int split_class, int hc, int hidden, int input, int stages, int threads,
                               int min_blocks) {
  return pre_entry(part, "mhc_pre_partial_kernel", {split_class, hc, hidden, input, stages, threads, min_blocks},
                   kPreParams);
}

jit::KernelEntry finish_entry(int part, int split_class, int hc, int hidden, bool fused_norm, bool fast, int input,
                              bool streams, int min_blocks) {
  return pre_entry(part, "mhc_pre_finish_kernel", {split_class, hc, hidden, fused_norm, fast, input, streams, min_blocks},
                   kPreParams);
}

jit::KernelEntry fold_entry(int part, int hc, int hidden) {
  return pre_entry(part, "mhc_pre_fold_kernel", {hc, hidden}, kPreParams);
}

jit::KernelEntry one_pass_entry(int part, int hc, int hidden, bool fused_norm, bool fast, bool head, int threads) {
  return pre_entry(part, "mhc_pre_one_pass_kernel", {hc, hidden, fused_norm, fast, head, threads}, kOnePassParams);
}

MhcPreEntries mhc_pre_entries(int split_class, int hc, int hidden, bool fused_norm, bool one_pass, bool fast_finish,
                              int input, int partial_warps, int one_pass_threads, bool deep_partial, bool one_wave) {
  check_input(input);
  HCWARM_CHECK_ARG(!one_wave || hcwarm_mhc::cuda_one_wave_kernels(split_class, hidden, input),
                   "mhc_pre: the one-wave pair is hidden {}'s classes 5-21 and 22+ on residual streams, not class {} "
                   "at hidden {} with input {}",
                   hcwarm_mhc::kCudaOneWaveHidden, split_class, hidden, input);
  HCWARM_CHECK_ARG(!deep_partial || hcwarm_mhc::cuda_deep_partial_kernels(split_class, hidden, input),
                   "mhc_pre: the deep partial is the one-wave pair's and hidden {}'s class 22+ on residual streams, "
                   "not class {} at hidden {} with input {}",
                   hcwarm_mhc::kCudaDeepPartialHidden, split_class, hidden, input);
  HCWARM_CHECK_ARG(deep_partial || !one_wave, "mhc_pre: the one-wave pair's finish comes with its deep partial");
  MhcPreEntries e;
  const bool streams = hcwarm_mhc::cuda_finish_streams(split_class);
  // The partial kernel: 8 warps run 2 blocks per SM (128 registers), 4 warps 3.
  e.partial = partial_entry(0, split_class, hc, hidden, input, 2, 32 * partial_warps, partial_warps == 8 ? 2 : 3);
  // The finish: 8 blocks per SM where it streams the residual (64 registers), else 3.
  e.finish = finish_entry(1, split_class, hc, hidden, fused_norm, fast_finish, input, streams, streams ? 8 : 3);
  if (one_pass) e.one_pass = one_pass_entry(2, hc, hidden, fused_norm, fast_finish, false, one_pass_threads);
  // The embedding's fn fold, which the launch runs where the plan folds (HcPreLaunchPlan::fold_fn).
  if (input == hcwarm_mhc::kInputEmbed) e.fold = fold_entry(2, hc, hidden);
  // The deep partial (hcwarm_mhc::cuda_deep_partial_kernels), and the one-wave pair's streaming finish.
  if (deep_partial) {
    e.deep_partial = partial_entry(2, split_class, hc, hidden, input, hcwarm_mhc::kCudaDeepPartialStages,
                                   32 * partial_warps, partial_warps == 8 ? 2 : 3);
  }
  if (one_wave) e.one_wave_finish = finish_entry(3, split_class, hc, hidden, fused_norm, fast_finish, input, true, 8);
  return e;
}

// The generic fatbin's kernels: class 0 and hidden 0 (both from the params), hc 4, 3 blocks per SM;
// the streaming finish of the classes up to 4 splits 8.
jit::KernelEntry generic_partial_entry(int input) {
  check_input(input);
  return partial_entry(0, 0, 4, 0, input, 2, hcwarm_mhc::kCudaThreads, 3);
}

jit::KernelEntry generic_finish_entry(int input, bool fused_norm, bool fast, bool streaming) {
  check_input(input);
  HCWARM_CHECK_ARG(!streaming || input != hcwarm_mhc::kInputPost,
                   "mhc_pre: the generic streaming finish reads residual streams or the embedding, not input post");
  if (streaming) return finish_entry(0, hcwarm_mhc::kCudaAnyStreamingClass, 4, 0, fused_norm, fast, input, true, 8);
  return finish_entry(0, 0, 4, 0, fused_norm, fast, input, false, 3);
}

jit::KernelEntry generic_fold_entry() { return fold_entry(0, 4, 0); }

jit::KernelEntry generic_deep_partial_entry() {
  return partial_entry(0, 0, 4, 0, hcwarm_mhc::kInputResidual, hcwarm_mhc::kCudaDeepPartialStages, hcwarm_mhc::kCudaThreads, 3);
}

jit::KernelEntry generic_one_wave_finish_entry(bool fused_norm, bool fast) {
  return finish_entry(0, 0, 4, 0, fused_norm, fast, hcwarm_mhc::kInputResidual, true, 8);
}

jit::KernelEntry generic_one_pass_entry(bool fused_norm, bool fast) {
  return one_pass_entry(0, 4, 0, fused_norm, fast, false, hcwarm_mhc::one_pass_threads(hcwarm_mhc::kOnePassMaxHidden));
}

}  // namespace hcwarm::cuda
