#include "backends/cuda/hc_head_cuda.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "core/error.hpp"

namespace hcwarm::cuda {

unsigned head_threads(int hidden) { return static_cast<unsigned>(hcwarm_mhc::head_threads(hidden)); }
unsigned head_cluster(int hidden) { return static_cast<unsigned>(hcwarm_mhc::head_cluster(hidden)); }

const char* head_shape_unsupported(int hc, int hidden) {
  if (hc < 1 || hc > 8 || hidden < 8 || hidden % 8 != 0) return "hc must be in [1, 8] and hidden a positive multiple of 8";
  if (head_threads(hidden) > 1024) return "hidden is too large: 4 tokens x its slice of 16-byte vectors exceed 1024 threads";
  return nullptr;
}

int head_wide_tokens_per_thread(int hc, int hidden) { return hcwarm_mhc::head_wide_tpt(hc, hidden); }

bool head_has_one_pass(int hc, int hidden) { return one_pass_supported(hc, hidden, 9); }

int64_t head_one_pass_min_tokens(int /*hidden*/) {
  // The H200's crossover at both widths (docs/BENCHMARKS.md, "The rest of the family"): below,
  // the cluster kernel's grid still fits the SMs in about one wave and the
  // one-pass kernel's start-up (fn's fragments, the pipeline's fill) dominates;
  // from 512 tokens the cluster kernel's per-tile fn reloads and barriers cost more.
  return 512;
}

HeadEntries mhc_head_entries(int hc, int hidden, bool portable) {
  const char* bad = head_shape_unsupported(hc, hidden);
  HCWARM_CHECK_ARG(bad == nullptr, "bad mhc_head specialization (hc {}, hidden {}): {}", hc, hidden, bad ? bad : "");
  // The kernels' launch bounds (and the cluster kernel's cluster) come from hidden (hcwarm_mhc::head_*).
  const int threads = static_cast<int>(head_threads(hidden)), min_blocks = hcwarm_mhc::head_blocks_per_sm(hidden);
  auto kernel = [&](int tokens_per_thread) {
    if (portable) {
      return jit::kernel_entry(0, {"hcwarm_head"}, "mhc_head_portable_kernel",
                               {hc, hidden, tokens_per_thread, threads, min_blocks},
                               "22hcwarm_mhc_head_params");  // (hcwarm_mhc_head_params)
    }
    return jit::kernel_entry(0, {"hcwarm_head"}, "mhc_head_cluster_kernel",
                             {hc, hidden, tokens_per_thread, static_cast<int>(head_cluster(hidden)), threads,
                              min_blocks},
                             "22hcwarm_mhc_head_params");
  };
  HeadEntries e{kernel(1), kernel(head_wide_tokens_per_thread(hc, hidden)), std::nullopt};
  if (!portable && head_has_one_pass(hc, hidden)) {
    e.one_pass = one_pass_entry(1, hc, hidden, false, false, true, hcwarm_mhc::one_pass_threads(hidden));
  }
  return e;
}

jit::KernelSource mhc_head_cuda_source(int hc, int hidden, bool portable) {
  HeadEntries e = mhc_head_entries(hc, hidden, portable);
  // The narrow and the wide instantiation of the cluster (or portable) kernel
  // (1 and `wide` tokens per thread) and, where the shape allows it, the
  // one-pass kernel: two parts (jit/cubin_set.hpp), so that NVRTC compiles them in parallel.
  jit::KernelSource out;
  out.text = fmt::format(
      "// mhc_head CUDA: hc={} hidden={}, threads={} cluster={}, wide tokens per thread={}, one_pass={}\n", hc, hidden,
      head_threads(hidden), portable ? 1U : head_cluster(hidden), head_wide_tokens_per_thread(hc, hidden),
      e.one_pass ? 1 : 0);
  out.entries = {std::move(e.narrow), std::move(e.wide)};
  if (portable) {
    out.text += "#include \"cuda/mhc_head_portable.cuh\"\n";
    return out;
  }
  if (!e.one_pass) {
    out.text += "#include \"cuda/mhc_head.cuh\"\n";
    return out;
  }
  out.text += "#if !defined(HCWARM_PART) || HCWARM_PART == 0\n#include \"cuda/mhc_head.cuh\"\n#endif\n";
  out.text += "#if !defined(HCWARM_PART) || HCWARM_PART == 1\n#include \"cuda/mhc_pre_one_pass.cuh\"\n#endif\n";
  out.entries.push_back(std::move(*e.one_pass));
  out.parts = 2;
  return out;
}

void CudaHcHeadBackend::bind(std::shared_ptr<const jit::LoadedModule> module) {
  // The names the module's source instantiated (mhc_head_cuda_source writes them from the same function).
  const HeadEntries e = mhc_head_entries(hc_, hidden_, portable_);
  narrow_ = static_cast<CUfunction>(module->function(e.narrow.symbol));
  wide_ = static_cast<CUfunction>(module->function(e.wide.symbol));
  one_pass_ = {};
  if (e.one_pass && one_pass_possible()) {
    const CudaDriver& d = device_.driver();
    HCWARM_CHECK_CU(d, prepare_one_pass(d, static_cast<CUfunction>(module->function(e.one_pass->symbol)), hidden_,
                                        device_.num_sms(), device_.l2_bytes(), one_pass_));
  }
  module_ = std::move(module);
}

CUstream CudaHcHeadBackend::stream_of(const LaunchContext& launch) const {
  return launch.stream ? static_cast<CUstream>(*launch.stream) : device_.stream();
}

bool CudaHcHeadBackend::capturing(const LaunchContext& launch) const {
  return stream_capturing(device_.driver(), stream_of(launch));
}

bool CudaHcHeadBackend::one_pass_wanted(int64_t num_tokens) const {
  if (num_tokens < one_pass_min_tokens_) return false;
  return module_ ? one_pass_.f != nullptr : one_pass_possible();
}

bool CudaHcHeadBackend::one_pass_possible() const {
  return !portable_ && one_pass_supported(hc_, hidden_, device_.cc_major(), device_.num_sms());
}

size_t CudaHcHeadBackend::workspace_bytes(int64_t num_tokens) const {
  return num_tokens > 0 && one_pass_wanted(num_tokens) ? one_pass_workspace_bytes(num_tokens) : 0;
}

const char* CudaHcHeadBackend::unsupported_argument(const hcwarm_mhc_head_params& p) const {
  const std::pair<const char*, const void*> args[] = {
      {"residual", p.residual}, {"fn", p.fn}, {"y", p.y}, {"workspace", p.workspace}};
  for (const auto& [name, ptr] : args) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return name;
  }
  return nullptr;
}

