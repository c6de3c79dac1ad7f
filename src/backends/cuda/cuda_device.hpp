#pragma once
// A CUDA GPU as an hcwarm::Device: the primary context of one ordinal, one
// non-blocking stream on which every copy and kernel of hcwarm is ordered, and
// plain cuMemAlloc allocations. Also the CUDA module loader for the JIT runtime
// (cuModuleLoadData / cuModuleGetFunction).
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda/cuda_driver.hpp"
#include "core/device.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "jit/loaded_module.hpp"

namespace hcwarm::cuda {

class CudaDevice final : public Device {
 public:
  // Throws ErrorKind::Unavailable when there is no driver or no such device.
  // force_portable: the portable kernel forms on this GPU too (HCWARM_CUDA_PORTABLE).
  // early_fn: hc_pre's partial may read fn before the kernel before it completes (HCWARM_MHC_EARLY_FN).
  // one_wave: hc_pre's one-wave pair where its plan admits it (HCWARM_MHC_ONE_WAVE).
  explicit CudaDevice(int ordinal = 0, const std::string& library_path = {}, bool force_portable = false,
                      bool early_fn = false, bool one_wave = true);
  // Device `ordinal` as the environment configures it: env's driver library
  // (HCWARM_CUDA_LIBRARY), portable forms (HCWARM_CUDA_PORTABLE), early fn (HCWARM_MHC_EARLY_FN)
  // and the one-wave pair (HCWARM_MHC_ONE_WAVE).
  CudaDevice(int ordinal, const EnvConfig& env);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string name() const override { return name_; }
  void copy_from_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void fill_zero(void* dst, size_t bytes) override;
  void fill_bytes(void* dst, unsigned char value, size_t bytes);  // async on the stream
  void synchronize() override;

  const CudaDriver& driver() const { return *driver_; }
  std::shared_ptr<const CudaDriver> driver_ptr() const { return driver_; }
  CUstream stream() const { return stream_; }
  int ordinal() const { return ordinal_; }
  int num_sms() const { return num_sms_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  // L2 cache bytes (sizes how far the one-pass kernel streams ahead: hcwarm_mhc::one_pass_window).
  long long l2_bytes() const { return l2_bytes_; }
  // NVRTC target of this device: "sm_90a" on Hopper (9.0), "sm_100a" on 10.0, else "sm_XY".
  std::string arch() const;
  // Whether the kernels run in their portable forms here (jit::cuda_portable_target:
  // below sm_90, or forced): no one-pass kernel, no clusters, no programmatic dependent launch.
  bool portable() const { return portable_; }
  // Whether hc_pre's partial kernel, a programmatic dependent of whatever kernel precedes it on
  // the stream, loads its first fn chunk before griddepcontrol.wait (fn must then not be written
  // by that kernel); never in the portable forms, which launch no programmatic dependents.
  bool early_fn() const { return early_fn_ && !portable_; }
  // Whether hc_pre's plans on this device may take the one-wave pair (hcwarm_mhc::cuda_one_wave:
  // hidden 4096, 129-512 tokens); never in the portable forms, whose finish cannot start early.
  bool one_wave() const { return one_wave_ && !portable_; }
  // Makes this device's context current on the calling thread.
  void make_current() const;
  CUcontext context() const { return ctx_; }

 protected:
  void* do_allocate(size_t bytes) override;
  void do_deallocate(void* ptr) noexcept override;

 private:
  std::shared_ptr<const CudaDriver> driver_;
  int ordinal_ = 0;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  int num_sms_ = 0;
  int cc_major_ = 0;
  int cc_minor_ = 0;
  long long l2_bytes_ = 0;
  bool portable_ = false;
  bool early_fn_ = false;
  bool one_wave_ = true;
  std::string name_;
};

// Makes a device's context current on this thread for a scope, then restores
// the thread's previous one: a call on cuda:1 leaves the caller (PyTorch's
// current device, say) where it was.
class ScopedContext {
 public:
  explicit ScopedContext(const CudaDevice& device);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const CudaDriver& driver_;
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

// A loaded cubin/fatbin/PTX image, or each image of a cubin set
// (jit/cubin_set.hpp); function() returns a CUfunction.
class CudaModule final : public jit::LoadedModule {
 public:
  CudaModule(std::shared_ptr<const CudaDriver> driver, std::string key, std::span<const std::byte> image);
  ~CudaModule() override;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  void* function(std::string_view name) const override;
  const std::string& key() const override { return key_; }

 private:
  void unload() noexcept;
  std::shared_ptr<const CudaDriver> driver_;
  std::string key_;
  std::vector<CUmodule> modules_;
};

// Loads JIT outputs (cubins) into the context of one device:
//   jit.set_module_loader(jit::TargetKind::Cuda, std::make_shared<CudaModuleLoader>(device));
// The device must outlive the loader.
class CudaModuleLoader final : public jit::ModuleLoader {
 public:
  explicit CudaModuleLoader(const CudaDevice& device) : device_(&device) {}
  std::shared_ptr<jit::LoadedModule> load(const std::string& key, std::span<const std::byte> cubin) override;

 private:
  const CudaDevice* device_;
};

}  // namespace hcwarm::cuda
