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

std::string mhc_head_cuda_source(int hc, int hidden) {
  const char* bad = head_shape_unsupported(hc, hidden);
  HCWARM_CHECK_ARG(bad == nullptr, "bad mhc_head specialization (hc {}, hidden {}): {}", hc, hidden, bad ? bad : "");
  return fmt::format(
      "// mhc_head CUDA: hc={0} hidden={1}, cluster kernel threads={2} cluster={3}, rows kernel threads={4}\n"
      "#include \"cuda/mhc_head.cuh\"\n"
      "extern \"C\" __global__ void __cluster_dims__({3}, 1, 1) __launch_bounds__({2}) {5}(hcwarm_mhc_head_params p) {{\n"
      "  hcwarm_head::mhc_head_cluster<{0}, {1}>(p);\n"
      "}}\n"
      "extern \"C\" __global__ void __launch_bounds__({4}) {6}(hcwarm_mhc_head_params p) {{\n"
      "  hcwarm_head::mhc_head_rows<{0}, {1}, {4}, {7}>(p);\n"
      "}}\n",
      hc, hidden, head_threads(hidden), head_cluster(hidden), HCWARM_MHC_HEAD_ROWS_THREADS, kCudaHeadSymbol,
      kCudaHeadRowsSymbol, HCWARM_MHC_HEAD_ROWS_TOKENS);
}

void CudaHcHeadBackend::bind(std::shared_ptr<const jit::LoadedModule> module) {
  cluster_ = static_cast<CUfunction>(module->function(kCudaHeadSymbol));
  rows_ = static_cast<CUfunction>(module->function(kCudaHeadRowsSymbol));
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
  HCWARM_ASSERT(cluster_ != nullptr && rows_ != nullptr, "hc_head (cuda): launched before its kernel was bound");
  if (p.num_tokens <= 0) return;
  const ScopedContext scoped(device_);
  hcwarm_mhc_head_params params = p;
  void* args[] = {&params};
  const CudaDriver& d = device_.driver();
  const long long tiles = (p.num_tokens + HCWARM_MHC_HEAD_TOKENS - 1) / HCWARM_MHC_HEAD_TOKENS;
  const long long cluster = head_cluster(hidden_);
  if (tiles * cluster <= static_cast<long long>(HCWARM_MHC_HEAD_CLUSTER_BLOCKS_PER_SM) * device_.num_sms()) {
    HCWARM_CHECK_CU(d, d.cuLaunchKernel(cluster_, static_cast<unsigned>(cluster), static_cast<unsigned>(tiles), 1,
                                        head_threads(hidden_), 1, 1, 0, stream_of(launch), args, nullptr));
    return;
  }
  const auto blocks = static_cast<unsigned>((p.num_tokens + HCWARM_MHC_HEAD_ROWS_TOKENS - 1) / HCWARM_MHC_HEAD_ROWS_TOKENS);
  HCWARM_CHECK_CU(d, d.cuLaunchKernel(rows_, blocks, 1, 1, HCWARM_MHC_HEAD_ROWS_THREADS, 1, 1, 0, stream_of(launch), args,
                                      nullptr));
}

}  // namespace hcwarm::cuda
