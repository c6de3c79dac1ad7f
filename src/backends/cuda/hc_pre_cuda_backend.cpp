#include "backends/cuda/hc_pre_cuda_backend.hpp"

#include <algorithm>

#include "backends/cuda/launch_stream.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "mhc/hc_pre_launch_plan.hpp"

namespace hcwarm::cuda {
namespace {

struct CudaKernels final : backends::HcPreKernels {
  MhcPreCudaKernels cuda;
  // Generic modules: a partial and a finish per input kind (hcwarm_mhc::kInput*),
  // the launch takes those of p.input (and the streaming finish where the split
  // count streams and the kind has one); a specialization has one kind (cuda's)
  // and leaves these null.
  CUfunction partial_by_input[3] = {}, finish_by_input[3] = {}, streaming_finish_by_input[3] = {};
  bool by_input() const { return partial_by_input[0] != nullptr; }
};

struct ContextScope final : backends::HcPreBackend::Scope {
  explicit ContextScope(const CudaDevice& d) : scoped(d) {}
  ScopedContext scoped;
};

}  // namespace

CudaHcPreBackend::CudaHcPreBackend(CudaDevice& device, int hc_mult, int hidden, bool one_pass, bool fast_finish)
    : device_(device), hc_mult_(hc_mult), hidden_(hidden), one_pass_(one_pass), fast_finish_(fast_finish) {}

std::unique_ptr<backends::HcPreBackend::Scope> CudaHcPreBackend::enter() const {
  return std::make_unique<ContextScope>(device_);
}

std::unique_ptr<backends::HcPreKernels> CudaHcPreBackend::bind_split_pair(
    std::shared_ptr<const jit::LoadedModule> module, const jit::KernelEntry& partial, const jit::KernelEntry& finish,
    int partial_warps, const jit::KernelEntry* deep_partial, const jit::KernelEntry* one_wave_finish) {
  auto k = std::make_unique<CudaKernels>();
  k->cuda.partial = static_cast<CUfunction>(module->function(partial.symbol));
  k->cuda.finish = static_cast<CUfunction>(module->function(finish.symbol));
  if (deep_partial != nullptr) k->cuda.deep_partial = static_cast<CUfunction>(module->function(deep_partial->symbol));
  if (one_wave_finish != nullptr) {
    k->cuda.one_wave_finish = static_cast<CUfunction>(module->function(one_wave_finish->symbol));
  }
  k->cuda.partial_warps = partial_warps;
  k->cuda.pdl = !device_.portable();
  k->cuda.early_fn = device_.early_fn();
  HCWARM_CHECK_CU(device_.driver(), prepare_partial_smem(device_.driver(), k->cuda));
  k->module = std::move(module);
  return k;
}

std::unique_ptr<backends::HcPreKernels> CudaHcPreBackend::bind(std::shared_ptr<const jit::LoadedModule> module,
                                                               const mhc::HcPreLaunchPlan& plan) {
  // The names the plan's source instantiated (mhc_pre_cuda_source writes them from the same function).
  const MhcPreEntries e = mhc_pre_entries(plan);
  auto k = bind_split_pair(std::move(module), e.partial, e.finish, plan.partial_warps,
                           e.deep_partial ? &*e.deep_partial : nullptr,
                           e.one_wave_finish ? &*e.one_wave_finish : nullptr);
  if (e.fold) {
    static_cast<CudaKernels&>(*k).cuda.fold = static_cast<CUfunction>(k->module->function(e.fold->symbol.c_str()));
  }
  if (e.one_pass) {
    const auto f = static_cast<CUfunction>(k->module->function(e.one_pass->symbol.c_str()));
    auto& cuda = static_cast<CudaKernels&>(*k).cuda;
    HCWARM_CHECK_CU(device_.driver(),
                    prepare_one_pass(device_.driver(), f, hidden_, device_.num_sms(), device_.l2_bytes(), cuda.one_pass));
  }
  return k;
}

std::unique_ptr<backends::HcPreKernels> CudaHcPreBackend::bind(std::shared_ptr<const jit::LoadedModule> module,
                                                               const jit::KernelSpec& spec, int num_splits) {
  // The spec's own entries: the partial kernel is part 0, the finish part 1 (mhc_pre_cuda_source).
  const auto of_part = [&](int part) -> const jit::KernelEntry& {
    for (const auto& e : spec.entries) {
      if (e.part == part) return e;
    }
    HCWARM_THROW(ErrorKind::Internal, "mhc_pre: spec {} names no kernel in part {}", spec.describe(), part);
  };
  return bind_split_pair(std::move(module), of_part(0), of_part(1), cuda_partial_warps(num_splits));
}

std::unique_ptr<backends::HcPreKernels> CudaHcPreBackend::bind_generic(bool fused_norm) {
  const CudaDriver& d = device_.driver();
  if (!generic_module_) {
    const auto image = mhc_pre_generic_fatbin();
    if (image.empty()) {
      HCWARM_THROW(ErrorKind::Unavailable,
                   "this libhcwarm was built without nvcc: no generic CUDA kernels (use the specialized variant)");
    }
    generic_module_ = CudaModuleLoader(device_).load("mhc_pre_generic", image);
  }
  auto k = std::make_unique<CudaKernels>();
  k->module = generic_module_;
  k->cuda.pdl = !device_.portable();
  k->cuda.early_fn = device_.early_fn();
  k->cuda.generic = true;
  for (int input = 0; input < 3; ++input) {
    k->cuda.partial = static_cast<CUfunction>(k->module->function(generic_partial_entry(input).symbol));
    k->cuda.finish = static_cast<CUfunction>(
        k->module->function(generic_finish_entry(input, fused_norm, fast_finish_).symbol));
    HCWARM_CHECK_CU(d, prepare_partial_smem(d, k->cuda));
    k->partial_by_input[input] = k->cuda.partial;
    k->finish_by_input[input] = k->cuda.finish;
    if (input != hcwarm_mhc::kInputPost) {  // the fused boundary runs at decode sizes only
      k->streaming_finish_by_input[input] = static_cast<CUfunction>(
          k->module->function(generic_finish_entry(input, fused_norm, fast_finish_, true).symbol));
    }
  }
  k->cuda.fold = static_cast<CUfunction>(k->module->function(generic_fold_entry().symbol));
  // The deep partial and the one-wave pair's finish, for the plans that take them (residual
  // streams): the partial's deeper staging needs the larger shared memory too.
  k->cuda.deep_partial = static_cast<CUfunction>(k->module->function(generic_deep_partial_entry().symbol));
  k->cuda.one_wave_finish = static_cast<CUfunction>(
      k->module->function(generic_one_wave_finish_entry(fused_norm, fast_finish_).symbol));
  HCWARM_CHECK_CU(d, prepare_partial_smem(d, k->cuda));
  if (one_pass_) {
    const auto f = static_cast<CUfunction>(
        k->module->function(generic_one_pass_entry(fused_norm, fast_finish_).symbol));
    HCWARM_CHECK_CU(d, prepare_one_pass(d, f, hidden_, device_.num_sms(), device_.l2_bytes(), k->cuda.one_pass));
  }
  return k;
}

bool CudaHcPreBackend::has_generic() const { return hc_mult_ == 4 && !mhc_pre_generic_fatbin().empty(); }

size_t CudaHcPreBackend::workspace_bytes(int64_t num_tokens, int num_splits) const {
  if (num_tokens <= 0) return 0;
  // The most parts a plan of num_splits may run (hcwarm_mhc::cuda_residual_parts).
  size_t bytes = static_cast<size_t>(num_tokens) * hcwarm_mhc::cuda_max_parts(num_splits) * hcwarm_mhc::kPartialStride * sizeof(float);
  // Where this op's plans can take the one-pass kernel, a one-split call may run either path.
  if (one_pass_ && num_splits == 1) bytes = std::max(bytes, one_pass_workspace_bytes(num_tokens));
  return bytes;
}

const char* CudaHcPreBackend::unsupported_argument(const hcwarm_mhc_pre_params& p) const {
  return misaligned_argument(p);
}

bool CudaHcPreBackend::capturing(const LaunchContext& launch) const { return launch_capturing(device_, launch); }

void CudaHcPreBackend::launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p,
                              const mhc::HcPreLaunchPlan& plan, const LaunchContext& launch, int stages) {
  // stages other than 3 time the pair's kernels apart (benchmarks).
  // The folded fn goes after the partials in the workspace (the plan sized it). Kernels bound
  // from the plan or the generic fatbin carry the fold; the launcher refuses any without it.
  if (plan.fold_fn) p.fn_folded = reinterpret_cast<float*>(reinterpret_cast<char*>(p.partials) + plan.fold_offset);
  // Kernels without the deep partial or the one-wave pair's finish run the class's pair
  // (on all of the class's parts).
  const MhcPreCudaKernels& k = static_cast<const CudaKernels&>(kernels).cuda;
  const bool deep = plan.deep_partial && k.deep_partial != nullptr;
  const bool one_wave = deep && plan.one_wave && k.one_wave_finish != nullptr;
  const PairKernels pair = one_wave ? PairKernels::OneWave : deep ? PairKernels::DeepPartial : PairKernels::Class;
  launch_kernels(kernels, p, plan.one_pass() && stages == 3, pair, one_wave ? plan.one_wave_parts : plan.split_parts,
                 launch, stages);
}

