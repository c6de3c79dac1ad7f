// The generated translation unit of one CUDA mhc_pre specialization.
#include <fmt/format.h>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "mhc/hc_pre_launch_plan.hpp"

namespace hcwarm::cuda {

namespace {
// The source's comment word for the input kind.
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
  int partial_warps;     // the partial kernel's block
  int one_pass_threads;  // the one-pass kernel's block (one_pass only)
  bool deep_partial;     // the deep partial too (HcPreLaunchPlan::deep_partial_kernels)
  bool one_wave;         // and the one-wave pair's finish (HcPreLaunchPlan::one_wave_kernels)
};

MhcPreEntries entries_of(const SourceShape& s) {
  return mhc_pre_entries(s.split_class, s.hc, s.hidden, s.fused_norm, s.one_pass, s.fast_finish, s.input,
                         s.partial_warps, s.one_pass_threads, s.deep_partial, s.one_wave);
}

jit::KernelSource generate(const SourceShape& s) {
  HCWARM_CHECK_ARG(s.input == hcwarm_mhc::kInputResidual || s.input == hcwarm_mhc::kInputEmbed ||
                       s.input == hcwarm_mhc::kInputPost,
                   "mhc_pre: input {} is not hcwarm_mhc::kInputResidual, kInputEmbed or kInputPost", s.input);
  HCWARM_CHECK_ARG(!(s.input == hcwarm_mhc::kInputEmbed && s.one_pass),
                   "mhc_pre: the one-pass kernel reads residual streams, not the embedding");
  HCWARM_CHECK_ARG(!(s.input == hcwarm_mhc::kInputPost && s.one_pass),
                   "mhc_pre: the one-pass kernel reads residual streams, not the fused boundary's (input post)");
  HCWARM_CHECK_ARG(!s.one_pass || s.split_class == 1, "mhc_pre: the one-pass kernel is the num_splits 1 specialization");
  MhcPreEntries e = entries_of(s);
  // Each kernel is a part of its own (jit/cubin_set.hpp): NVRTC compiles them
  // in parallel, so a specialization takes about as long as its slowest kernel.
  // Each part includes only its own kernel's header: a part's NVRTC front end
  // parses that much; NVRTC instantiates the kernel from its entry's name.
  auto part = [](int i, const char* header) {
    return fmt::format("#if !defined(HCWARM_PART) || HCWARM_PART == {}\n#include \"cuda/{}\"\n#endif\n", i, header);
  };
  jit::KernelSource out;
  out.text = fmt::format("// mhc_pre CUDA: split class {} hc={} hidden={} norm={} fast_finish={} input={}\n",
                         cuda_split_class_name(s.split_class), s.hc, s.hidden, s.fused_norm, s.fast_finish,
                         input_word(s.input));
  out.text += part(0, "mhc_pre_partial.cuh") + part(1, "mhc_pre_finish.cuh");
  out.entries = {std::move(e.partial), std::move(e.finish)};
  out.parts = 2;
  if (e.one_pass) {
    out.text += part(2, "mhc_pre_one_pass.cuh");
    out.entries.push_back(std::move(*e.one_pass));
    out.parts = 3;
  }
  if (e.fold) {  // never beside the one-pass kernel (embedding input): part 2 is free
    out.text += part(2, "mhc_pre_fold.cuh");
    out.entries.push_back(std::move(*e.fold));
    out.parts = 3;
  }
  if (e.deep_partial) {  // residual streams only: part 2 is free
    out.text += part(2, "mhc_pre_partial.cuh");
    out.entries.push_back(std::move(*e.deep_partial));
    out.parts = 3;
  }
  if (e.one_wave_finish) {  // beside the deep partial
    out.text += part(3, "mhc_pre_finish.cuh");
    out.entries.push_back(std::move(*e.one_wave_finish));
    out.parts = 4;
  }
  return out;
}

SourceShape shape_of(const mhc::HcPreLaunchPlan& plan) {
  HCWARM_CHECK_ARG(plan.backend == mhc::Backend::Cuda, "mhc_pre: a {} plan has no CUDA source",
                   mhc::to_string(plan.backend));
  return {plan.split_class, plan.dims.hc_mult, static_cast<int>(plan.dims.hidden), plan.fused_norm,
          plan.one_pass(), plan.fast_finish, plan.input_code, plan.partial_warps,
          static_cast<int>(plan.one_pass_threads), plan.deep_partial_kernels, plan.one_wave_kernels};
}

}  // namespace

jit::KernelSource mhc_pre_cuda_source(const mhc::HcPreLaunchPlan& plan) { return generate(shape_of(plan)); }

MhcPreEntries mhc_pre_entries(const mhc::HcPreLaunchPlan& plan) { return entries_of(shape_of(plan)); }

jit::KernelSource mhc_pre_cuda_source(int num_splits, int hc, int hidden, bool fused_norm, bool one_pass, bool fast_finish,
                                int input) {
  HCWARM_CHECK_ARG(num_splits >= 1 && hc >= 1 && hidden >= 1, "bad mhc_pre specialization ({}, {}, {})", num_splits,
                   hc, hidden);
  const int split_class = cuda_split_class(num_splits);
  return generate({split_class, hc, hidden, fused_norm, one_pass, fast_finish, input, cuda_partial_warps(split_class),
                   one_pass ? static_cast<int>(one_pass_threads(hidden)) : 0,
                   hcwarm_mhc::cuda_deep_partial_kernels(split_class, hidden, input),
                   hcwarm_mhc::cuda_one_wave_kernels(split_class, hidden, input)});
}

}  // namespace hcwarm::cuda
