// The generated translation unit of one CUDA mhc_pre specialization.
#include <fmt/format.h>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "mhc/hc_pre_launch_plan.hpp"

namespace hcwarm::cuda {

namespace {
// The kernels' INPUT template argument, and the source's comment word.
const char* input_name(int input) {
  return input == hcwarm_mhc::kInputEmbed  ? "hcwarm_mhc::kInputEmbed"
         : input == hcwarm_mhc::kInputPost ? "hcwarm_mhc::kInputPost"
                                          : "hcwarm_mhc::kInputResidual";
}
const char* input_word(int input) {
  return input == hcwarm_mhc::kInputEmbed ? "embed" : input == hcwarm_mhc::kInputPost ? "post" : "residual";
}
}  // namespace

int cuda_partial_warps(int num_splits) { return hcwarm_mhc::cuda_partial_warps(num_splits); }

int cuda_split_class(int num_splits) {
  HCWARM_CHECK_ARG(num_splits >= 1, "num_splits must be >= 1, got {}", num_splits);
  return hcwarm_mhc::cuda_split_class(num_splits);
}

std::string cuda_split_class_name(int split_class) {
  switch (split_class) {
    case 1: return "1";
    case 2: return "2";
    case 3: return "3-4";
    case 5: return "5-21";
    case 22: return "22+";
  }
  HCWARM_THROW(ErrorKind::InvalidArgument, "{} is not a CUDA split class (1, 2, 3, 5 or 22)", split_class);
}

namespace {

// Everything the text depends on. The kernels read the split count from the
// params: the text depends on its class only, so every bucket of a class has
// the same source (and key).
struct SourceShape {
  int split_class, hc, hidden;
  bool fused_norm, one_pass, fast_finish;
  int input;
  int partial_warps;          // the partial kernel's block
  unsigned one_pass_threads;  // the one-pass kernel's block (one_pass only)
};

jit::KernelSource generate(const SourceShape& s) {
  HCWARM_CHECK_ARG(s.input == hcwarm_mhc::kInputResidual || s.input == hcwarm_mhc::kInputEmbed ||
                       s.input == hcwarm_mhc::kInputPost,
                   "mhc_pre: input {} is not hcwarm_mhc::kInputResidual, kInputEmbed or kInputPost", s.input);
  HCWARM_CHECK_ARG(!(s.input == hcwarm_mhc::kInputEmbed && s.one_pass),
                   "mhc_pre: the one-pass kernel reads residual streams, not the embedding");
  HCWARM_CHECK_ARG(!(s.input == hcwarm_mhc::kInputPost && s.one_pass),
                   "mhc_pre: the one-pass kernel reads residual streams, not the fused boundary's (input post)");
  HCWARM_CHECK_ARG(!s.one_pass || s.split_class == 1, "mhc_pre: the one-pass kernel is the num_splits 1 specialization");
  // The partial kernel's block; 8 warps run 2 blocks per SM (128 registers), 4 warps 3.
  // The finish: 8 blocks per SM where it streams the residual (64 registers), else 3.
  const int warps = s.partial_warps;
  // Each kernel is a part of its own (jit/cubin_set.hpp): NVRTC compiles them
  // in parallel, so a specialization takes about as long as its slowest kernel.
  const int parts = s.one_pass ? 3 : 2;
  auto part = [](int i, const std::string& body) {
    return fmt::format("#if !defined(HCWARM_PART) || HCWARM_PART == {}\n{}#endif\n", i, body);
  };
  const std::string norm = s.fused_norm ? "true" : "false";
  const std::string fast = s.fast_finish ? "true" : "false";
  std::string src = fmt::format(
      "// mhc_pre CUDA: split class {} hc={} hidden={} norm={} fast_finish={} input={}\n",
      cuda_split_class_name(s.split_class), s.hc, s.hidden, norm, fast, input_word(s.input));
  // Each part includes only its own kernel's header: a part's NVRTC front end parses that much.
  src += part(0, fmt::format("#include \"cuda/mhc_pre_partial.cuh\"\n"
                             "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(hcwarm_mhc_pre_params p) {{\n"
                             "  hcwarm_kernels::cuda::mhc_pre_partial<{}, {}, {}, {}>(p);\n}}\n",
                             32 * warps, warps == 8 ? 2 : 3, kCudaPartialSymbol, s.split_class, s.hc, s.hidden,
                             input_name(s.input)));
  src += part(1, fmt::format("#include \"cuda/mhc_pre_finish.cuh\"\n"
                             "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(hcwarm_mhc_pre_params p) {{\n"
                             "  hcwarm_kernels::cuda::mhc_pre_finish<{}, {}, {}, {}, {}, {}>(p);\n}}\n",
                             hcwarm_mhc::kCudaThreads, hcwarm_mhc::cuda_finish_streams(s.split_class) ? 8 : 3,
                             kCudaFinishSymbol, s.split_class, s.hc, s.hidden, norm, fast, input_name(s.input)));
  if (s.one_pass) {
    // The one-pass block: the TMA warp, 4 mma warps, hidden / 1024 y warps, the comb and signal warps.
    src += part(2, fmt::format("#include \"cuda/mhc_pre_one_pass.cuh\"\n"
                               "extern \"C\" __global__ void __launch_bounds__({}, 1) {}(hcwarm_mhc_pre_params p, "
                               "const __grid_constant__ hcwarm_tensor_map tmap) {{\n"
                               "  hcwarm_kernels::cuda::mhc_pre_one_pass<{}, {}, {}, {}>(p, &tmap);\n}}\n",
                               s.one_pass_threads, kCudaOnePassSymbol, s.hc, s.hidden, norm, fast));
  }
  return {std::move(src), parts};
}

}  // namespace

jit::KernelSource mhc_pre_cuda_source(const mhc::HcPreLaunchPlan& plan) {
  HCWARM_CHECK_ARG(plan.backend == mhc::Backend::Cuda, "mhc_pre: a {} plan has no CUDA source",
                   mhc::to_string(plan.backend));
  return generate({plan.split_class, plan.dims.hc_mult, static_cast<int>(plan.dims.hidden), plan.fused_norm,
                   plan.one_pass(), plan.fast_finish, plan.input_code, plan.partial_warps, plan.one_pass_threads});
}

jit::KernelSource mhc_pre_cuda_source(int num_splits, int hc, int hidden, bool fused_norm, bool one_pass, bool fast_finish,
                                int input) {
  HCWARM_CHECK_ARG(num_splits >= 1 && hc >= 1 && hidden >= 1, "bad mhc_pre specialization ({}, {}, {})", num_splits,
                   hc, hidden);
  const int split_class = cuda_split_class(num_splits);
  return generate({split_class, hc, hidden, fused_norm, one_pass, fast_finish, input, cuda_partial_warps(split_class),
                   one_pass ? one_pass_threads(hidden) : 0u});
}

}  // namespace hcwarm::cuda
