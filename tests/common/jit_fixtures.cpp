#include "common/jit_fixtures.hpp"

#include "core/error.hpp"

namespace hcwarm::test {

jit::JitOptions memory_only_jit() {
  jit::JitOptions o;
  o.cache_dir = std::nullopt;
  return o;
}

std::unique_ptr<jit::NvrtcCompiler> nvrtc_or_null(std::string* why) {
  try {
    return std::make_unique<jit::NvrtcCompiler>("sm_90a");
  } catch (const Error& e) {
    *why = e.message();
    return nullptr;
  }
}

}  // namespace hcwarm::test
