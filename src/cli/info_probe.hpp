#pragma once
// What `hcwarm info` finds on this machine: the CUDA device, NVRTC, the host
// compiler and the kernel cache. Each probe never throws: what is missing
// comes back with the reason.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/env_config.hpp"

namespace hcwarm::cli {

struct GpuFacts {
  std::string unavailable;  // why there is no GPU ("" when there is one)
  std::string name, arch;   // "NVIDIA H200", "sm_90a"
  int num_sms = 0, cc_major = 0, cc_minor = 0, device_count = 0;
  double memory_gb = 0;     // 0 when the driver does not say
  bool portable = false;    // the kernels' portable forms run here (CudaDevice::portable)
  std::string driver_version, driver_library;  // "13.0", what dlopen opened
};
GpuFacts probe_gpu(const EnvConfig& env);

struct CompilerFacts {
  std::string error;     // why it cannot be used ("" when it can)
  std::string location;  // NVRTC: the library opened; host: the command
  std::string identity;  // what the cache keys and namespaces hold
  std::string target;    // NVRTC: the architecture probed for; host: the ISA level
  // NVRTC only: nvrtcVersion's "13.0", and the candidates its search tried before
  // the one it took, each with why it was skipped (on failure the error lists them).
  std::string version;
  std::vector<std::pair<std::string, std::string>> skipped;  // candidate, reason
};
CompilerFacts probe_nvrtc(const EnvConfig& env, const std::string& arch);
CompilerFacts probe_host_compiler(const EnvConfig& env);

struct CacheNamespace {
  std::string version, ns;  // "0.1.0", "host-12.2.0-3fa9c1d2e4b5"
  int entries = 0;
  uint64_t bytes = 0;
  std::string compiler;     // "host" / "nvrtc" when this machine's compiler built it, else ""
};
struct CacheFacts {
  std::optional<std::filesystem::path> dir;  // nullopt: disk cache disabled
  bool exists = false, usable = false, writable = false;
  std::string reason;  // why not usable or not writable
  std::vector<CacheNamespace> namespaces;
};
// host / nvrtc: this machine's compilers, to tell which namespaces they built.
CacheFacts probe_cache(const std::optional<std::filesystem::path>& dir, const EnvConfig& env,
                       const CompilerFacts& host, const CompilerFacts& nvrtc);

}  // namespace hcwarm::cli
