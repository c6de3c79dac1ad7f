#include "backends/cuda/cuda_device.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "jit/cubin_set.hpp"
#include "jit/cuda_targets.hpp"

namespace hcwarm::cuda {

CudaDevice::CudaDevice(int ordinal, const EnvConfig& env)
    : CudaDevice(ordinal, env.cuda_library, env.cuda_portable, env.mhc_early_fn, env.mhc_one_wave) {}

CudaDevice::CudaDevice(int ordinal, const std::string& library_path, bool force_portable, bool early_fn, bool one_wave)
    : driver_(open_cuda_driver(library_path)), ordinal_(ordinal), early_fn_(early_fn), one_wave_(one_wave) {
  const CudaDriver& d = *driver_;
  int count = 0;
  HCWARM_CHECK_CU(d, d.cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    HCWARM_THROW(ErrorKind::Unavailable, "CUDA device {} does not exist ({} present)", ordinal, count);
  }
  HCWARM_CHECK_CU(d, d.cuDeviceGet(&dev_, ordinal));
  HCWARM_CHECK_CU(d, d.cuDeviceGetAttribute(&num_sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_));
  HCWARM_CHECK_CU(d, d.cuDeviceGetAttribute(&cc_major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_));
  HCWARM_CHECK_CU(d, d.cuDeviceGetAttribute(&cc_minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_));
  int l2 = 0;
  HCWARM_CHECK_CU(d, d.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_));
  l2_bytes_ = l2;
  portable_ = force_portable || jit::cuda_portable_target(cc_major_);
  std::array<char, 256> buf{};
  HCWARM_CHECK_CU(d, d.cuDeviceGetName(buf.data(), static_cast<int>(buf.size()), dev_));
  name_ = buf.data();
  HCWARM_CHECK_CU(d, d.cuDevicePrimaryCtxRetain(&ctx_, dev_));
  // The stream belongs to this context; the caller's thread keeps its own current one.
  const ScopedContext scoped(*this);
  HCWARM_CHECK_CU(d, d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
}

CudaDevice::~CudaDevice() {
  const CudaDriver& d = *driver_;
  d.cuCtxSetCurrent(ctx_);
  if (stream_ != nullptr) {
    d.cuStreamSynchronize(stream_);
    d.cuStreamDestroy(stream_);
  }
  if (ctx_ != nullptr) d.cuDevicePrimaryCtxRelease(dev_);
}

std::string CudaDevice::arch() const { return arch_name(cc_major_, cc_minor_); }

ScopedContext::ScopedContext(const CudaDevice& device) : driver_(device.driver()) {
  HCWARM_CHECK_CU(driver_, driver_.cuCtxGetCurrent(&previous_));
  if (previous_ != device.context()) {
    HCWARM_CHECK_CU(driver_, driver_.cuCtxSetCurrent(device.context()));
    restore_ = true;
  }
}

ScopedContext::~ScopedContext() {
  if (restore_) driver_.cuCtxSetCurrent(previous_);
}

void CudaDevice::make_current() const { HCWARM_CHECK_CU(*driver_, driver_->cuCtxSetCurrent(ctx_)); }

void CudaDevice::copy_from_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  // Ordered on the stream after queued kernels; returns when the data is on the device.
  HCWARM_CHECK_CU(*driver_, driver_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream_));
  synchronize();
}

void CudaDevice::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  HCWARM_CHECK_CU(*driver_, driver_->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream_));
  synchronize();
}

void CudaDevice::fill_zero(void* dst, size_t bytes) { fill_bytes(dst, 0, bytes); }

void CudaDevice::fill_bytes(void* dst, unsigned char value, size_t bytes) {
  if (bytes == 0) return;
  make_current();
  HCWARM_CHECK_CU(*driver_, driver_->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), value, bytes, stream_));
}

void CudaDevice::synchronize() {
  make_current();
  HCWARM_CHECK_CU(*driver_, driver_->cuStreamSynchronize(stream_));
}

void* CudaDevice::do_allocate(size_t bytes) {
  make_current();
  CUdeviceptr p = 0;
  HCWARM_CHECK_CU(*driver_, driver_->cuMemAlloc(&p, bytes));
  return reinterpret_cast<void*>(p);
}

void CudaDevice::do_deallocate(void* ptr) noexcept {
  driver_->cuCtxSetCurrent(ctx_);
  // cuMemFree synchronizes with work using the allocation.
  driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
}

CudaModule::CudaModule(std::shared_ptr<const CudaDriver> driver, std::string key, std::span<const std::byte> image)
    : driver_(std::move(driver)), key_(std::move(key)) {
  const auto set = jit::unpack_cubin_set(image);
  for (const auto part : set ? *set : std::vector<std::span<const std::byte>>{image}) {
    // cuModuleLoadData reads an ELF image in place: a set's images get an
    // 8-byte-aligned copy of their own.
    std::vector<uint64_t> aligned(set ? (part.size() + 7) / 8 : 0);
    if (set) std::memcpy(aligned.data(), part.data(), part.size());
    CUmodule m = nullptr;
    const CUresult rc = driver_->cuModuleLoadData(&m, set ? static_cast<const void*>(aligned.data()) : part.data());
    if (rc != CUDA_SUCCESS) {
      unload();
      HCWARM_CHECK_CU(*driver_, rc);
    }
    modules_.push_back(m);
  }
}

void CudaModule::unload() noexcept {
  for (CUmodule m : modules_) driver_->cuModuleUnload(m);
  modules_.clear();
}

CudaModule::~CudaModule() { unload(); }

void* CudaModule::function(std::string_view name) const {
  const std::string n(name);
  CUresult rc = CUDA_SUCCESS;
  for (CUmodule m : modules_) {  // the images of a cubin set hold different kernels
    CUfunction f = nullptr;
    rc = driver_->cuModuleGetFunction(&f, m, n.c_str());
    if (rc == CUDA_SUCCESS && f != nullptr) return reinterpret_cast<void*>(f);
  }
  HCWARM_THROW(ErrorKind::Internal, "kernel {} not found in CUDA module {}: {}", n, key_, driver_->error_text(rc));
}

std::shared_ptr<jit::LoadedModule> CudaModuleLoader::load(const std::string& key, std::span<const std::byte> cubin) {
  device_->make_current();
  return std::make_shared<CudaModule>(device_->driver_ptr(), key, cubin);
}

}  // namespace hcwarm::cuda
