#pragma once
// The stream an op call launches on, shared by the CUDA backends: the caller's
// (LaunchContext::stream) when given, else the device's own.
#include "backends/cuda/cuda_device.hpp"
#include "core/launch_context.hpp"

namespace hcwarm::cuda {

inline CUstream launch_stream(const CudaDevice& device, const LaunchContext& launch) {
  return launch.stream ? static_cast<CUstream>(*launch.stream) : device.stream();
}

// Whether that stream is being captured into a CUDA graph.
inline bool launch_capturing(const CudaDevice& device, const LaunchContext& launch) {
  return stream_capturing(device.driver(), launch_stream(device, launch));
}

}  // namespace hcwarm::cuda
