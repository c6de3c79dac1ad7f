#pragma once
// A compiled, loaded kernel module. Host modules return function pointers
// (dlsym); CUDA modules return CUfunction handles (cuModuleGetFunction).
#include <string>
#include <string_view>

namespace hcwarm::jit {

class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  // Throws ErrorKind::Internal naming the symbol when it is absent.
  virtual void* function(std::string_view name) const = 0;
  virtual const std::string& key() const = 0;  // SHA-256 hex of the kernel key
};

}  // namespace hcwarm::jit
