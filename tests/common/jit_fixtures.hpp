#pragma once
// JIT pieces many tests share: a runtime with no disk cache, and NVRTC where
// this machine has it (a test without one skips, naming why).
#include <memory>
#include <string>
#include <sys/types.h>

#include "jit/compiler.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::test {

// JitOptions of a runtime that keeps kernels in memory only.
jit::JitOptions memory_only_jit();

// An sm_90a NVRTC compiler, or null with *why saying what is missing.
std::unique_ptr<jit::NvrtcCompiler> nvrtc_or_null(std::string* why);

// The conventional uid of "nobody": an owner other than this process's, for the cache's trust checks.
inline constexpr uid_t kNobodyUid = 65534;

}  // namespace hcwarm::test
