#include "backends/cuda/hc_head_cuda.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "core/error.hpp"

namespace hcwarm::cuda {

std::string mhc_head_cuda_source(int hc, int hidden) {
  HCWARM_CHECK_ARG(hc >= 1 && hidden >= 1, "bad mhc_head specialization (hc {}, hidden {})", hc, hidden);
  return fmt::format(
      "// mhc_head CUDA: hc={0} hidden={1} threads={2} tokens={3}\n"
      "#include \"cuda/mhc_head.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__({2}) {4}(hcwarm_mhc_head_params p) {{\n"
      "  hcwarm_head::mhc_head<{0}, {1}, {2}, {3}>(p);\n"
      "}}\n",
      hc, hidden, kCudaHeadThreads, kCudaHeadTokens, kCudaHeadSymbol);
}

void CudaHcHeadBackend::bind(std::shared_ptr<const jit::LoadedModule> module) {
  fn_ = static_cast<CUfunction>(module->function(kCudaHeadSymbol));
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
  HCWARM_ASSERT(fn_ != nullptr, "hc_head (cuda): launched before its kernel was bound");
  const ScopedContext scoped(device_);
  hcwarm_mhc_head_params params = p;
  void* args[] = {&params};
  const unsigned blocks = static_cast<unsigned>((p.num_tokens + kCudaHeadTokens - 1) / kCudaHeadTokens);
  HCWARM_CHECK_CU(device_.driver(), device_.driver().cuLaunchKernel(fn_, blocks, 1, 1, kCudaHeadThreads, 1, 1, 0,
                                                                    stream_of(launch), args, nullptr));
}

}  // namespace hcwarm::cuda
