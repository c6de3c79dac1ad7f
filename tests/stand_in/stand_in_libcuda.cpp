// A stand-in CUDA driver for tests: a libcuda with one device whose compute
// capability and SM count come from the environment (HCWARM_STAND_IN_CC, e.g.
// "75" for sm_75; HCWARM_STAND_IN_SMS), so that what hcwarm does with a GPU it
// cannot serve (refusal at start-up, `hcwarm info`) is tested without one.
// It answers the queries a device's start-up makes; anything that would touch
// a GPU (allocations, modules, launches) fails with CUDA_ERROR_NOT_SUPPORTED.
#include <cstddef>
#include <cstdlib>
#include <cstring>

extern "C" {

enum { kSuccess = 0, kNotSupported = 801 };
enum { kAttrMaxThreadsPerBlock = 1, kAttrSms = 16, kAttrCcMajor = 75, kAttrCcMinor = 76 };

namespace {
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}
}  // namespace

int cuInit(unsigned flags) { (void)flags; return kSuccess; }
int cuDriverGetVersion(int* v) { *v = 13000; return kSuccess; }
int cuDeviceGetCount(int* n) { *n = 1; return kSuccess; }
int cuDeviceGet(int* dev, int ordinal) { *dev = ordinal; return ordinal == 0 ? kSuccess : 101; }
int cuDeviceGetAttribute(int* value, int attribute, int dev) {
  (void)dev;
  const int cc = env_int("HCWARM_STAND_IN_CC", 75);
  switch (attribute) {
    case kAttrSms: *value = env_int("HCWARM_STAND_IN_SMS", 40); return kSuccess;
    case kAttrCcMajor: *value = cc / 10; return kSuccess;
    case kAttrCcMinor: *value = cc % 10; return kSuccess;
    case kAttrMaxThreadsPerBlock: *value = 1024; return kSuccess;
    default: *value = 0; return kSuccess;
  }
}
int cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  std::strncpy(name, "hcwarm stand-in GPU", static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  return kSuccess;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) { (void)dev; *bytes = size_t{16} << 30; return kSuccess; }

int g_context;
int g_stream;
void* g_current;
int cuDevicePrimaryCtxRetain(void** ctx, int dev) { (void)dev; *ctx = &g_context; return kSuccess; }
int cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return kSuccess; }
int cuCtxSetCurrent(void* ctx) { g_current = ctx; return kSuccess; }
int cuCtxGetCurrent(void** ctx) { *ctx = g_current; return kSuccess; }
int cuStreamCreate(void** stream, unsigned flags) { (void)flags; *stream = &g_stream; return kSuccess; }
int cuStreamDestroy_v2(void* stream) { (void)stream; return kSuccess; }
int cuStreamSynchronize(void* stream) { (void)stream; return kSuccess; }
int cuStreamIsCapturing(void* stream, int* status) { (void)stream; *status = 0; return kSuccess; }

int cuGetErrorName(int rc, const char** name) {
  *name = rc == kSuccess ? "CUDA_SUCCESS" : "CUDA_ERROR_NOT_SUPPORTED";
  return kSuccess;
}
int cuGetErrorString(int rc, const char** text) {
  *text = rc == kSuccess ? "no error" : "not supported by the stand-in driver";
  return kSuccess;
}

// Everything that would need a GPU.
#define HCWARM_STAND_IN_UNSUPPORTED(name) \
  int name(void) { return kNotSupported; }
HCWARM_STAND_IN_UNSUPPORTED(cuMemAlloc_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemFree_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemcpyHtoDAsync_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemcpyDtoHAsync_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemcpyDtoDAsync_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemsetD8_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuMemsetD8Async)
HCWARM_STAND_IN_UNSUPPORTED(cuModuleLoadData)
HCWARM_STAND_IN_UNSUPPORTED(cuModuleUnload)
HCWARM_STAND_IN_UNSUPPORTED(cuModuleGetFunction)
HCWARM_STAND_IN_UNSUPPORTED(cuLaunchKernel)
HCWARM_STAND_IN_UNSUPPORTED(cuStreamBeginCapture_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuStreamEndCapture)
HCWARM_STAND_IN_UNSUPPORTED(cuGraphInstantiateWithFlags)
HCWARM_STAND_IN_UNSUPPORTED(cuGraphLaunch)
HCWARM_STAND_IN_UNSUPPORTED(cuGraphExecDestroy)
HCWARM_STAND_IN_UNSUPPORTED(cuGraphDestroy)
HCWARM_STAND_IN_UNSUPPORTED(cuEventCreate)
HCWARM_STAND_IN_UNSUPPORTED(cuEventDestroy_v2)
HCWARM_STAND_IN_UNSUPPORTED(cuEventRecord)
HCWARM_STAND_IN_UNSUPPORTED(cuEventSynchronize)
HCWARM_STAND_IN_UNSUPPORTED(cuEventElapsedTime_v2)

}  // extern "C"
