#pragma once
// Where tensors live and kernels run. A Device allocates (and counts what it
// allocated, so warmup's memory peak can be checked), copies, and synchronizes.
// CpuDevice is here; the CUDA device lives in backends/cuda.
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace hcwarm {

enum class DeviceKind { Cpu, Cuda };

struct MemoryStats {
  size_t current_bytes = 0;
  size_t peak_bytes = 0;
  size_t total_allocations = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;

  void* allocate(size_t bytes);
  void deallocate(void* ptr, size_t bytes) noexcept;

  virtual void copy_from_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  virtual void synchronize() = 0;

  MemoryStats memory_stats() const;
  // Starts a new peak measurement from the current usage.
  void reset_peak();

 protected:
  virtual void* do_allocate(size_t bytes) = 0;
  virtual void do_deallocate(void* ptr) noexcept = 0;

 private:
  std::atomic<size_t> current_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> allocations_{0};
};

class CpuDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string name() const override { return "cpu"; }
  void copy_from_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void fill_zero(void* dst, size_t bytes) override;
  void synchronize() override {}

 protected:
  void* do_allocate(size_t bytes) override;
  void do_deallocate(void* ptr) noexcept override;
};

// Owns one allocation on a device; movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& device, size_t bytes) : device_(&device), bytes_(bytes), ptr_(device.allocate(bytes)) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void reset() noexcept {
    if (ptr_ != nullptr) device_->deallocate(ptr_, bytes_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  Device* device() const { return device_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(bytes_, o.bytes_);
    std::swap(ptr_, o.ptr_);
  }
  Device* device_ = nullptr;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// The scratch an op keeps for calls that bring none of their own: it grows to
// the largest size asked (at least min_bytes). Kernels still queued may use the
// old buffer, so it waits for the device before freeing one, on growth and at
// its end. Not thread-safe: the op serializes its calls.
class OwnedWorkspace {
 public:
  explicit OwnedWorkspace(Device& device, size_t min_bytes = 0) : device_(&device), min_bytes_(min_bytes) {}
  ~OwnedWorkspace();
  OwnedWorkspace(const OwnedWorkspace&) = delete;
  OwnedWorkspace& operator=(const OwnedWorkspace&) = delete;

  void ensure(size_t bytes);
  void* get() const { return buffer_.get(); }
  template <class T>
  T* as() const { return buffer_.as<T>(); }
  size_t bytes() const { return buffer_.bytes(); }

 private:
  Device* device_;
  size_t min_bytes_;
  DeviceBuffer buffer_;
};

}  // namespace hcwarm
