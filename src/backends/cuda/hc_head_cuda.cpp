#include "backends/cuda/hc_head_cuda.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "core/error.hpp"

namespace hcwarm::cuda {

unsigned head_threads(int hidden) { return static_cast<unsigned>(HCWARM_MHC_HEAD_THREADS(hidden)); }
unsigned head_cluster(int hidden) { return static_cast<unsigned>(HCWARM_MHC_HEAD_CLUSTER(hidden)); }

const char* head_shape_unsupported(int hc, int hidden) {
  if (hc < 1 || hc > 8 || hidden < 8 || hidden % 8 != 0) return "hc must be in [1, 8] and hidden a positive multiple of 8";
  if (head_threads(hidden) > 1024) return "hidden is too large: 4 tokens x its slice of 16-byte vectors exceed 1024 threads";
  return nullptr;
}

int head_wide_tokens_per_thread(int hc, int hidden) { return HCWARM_MHC_HEAD_WIDE_TPT(hc, hidden); }

std::string mhc_head_cuda_source(int hc, int hidden) {
  const char* bad = head_shape_unsupported(hc, hidden);
  HCWARM_CHECK_ARG(bad == nullptr, "bad mhc_head specialization (hc {}, hidden {}): {}", hc, hidden, bad ? bad : "");
  // The narrow and the wide instantiation of the one kernel (1 and `wide` tokens per thread).
  const int wide = head_wide_tokens_per_thread(hc, hidden);
  auto kernel = [&](const char* symbol, int tokens_per_thread) {
    return fmt::format(
        "extern \"C\" __global__ void __cluster_dims__({}, 1, 1) __launch_bounds__({}, {})\n"
        "{}(hcwarm_mhc_head_params p) {{\n  hcwarm_head::mhc_head_cluster<{}, {}, {}>(p);\n}}\n",
        head_cluster(hidden), head_threads(hidden), HCWARM_MHC_HEAD_BLOCKS_PER_SM(hidden), symbol, hc, hidden,
        tokens_per_thread);
  };
  return fmt::format("// mhc_head CUDA: hc={} hidden={}, threads={} cluster={}, wide tokens per thread={}\n"
                     "#include \"cuda/mhc_head.cuh\"\n",
                     hc, hidden, head_threads(hidden), head_cluster(hidden), wide) +
         kernel(kCudaHeadSymbol, 1) + kernel(kCudaHeadWideSymbol, wide);
}

void CudaHcHeadBackend::bind(std::shared_ptr<const jit::LoadedModule> module) {
  narrow_ = static_cast<CUfunction>(module->function(kCudaHeadSymbol));
  wide_ = static_cast<CUfunction>(module->function(kCudaHeadWideSymbol));
  module_ = std::move(module);
}

CUstream CudaHcHeadBackend::stream_of(const LaunchContext& launch) const {
  return launch.stream ? static_cast<CUstream>(*launch.stream) : device_.stream();
}

bool CudaHcHeadBackend::capturing(const LaunchContext& launch) const {
  return stream_capturing(device_.driver(), stream_of(launch));
}

const char* CudaHcHeadBackend::unsupported_argument(const hcwarm_mhc_head_params& p) const {
  const std::pair<const char*, const void*> args[] = {{"residual", p.residual}, {"fn", p.fn}, {"y", p.y}};
  for (const auto& [name, ptr] : args) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return name;
  }
  return nullptr;
}

void CudaHcHeadBackend::launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) {
  HCWARM_ASSERT(narrow_ != nullptr && wide_ != nullptr, "hc_head (cuda): launched before its kernel was bound");
  if (p.num_tokens <= 0) return;
  const ScopedContext scoped(device_);
  hcwarm_mhc_head_params params = p;
  void* args[] = {&params};
  const long long cluster = head_cluster(hidden_);
  // Narrow while its grid is at most one block per SM; wide beyond, where
  // blocks queue and each one's fn loads and barriers serve more tokens.
  long long tile = HCWARM_MHC_HEAD_TOKENS;
  CUfunction f = narrow_;
  if ((p.num_tokens + tile - 1) / tile * cluster > device_.num_sms()) {
    tile *= head_wide_tokens_per_thread(hc_, hidden_);
    f = wide_;
  }
  const auto tiles = static_cast<unsigned>((p.num_tokens + tile - 1) / tile);
  HCWARM_CHECK_CU(device_.driver(), device_.driver().cuLaunchKernel(f, static_cast<unsigned>(cluster), tiles, 1,
                                                                    head_threads(hidden_), 1, 1, 0, stream_of(launch),
                                                                    args, nullptr));
}

}  // namespace hcwarm::cuda
