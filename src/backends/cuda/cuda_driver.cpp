#include "backends/cuda/cuda_driver.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

#include <map>
#include <mutex>

namespace hcwarm::cuda {
namespace {

template <class F>
void bind(void* handle, F& fn, const char* name, const char* fallback = nullptr) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr && fallback != nullptr) sym = dlsym(handle, fallback);
  if (sym == nullptr) {
    HCWARM_THROW(ErrorKind::Unavailable, "the CUDA driver has no symbol {}", name);
  }
  fn = reinterpret_cast<F>(sym);
}
// An entry point newer drivers have: null where this one lacks it.
template <class F>
void bind_optional(void* handle, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
}

std::shared_ptr<CudaDriver> load(const std::string& path) {
  auto d = std::make_shared<CudaDriver>();
  d->path = path.empty() ? std::string("libcuda.so.1") : path;
  d->handle = dlopen(d->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (d->handle == nullptr) {
    const char* err = dlerror();
    HCWARM_THROW(ErrorKind::Unavailable, "cannot open the CUDA driver {}: {}", d->path, err ? err : "unknown error");
  }
  void* h = d->handle;
  bind(h, d->cuInit, "cuInit");
  bind(h, d->cuDriverGetVersion, "cuDriverGetVersion");
  bind(h, d->cuDeviceGetCount, "cuDeviceGetCount");
  bind(h, d->cuDeviceGet, "cuDeviceGet");
  bind(h, d->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(h, d->cuDeviceGetName, "cuDeviceGetName");
  bind_optional(h, d->cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  bind(h, d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(h, d->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  bind(h, d->cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(h, d->cuCtxGetCurrent, "cuCtxGetCurrent");
  bind(h, d->cuMemAlloc, "cuMemAlloc_v2");
  bind(h, d->cuMemFree, "cuMemFree_v2");
  bind(h, d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(h, d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(h, d->cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(h, d->cuMemsetD8, "cuMemsetD8_v2");
  bind(h, d->cuMemsetD8Async, "cuMemsetD8Async");
  bind(h, d->cuModuleLoadData, "cuModuleLoadData");
  bind(h, d->cuModuleUnload, "cuModuleUnload");
  bind(h, d->cuModuleGetFunction, "cuModuleGetFunction");
  bind(h, d->cuLaunchKernel, "cuLaunchKernel");
  bind_optional(h, d->cuLaunchKernelEx, "cuLaunchKernelEx");
  bind_optional(h, d->cuFuncSetAttribute, "cuFuncSetAttribute");
  bind_optional(h, d->cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  bind_optional(h, d->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  bind(h, d->cuStreamCreate, "cuStreamCreate");
  bind(h, d->cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  bind(h, d->cuStreamSynchronize, "cuStreamSynchronize");
  bind(h, d->cuStreamIsCapturing, "cuStreamIsCapturing");
  bind(h, d->cuStreamBeginCapture, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
  bind(h, d->cuStreamEndCapture, "cuStreamEndCapture");
  bind(h, d->cuGraphInstantiate, "cuGraphInstantiateWithFlags");
  bind(h, d->cuGraphLaunch, "cuGraphLaunch");
  bind(h, d->cuGraphExecDestroy, "cuGraphExecDestroy");
  bind(h, d->cuGraphDestroy, "cuGraphDestroy");
  bind(h, d->cuEventCreate, "cuEventCreate");
  bind(h, d->cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  bind(h, d->cuEventRecord, "cuEventRecord");
  bind(h, d->cuEventSynchronize, "cuEventSynchronize");
  bind(h, d->cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  bind(h, d->cuGetErrorName, "cuGetErrorName");
  bind(h, d->cuGetErrorString, "cuGetErrorString");
  const CUresult rc = d->cuInit(0);
  if (rc != CUDA_SUCCESS) {
    HCWARM_THROW(ErrorKind::Unavailable, "cuInit failed ({}): no usable CUDA device", d->error_text(rc));
  }
  return d;
}

}  // namespace

std::string CudaDriver::error_text(CUresult rc) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName != nullptr) cuGetErrorName(rc, &name);
  if (cuGetErrorString != nullptr) cuGetErrorString(rc, &text);
  if (name == nullptr) return fmt::format("CUDA error {}", rc);
  return text != nullptr ? fmt::format("{}: {}", name, text) : std::string(name);
}

std::shared_ptr<const CudaDriver> open_cuda_driver(const std::string& library_path) {
  // The driver library is process-wide state; cache one handle (or the failure) per path.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<CudaDriver>> opened;
  static std::map<std::string, std::string> failed;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened.find(library_path); it != opened.end()) return it->second;
  if (auto it = failed.find(library_path); it != failed.end()) {
    HCWARM_THROW(ErrorKind::Unavailable, "{}", it->second);
  }
  try {
    auto d = load(library_path);
    opened[library_path] = d;
    return d;
  } catch (const Error& e) {
    failed[library_path] = e.message();
    throw;
  }
}

bool stream_capturing(const CudaDriver& d, CUstream stream) {
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  HCWARM_CHECK_CU(d, d.cuStreamIsCapturing(stream, &status));
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool cuda_device_present(const std::string& library_path) {
  try {
    auto d = open_cuda_driver(library_path);
    int n = 0;
    return d->cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0;
  } catch (...) {
    return false;
  }
}

std::string arch_name(int cc_major, int cc_minor) {
  if (cc_major == 9 && cc_minor == 0) return "sm_90a";
  if (cc_major == 10 && cc_minor == 0) return "sm_100a";
  return fmt::format("sm_{}{}", cc_major, cc_minor);
}

std::optional<DeviceInfo> query_device(int ordinal, const std::string& library_path) {
  try {
    auto d = open_cuda_driver(library_path);
    int n = 0;
    if (d->cuDeviceGetCount(&n) != CUDA_SUCCESS || ordinal < 0 || ordinal >= n) return std::nullopt;
    CUdevice dev = 0;
    if (d->cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return std::nullopt;
    DeviceInfo info;
    if (d->cuDeviceGetAttribute(&info.num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
        info.num_sms <= 0) {
      return std::nullopt;
    }
    size_t bytes = 0;
    if (d->cuDeviceTotalMem != nullptr && d->cuDeviceTotalMem(&bytes, dev) == CUDA_SUCCESS) {
      info.total_memory_gb = static_cast<double>(bytes) / 1e9;
    }
    char name[256] = {};
    if (d->cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) info.name = name;
    int major = 0, minor = 0;
    if (d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
        d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS) {
      info.arch = arch_name(major, minor);
    }
    return info;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace hcwarm::cuda