void CudaHcHeadBackend::launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) {
  HCWARM_ASSERT(narrow_ != nullptr && wide_ != nullptr, "hc_head (cuda): launched before its kernel was bound");
  if (p.num_tokens <= 0) return;
  const ScopedContext scoped(device_);
  const CudaDriver& d = device_.driver();
  if (one_pass_wanted(p.num_tokens)) {
    HCWARM_ASSERT(p.workspace != nullptr && p.workspace_bytes >= one_pass_workspace_bytes(p.num_tokens),
                  "hc_head (cuda): the one-pass kernel's workspace is missing or short");
    // hc_pre's one-pass kernel in its head form reads these fields only (HEAD: no norm, post or comb).
    hcwarm_mhc_pre_params q{};
    q.num_tokens = p.num_tokens;
    q.residual = p.residual;
    q.fn = p.fn;
    q.scale = p.scale;
    q.base = p.base;
    q.y = p.y;
    q.partials = static_cast<float*>(p.workspace);
    q.num_splits = 1;
    q.hc_mult = p.hc_mult;
    q.hidden = p.hidden;
    q.hc_eps = p.hc_eps;
    q.rms_eps = p.rms_eps;
    q.input = hcwarm_mhc::kInputResidual;
    HCWARM_CHECK_CU(d, launch_one_pass(d, one_pass_, q, stream_of(launch)));
    return;
  }
  hcwarm_mhc_head_params params = p;
  void* args[] = {&params};
  const long long cluster = portable_ ? 1 : head_cluster(hidden_);  // the portable kernel: one block per tile
  // Narrow while its grid is at most one block per SM; wide beyond, where
  // blocks queue and each one's fn loads and barriers serve more tokens.
  long long tile = hcwarm_mhc::kHeadTokens;
  CUfunction f = narrow_;
  if ((p.num_tokens + tile - 1) / tile * cluster > device_.num_sms()) {
    tile *= head_wide_tokens_per_thread(hc_, hidden_);
    f = wide_;
  }
  const auto tiles = static_cast<unsigned>((p.num_tokens + tile - 1) / tile);
  HCWARM_CHECK_CU(d, d.cuLaunchKernel(f, static_cast<unsigned>(cluster), tiles, 1, head_threads(hidden_), 1, 1, 0,
                                      stream_of(launch), args, nullptr));
}

}  // namespace hcwarm::cuda