void CudaHcPreBackend::launch(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p,
                              const LaunchContext& launch, int stages) {
  p.fn_folded = nullptr;  // no plan, no room set aside for it
  launch_kernels(kernels, p, false, PairKernels::Class, cuda_num_parts(p.num_splits), launch, stages);
}

void CudaHcPreBackend::launch_kernels(const backends::HcPreKernels& kernels, hcwarm_mhc_pre_params p, bool one_pass,
                                      PairKernels pair, int parts, const LaunchContext& launch, int stages) {
  const auto& bound = static_cast<const CudaKernels&>(kernels);
  MhcPreCudaKernels k = bound.cuda;
  if (bound.by_input()) {
    HCWARM_CHECK_ARG(p.input >= 0 && p.input < 3, "mhc_pre: input {} is not hcwarm_mhc::kInputResidual, kInputEmbed or kInputPost",
                     p.input);
    k.partial = bound.partial_by_input[p.input];
    const bool streams = hcwarm_mhc::cuda_finish_streams(hcwarm_mhc::cuda_split_class(p.num_splits));
    k.finish = streams && bound.streaming_finish_by_input[p.input] != nullptr ? bound.streaming_finish_by_input[p.input]
                                                                             : bound.finish_by_input[p.input];
  }
  // The kernels lack the one-pass entry where the device cannot host its grid: the pair, same split count.
  one_pass = one_pass && k.one_pass.f != nullptr;
  if (!one_pass) k.one_pass = {};
  p.num_parts = one_pass ? hcwarm_mhc::kOnePassParts : parts;
  p.fn_early = k.early_fn ? 1 : 0;
  HCWARM_CHECK_CU(device_.driver(), launch_mhc_pre_cuda(device_.driver(), k, p, launch_stream(device_, launch), stages,
                                                        pair));
}

}  // namespace hcwarm::cuda
