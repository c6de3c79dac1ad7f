#pragma once
// The CUDA driver API, opened at run time with dlopen (libcuda.so.1, or
// EnvConfig::cuda_library). Nothing links against libcuda: the library builds
// and runs everywhere, and on a machine without a driver `cuda_device_present()`
// is simply false. Only the handful of entry points hcwarm uses are declared.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace hcwarm::cuda {

// Minimal mirrors of the driver's C types (ABI-compatible with cuda.h).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
// cuStreamIsCapturing's answers and cuStreamBeginCapture's modes (values as in cuda.h).
inline constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
inline constexpr int CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
inline constexpr int CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2;
inline constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
inline constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
inline constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
// cuTensorMapEncodeTiled's enums (values as in cuda.h).
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9;
inline constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_SWIZZLE_128B = 3;
inline constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;

// cuLaunchKernelEx's arguments (CUDA 12+), laid out as in cuda.h.
struct CUlaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union alignas(8) Value {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
    int cooperative;
  } value{};
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute must match cuda.h");
struct CUlaunchConfig {
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  CUstream hStream = nullptr;
  CUlaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig must match cuda.h");

struct CudaDriver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;  // optional: null when the driver lacks it
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**) = nullptr;
  // Optional (null on drivers before CUDA 12): launch attributes (programmatic
  // dependent launch, the one-pass kernel's cooperative launch) and occupancy;
  // without them hcwarm launches the plain two-kernel path.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  // Optional (CUDA 12+): a TMA descriptor (the map is 128 opaque bytes, 64-byte
  // aligned; see hcwarm_tensor_map). Without it there is no one-pass kernel.
  CUresult (*cuTensorMapEncodeTiled)(void* map, int dtype, unsigned rank, void* address, const unsigned long long* dims,
                                     const unsigned long long* strides, const unsigned* box,
                                     const unsigned* element_strides, int interleave, int swizzle, int l2_promotion,
                                     int oob_fill) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  // Stream capture and graphs: whether a caller's stream is being captured (a
  // call then must not compile, load, allocate or synchronize), and the graph
  // replay of `bench op`.
  CUresult (*cuStreamIsCapturing)(CUstream, int* status) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream, int mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  std::string path;  // what dlopen opened
  void* handle = nullptr;

  // "CUDA_ERROR_INVALID_VALUE: invalid argument" for a result code.
  std::string error_text(CUresult rc) const;
};

// Opens the driver (once per path per process; the handle stays open) and calls
// cuInit(0). Throws ErrorKind::Unavailable naming the library and the dlerror or
// the cuInit error when there is no usable driver.
std::shared_ptr<const CudaDriver> open_cuda_driver(const std::string& library_path = {});

// What planning needs to know of a GPU, read without creating a context.
struct DeviceInfo {
  int num_sms = 0;
  double total_memory_gb = 0;  // 0 when the driver does not say
  std::string name;
  std::string arch;  // what NVRTC compiles for (arch_name), empty when the driver does not say
};
// The NVRTC architecture of compute capability major.minor: the arch-specific
// sm_90a / sm_100a where the kernels use their instructions, else sm_XY.
std::string arch_name(int cc_major, int cc_minor);
// Device `ordinal`'s info, or nullopt when there is no driver or no such device. Never throws.
std::optional<DeviceInfo> query_device(int ordinal = 0, const std::string& library_path = {});

// Whether work queued on `stream` is being captured into a CUDA graph (an
// invalidated capture counts too). Throws ErrorKind::Cuda when the driver cannot say.
bool stream_capturing(const CudaDriver& driver, CUstream stream);

// True when a driver loads, initializes and reports at least one device. Never
// throws and never crashes on a machine without CUDA.
bool cuda_device_present(const std::string& library_path = {});

}  // namespace hcwarm::cuda

// Checks a driver call: throws hcwarm::Error(ErrorKind::Cuda) with the driver's
// error name, the call's text and file:line.
#define HCWARM_CHECK_CU(driver, expr)                                                        \
  do {                                                                                       \
    const ::hcwarm::cuda::CUresult hcwarm_cu_rc_ = (expr);                                   \
    if (hcwarm_cu_rc_ != ::hcwarm::cuda::CUDA_SUCCESS)                                       \
      HCWARM_THROW(::hcwarm::ErrorKind::Cuda, "{} failed: {}", #expr,                        \
                   (driver).error_text(hcwarm_cu_rc_));                                      \
  } while (0)
