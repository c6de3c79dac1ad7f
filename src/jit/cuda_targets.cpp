#include "jit/cuda_targets.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace hcwarm::jit {
namespace {

// sm_80 and newer: mma.sync, cp.async and bf16 arithmetic, which every kernel
// family's portable form needs. Compiling for a target below refuses in NVRTC itself.
constexpr int kOldestMajor = 8;
// From sm_90: thread-block clusters (the head), TMA and mbarriers (the one-pass
// kernel) and programmatic dependent launch (griddepcontrol).
constexpr int kHopperMajor = 9;

constexpr GpuArchRow kMatrix[] = {
    {12, "sm_120, sm_121", "RTX PRO 6000 Blackwell, GeForce RTX 50, DGX Spark (GB10)", GpuSupport::CompilesOnly,
     "99 KB of shared memory per block: hc_pre runs the split-K pair at every token count (no one-pass kernel)"},
    {11, "sm_110", "Jetson Thor", GpuSupport::CompilesOnly, "no one-pass kernel: the plan admits it on cc 9 and 10 only"},
    {10, "sm_100a, sm_103a", "B200, GB200, B300, GB300", GpuSupport::CompilesOnly,
     "the one-pass kernel where there are at least 128 SMs, as on Hopper"},
    {9, "sm_90a", "H100, H200, H800, H20, GH200", GpuSupport::Ran,
     "GPU suite and benchmarks on an H200 and an H100 SXM (132 SMs); below 128 SMs (H100 PCIe, H20) no "
     "one-pass kernel"},
    {8, "sm_80, sm_86, sm_89", "A100, A10, A40, L4, L40S", GpuSupport::CompilesOnly,
     "the portable forms (split-K pair at every T, cluster-free head, no PDL); those forms ran the GPU "
     "suite on an H200 and an H100 under HCWARM_CUDA_PORTABLE=1, not on such a GPU"},
};

}  // namespace

const char* to_string(GpuSupport s) {
  switch (s) {
    case GpuSupport::Ran: return "ran";
    case GpuSupport::CompilesOnly: return "compiles, not run";
    case GpuSupport::Refused: return "refused";
  }
  return "?";
}

std::span<const GpuArchRow> gpu_matrix() { return kMatrix; }

std::optional<std::pair<int, int>> parse_cuda_arch(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  std::string_view digits = arch.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return std::pair{v / 10, v % 10};
}

GpuSupport gpu_support(int cc_major) {
  for (const auto& row : kMatrix) {
    if (row.cc_major == cc_major) return row.support;
  }
  return cc_major < kOldestMajor ? GpuSupport::Refused : GpuSupport::CompilesOnly;
}

std::string describe_gpu_support(int cc_major, int cc_minor) {
  for (const auto& row : kMatrix) {
    if (row.cc_major == cc_major) {
      return fmt::format("sm_{}{}: {} ({}: {})", cc_major, cc_minor, to_string(row.support), row.gpus, row.note);
    }
  }
  if (cc_major < kOldestMajor) {
    return fmt::format("sm_{}{}: refused (the kernels need sm_{}0 or newer: mma.sync, cp.async, bf16)", cc_major,
                       cc_minor, kOldestMajor);
  }
  return fmt::format("sm_{}{}: compiles, not run (newer than every architecture hcwarm names)", cc_major, cc_minor);
}

bool cuda_portable_target(int cc_major) { return cc_major < kHopperMajor; }

bool cuda_large_smem_target(int cc_major) { return cc_major == 9 || cc_major == 10; }

bool cuda_large_smem_target(std::string_view arch) {
  const auto cc = parse_cuda_arch(arch);
  return cc.has_value() && cuda_large_smem_target(cc->first);
}

bool cuda_portable_target(std::string_view arch) {
  const auto cc = parse_cuda_arch(arch);
  return cc.has_value() && cuda_portable_target(cc->first);
}

void require_supported_cuda_arch(std::string_view arch, std::string_view what) {
  const auto cc = parse_cuda_arch(arch);
  HCWARM_CHECK_ARG(cc.has_value(), "{} {}: not a CUDA architecture such as sm_90a", what, arch);
  if (gpu_support(cc->first) == GpuSupport::Refused) {
    HCWARM_THROW(ErrorKind::Unavailable,
                 "{} {} is not supported: hcwarm's CUDA kernels need sm_{}0 or newer (mma.sync, cp.async, bf16); "
                 "use the cpu backend there, or an Ampere, Ada, Hopper or Blackwell GPU",
                 what, arch, kOldestMajor);
  }
}

}  // namespace hcwarm::jit
