#pragma once
// The CPU side of mHC pre: the host entry points (JIT-compiled per split bucket,
// or the generic ones compiled into the library) run over a ThreadPool.
#include <string>

#include "core/thread_pool.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::cpu {

// Host (.so) entry points: int fn(const hcwarm_mhc_pre_params*, long long begin, long long end).
inline constexpr const char* kCpuPartialSymbol = "hcwarm_mhc_pre_cpu_partial";
inline constexpr const char* kCpuFinishSymbol = "hcwarm_mhc_pre_cpu_finish";
inline constexpr const char* kCpuAbiSymbol = "hcwarm_mhc_pre_cpu_abi";

// The translation unit of one specialization: a few lines instantiating the
// templates of kernels/cpu/mhc_pre.hpp and exporting them under the names above.
// input (hcwarm_mhc::kInputResidual, kInputEmbed or kInputPost; not kInputRuntime, else InvalidArgument):
// what the kernels read (kernels/common/mhc_params.hpp).
std::string mhc_pre_cpu_source(int num_splits, int hc, int hidden, bool fused_norm,
                               int input = hcwarm_mhc::kInputResidual);

using MhcPreHostFn = int (*)(const hcwarm_mhc_pre_params*, long long, long long);
struct MhcPreHostKernels {
  MhcPreHostFn partial = nullptr;
  MhcPreHostFn finish = nullptr;
};

// The generic kernels (split count, hidden size and input read at run time), compiled
// into libhcwarm. hc_mult 4 only; other values throw ErrorKind::Unavailable.
MhcPreHostKernels mhc_pre_generic_host_kernels(int hc_mult, bool fused_norm);

// Launcher: both stages over the pool. Returns hcwarm_mhc::kOk or the first
// error code an entry point returned (the binding layer turns it into an exception).
// stages: bit 0 = partial, bit 1 = finish.
int launch_mhc_pre_host(const MhcPreHostKernels& k, const hcwarm_mhc_pre_params& p, ThreadPool& pool,
                        int stages = 3);

}  // namespace hcwarm::cpu
