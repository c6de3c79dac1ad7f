#include "core/device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.hpp"

namespace hcwarm {

void* Device::allocate(size_t bytes) {
  void* p = do_allocate(bytes == 0 ? 1 : bytes);
  const size_t now = current_.fetch_add(bytes) + bytes;
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  allocations_.fetch_add(1);
  return p;
}

void Device::deallocate(void* ptr, size_t bytes) noexcept {
  if (ptr == nullptr) return;
  do_deallocate(ptr);
  current_.fetch_sub(bytes);
}

MemoryStats Device::memory_stats() const {
  return MemoryStats{current_.load(), peak_.load(), allocations_.load()};
}

void Device::reset_peak() { peak_.store(current_.load()); }

void CpuDevice::copy_from_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::copy_to_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::fill_zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

OwnedWorkspace::~OwnedWorkspace() {
  if (buffer_.get() == nullptr) return;
  try {
    device_->synchronize();
  } catch (...) {
  }
}

void OwnedWorkspace::ensure(size_t bytes) {
  if (buffer_.get() != nullptr && buffer_.bytes() >= bytes) return;
  if (buffer_.get() != nullptr) device_->synchronize();
  buffer_.reset();
  buffer_ = DeviceBuffer(*device_, std::max(bytes, min_bytes_));
}

void* CpuDevice::do_allocate(size_t bytes) {
  // 64-byte alignment: whole cache lines and aligned vector loads in the kernels.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) HCWARM_THROW(ErrorKind::System, "out of host memory allocating {} bytes", bytes);
  return p;
}

void CpuDevice::do_deallocate(void* ptr) noexcept { std::free(ptr); }

}  // namespace hcwarm
